// The messages between a demo worker (a child process, worker.ts) and the demo process that hosts
// the store and directs the scenario (split-brain.ts). Node's IPC channel carries JSON, so tokens
// travel as decimal strings.

/** What a worker could have known before a write, had it looked (it does not: it is a zombie). */
export interface Observed {
  /** `grant.signal.aborted`, read just before the write. */
  readonly signalAborted: boolean;
  /** `session.valid()`, read just before the write. */
  readonly sessionValid: boolean;
}

/** Worker → host. */
export type WorkerMessage =
  /** The worker's lock key is in the queue, behind `predecessor` if there is one. */
  | { readonly type: 'queued'; readonly token: string; readonly predecessor?: string }
  | { readonly type: 'granted'; readonly token: string; readonly ttlSeconds: number }
  | {
      readonly type: 'write';
      readonly part: number;
      readonly token: string;
      readonly observed: Observed;
    }
  | { readonly type: 'wrote-all' }
  | { readonly type: 'failed'; readonly message: string };

/** The store's answer to one write. */
export type WriteReply =
  | { readonly type: 'accepted' }
  | {
      readonly type: 'rejected';
      readonly code: string;
      readonly presented: string;
      readonly current: string;
    };

/** Host → worker. */
export type HostMessage =
  | { readonly type: 'write-result'; readonly part: number; readonly reply: WriteReply }
  /** Release the lock, close the session and exit. */
  | { readonly type: 'release' };

/** How the host starts a worker (passed as JSON in argv[2]). */
export interface WorkerConfig {
  readonly name: string;
  readonly endpoints: readonly string[];
  readonly lockName: string;
  readonly ttlSeconds: number;
  /** How many parts the worker's record has; it writes them in order, one message each. */
  readonly parts: number;
  /** Bound on the acquire, in ms. */
  readonly acquireTimeoutMs: number;
}
