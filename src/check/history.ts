// The shape of a client history, shared by the simulator (which records it) and the checkers
// (which judge it). One record per operation, Porcupine-style: a call time and a return time on one
// monotonic clock, closed intervals (equal times count as concurrent).

/** A value of a key; null means the key is absent (never written, or deleted). */
export type KvValue = string | null;

export type KvInput =
  | { readonly type: 'get'; readonly key: string }
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | { readonly type: 'append'; readonly key: string; readonly value: string }
  | { readonly type: 'delete'; readonly key: string }
  /** Compare-and-set: succeeds iff the current value equals `expected` (null: absent). */
  | {
      readonly type: 'cas';
      readonly key: string;
      readonly expected: KvValue;
      readonly value: string;
    };

export type KvOutput =
  | { readonly type: 'get'; readonly value: KvValue }
  | { readonly type: 'put' }
  | { readonly type: 'append' }
  | { readonly type: 'delete' }
  | { readonly type: 'cas'; readonly ok: boolean };

export interface KvOperation {
  /** The logical client; each client has at most one operation outstanding. */
  readonly clientId: number;
  readonly input: KvInput;
  /** undefined when the outcome is unknown (timeout, crash): it may or may not have taken effect. */
  readonly output: KvOutput | undefined;
  /** Invocation time. */
  readonly call: number;
  /** Return time; Infinity when the outcome is unknown. */
  readonly return: number;
}
