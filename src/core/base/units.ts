// Branded numbers keep terms, log indexes, revisions and durations from mixing.
// They cost nothing at run time: a brand exists only for the type checker.

declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

/** A Raft term (Raft §5.1). Terms only grow. */
export type Term = Brand<number, 'Term'>;
/** A position in the replicated log, 1-based; 0 means "before the first entry". */
export type LogIndex = Brand<number, 'LogIndex'>;
/** An etcd MVCC revision. */
export type Revision = Brand<number, 'Revision'>;
/** A count of logical clock ticks. */
export type Ticks = Brand<number, 'Ticks'>;
/** A duration or instant in milliseconds of a monotonic clock. */
export type Millis = Brand<number, 'Millis'>;
/** A node's identity in a Raft group; never 0. */
export type NodeId = Brand<number, 'NodeId'>;

export const term = (n: number): Term => n as Term;
export const logIndex = (n: number): LogIndex => n as LogIndex;
export const revision = (n: number): Revision => n as Revision;
export const ticks = (n: number): Ticks => n as Ticks;
export const millis = (n: number): Millis => n as Millis;
export const nodeId = (n: number): NodeId => n as NodeId;

/** The absence of a node (no leader, no vote). */
export const NONE = 0 as NodeId;
