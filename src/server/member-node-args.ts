// Node options a tenure member runs with. Every launcher in the repository (`tenure up` and
// `npm start`, `tenure bench`, the demo and the test clusters) passes them; start members
// yourself as `node --max-semi-space-size=2 bin/tenure start ...` to get the same.
//
// --max-semi-space-size=2 (MiB; V8's default on 64-bit is 16): a member's young objects are
// requests and log entries that live for milliseconds, and what survives (the store, the log)
// moves to the old generation anyway. The smaller nursery lowered the peak RSS of each member of
// a 3-member cluster after 24,000 puts from 126-145 MiB to 106-112 MiB at the same CPU per put
// (285 against 287 µs at 64 in flight; /tmp probe on the project's 2-core machine, 2026-11-30).
export const MEMBER_NODE_ARGS: readonly string[] = ['--max-semi-space-size=2'];
