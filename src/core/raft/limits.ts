// Every queue, batch and window of the core has a named maximum with its reason.

/** Entries per append message: bounds message size and the work one follower step does. */
export const ENTRIES_PER_APPEND_MAX = 64;
/**
 * Entry bytes per append message (etcd's MaxSizePerMsg, which etcdserver sets to 1 MiB): keeps a
 * message far below the peer frame limit whatever the entries' sizes; an entry larger than this
 * still goes, alone.
 */
export const APPEND_BYTES_MAX = 1024 * 1024;
/** Append messages in flight per follower in replicate state: bounds memory and retransmission. */
export const INFLIGHT_APPENDS_MAX = 32;
/** Committed entries handed out in one Ready: keeps one apply batch short. */
export const COMMITTED_PER_READY_MAX = 512;
/** Pending ReadIndex requests on a leader: beyond this, reads are refused rather than queued. */
export const PENDING_READS_MAX = 4096;
/**
 * Size of one proposal's data in bytes. The server admits requests of up to 1.5 MiB (etcd's
 * --max-request-bytes); a command in the log is tagged JSON, which writes bytes as hex, so an
 * admitted request may take about twice that.
 */
export const PROPOSAL_BYTES_MAX = 4 * 1024 * 1024;
/** Uncommitted entries a leader accepts before refusing proposals (back-pressure). */
export const UNCOMMITTED_ENTRIES_MAX = 8192;
