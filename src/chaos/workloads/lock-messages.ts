// What a lock client (lock-client.ts, a child process of the chaos run) and the locks workload
// (locks.ts) say to each other over the child's IPC channel. Times are the child's
// process.hrtime.bigint() in milliseconds: CLOCK_MONOTONIC, one clock for every process on the
// machine (nodejs.org/api/process.html#processhrtimebigint), which the parent turns into the run's
// clock (performance.now()) with one offset it measures itself.

/** How a client takes its locks: the SDK's Lock recipe, or the etcd Lock service (v3lockpb). */
export type LockClientMode = 'sdk' | 'service';

/** The child's configuration, passed as JSON in its one argument. */
export interface LockClientConfig {
  readonly client: number;
  readonly mode: LockClientMode;
  readonly endpoints: readonly string[];
  readonly locks: readonly string[];
  readonly ttlSeconds: number;
  readonly seed: number;
}

/** Child → parent. */
export type ClientMessage =
  /** A grant or keepalive the client got an answer to (lease-contract.ts LeaseRenewal). */
  | {
      readonly type: 'renewal';
      readonly lease: string;
      readonly sentMs: number;
      readonly answeredMs: number;
      readonly ttlSeconds: number;
    }
  /** A hold began: the grant reached the client and its token is known. */
  | {
      readonly type: 'hold';
      readonly hold: number;
      readonly lock: string;
      readonly lease: string;
      readonly token: string;
      readonly requestedMs: number;
      readonly acquiredMs: number;
    }
  /** The hold ended: Unlock/release sent, or the holder stopped acting. */
  | { readonly type: 'released'; readonly hold: number; readonly releasedMs: number }
  /** A write to the fenced resource; the parent answers with 'written'. */
  | {
      readonly type: 'write';
      readonly seq: number;
      readonly hold: number;
      readonly lock: string;
      readonly token: string;
      /** When the holder last found itself holding, before the work that led to this write. */
      readonly checkedMs: number;
    }
  /** Something worth a line in the timeline (a grant lost before its token was read, …). */
  | { readonly type: 'note'; readonly text: string }
  /** Every hold released and the client closed: the child exits next. */
  | { readonly type: 'done' };

/** Parent → child. */
export type ParentMessage =
  | { readonly type: 'written'; readonly seq: number; readonly accepted: boolean }
  | { readonly type: 'stop' };

/** CLOCK_MONOTONIC in ms, as every process reads it. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000n) / 1_000;
}
