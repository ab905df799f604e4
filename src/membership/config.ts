// The membership runtime's configuration: one typed struct, each field with its meaning, unit,
// default and trade-off, the `lan`, `wan` and `local` presets, and validation that names the bad
// field. Protocol timing lives in `swim` (src/core/detect/swim/config.ts).

import {
  DEFAULT_LADDER,
  TENURE_LAN,
  TENURE_LOCAL,
  TENURE_WAN,
  validateSwimConfig,
  type LevelThreshold,
  type SwimConfig,
} from '../core/detect/index.js';
import { parseAddress } from './codec.js';
import { MembershipError } from './errors.js';

export type LevelAction = 'stopRouting' | 'failover' | 'remove';

export interface MembershipConfig {
  /** This member's unique name. A restart keeps the name and takes a new epoch. Required. */
  readonly name: string;
  /** Address to bind UDP and TCP on. Default 127.0.0.1; tests must stay on loopback. */
  readonly host: string;
  /** Port for both UDP and TCP; 0 picks a free one. Default 0. */
  readonly port: number;
  /** "host:port" of members to join through; empty: start a new cluster. Default []. */
  readonly seeds: readonly string[];
  /**
   * This life of the process. A restart must use a higher one so it outranks the old life at once
   * (memberlist#311). Default: the wall clock in ms at start — only compared, never used as time.
   */
  readonly epoch: number | null;
  /** Protocol timing and switches. Default: the `lan` preset's. */
  readonly swim: SwimConfig;
  /**
   * Actions bound to suspicion levels (φ scale): stop routing at 3, fail over at 8, remove only on
   * `dead` (level ∞). Emitted as `level` events.
   */
  readonly ladder: readonly LevelThreshold<LevelAction>[];
  /** How often levels are re-evaluated, ms. Default 250. Lower: faster `level` events, more CPU. */
  readonly levelIntervalMs: number;
  /** Events buffered per async iterator before the oldest are dropped. Default 10 000. */
  readonly eventQueueMax: number;
  /** How long `leave()` lingers so the `left` news spreads, ms. Default 1000. */
  readonly leaveLingerMs: number;
}

const base = {
  host: '127.0.0.1',
  port: 0,
  seeds: [],
  epoch: null,
  ladder: DEFAULT_LADDER,
  levelIntervalMs: 250,
  eventQueueMax: 10_000,
  leaveLingerMs: 1000,
} as const;

/** One data centre: probes every 2 s, a watch heartbeat every 1 s, P* = 3 s. */
export const lan: Omit<MembershipConfig, 'name'> = { ...base, swim: TENURE_LAN };
/** Across data centres: memberlist's WAN timing, P* = 10 s. */
export const wan: Omit<MembershipConfig, 'name'> = {
  ...base,
  swim: TENURE_WAN,
  leaveLingerMs: 3000,
};
/** One host (tests, development): suspicion within ~1.3 s, P* = 3 s. */
export const local: Omit<MembershipConfig, 'name'> = {
  ...base,
  swim: TENURE_LOCAL,
  leaveLingerMs: 500,
};

export const presets = { lan, wan, local } as const;

export type MembershipOptions = Partial<Omit<MembershipConfig, 'name'>> & {
  readonly name: string;
  readonly preset?: keyof typeof presets;
};

/** Fill a config from a preset and validate it; throws MembershipError('BAD_CONFIG'). */
export function resolveConfig(o: MembershipOptions): MembershipConfig {
  const preset = presets[o.preset ?? 'lan'];
  const { preset: _p, ...rest } = o;
  const c: MembershipConfig = { ...preset, ...rest };
  const bad = (field: string, why: string): never => {
    throw new MembershipError('BAD_CONFIG', `membership config: ${field}: ${why}`);
  };
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(c.name)) bad('name', 'letters, digits, . _ - (1–128)');
  if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535)
    bad('port', 'an integer in [0, 65535]');
  for (const s of c.seeds) parseAddress(s);
  if (c.epoch !== null && !(Number.isSafeInteger(c.epoch) && c.epoch >= 0))
    bad('epoch', 'a safe integer ≥ 0');
  if (!(c.levelIntervalMs >= 10)) bad('levelIntervalMs', '≥ 10');
  if (!(Number.isInteger(c.eventQueueMax) && c.eventQueueMax >= 1))
    bad('eventQueueMax', 'an integer ≥ 1');
  if (!(c.leaveLingerMs >= 0)) bad('leaveLingerMs', '≥ 0');
  try {
    validateSwimConfig(c.swim);
  } catch (cause) {
    throw new MembershipError(
      'BAD_CONFIG',
      `membership config: swim: ${(cause as Error).message}`,
      { cause },
    );
  }
  return c;
}
