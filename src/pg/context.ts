// What a backend object shares with the locks and elections it makes.
import type { Db } from './db.js';
import type { Listener } from './listener.js';

export interface PgContext {
  readonly db: Db;
  readonly listener: Listener;
  /** Default re-check interval of a waiter, in ms. */
  readonly pollIntervalMs: number;
  /** Aborts when the backend is closed. */
  readonly closing: AbortSignal;
}
