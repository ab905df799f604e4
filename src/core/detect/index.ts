// Failure detection, pure: time is passed in, never read.
//
// - heartbeat detectors: fixed timeout and φ accrual (normal, Akka's logistic, Cassandra's
//   exponential), behind one HeartbeatDetector interface;
// - the suspicion-level API (level.ts) callers bind actions to;
// - the SWIM + Lifeguard protocol state machine with tenure's additions (swim/).
//
// The evaluation that compares them with baselines is an application on top (src/detect-eval).

export * from './phi-formula.js';
export * from './interval-window.js';
export * from './heartbeat-detector.js';
export * from './fixed-timeout.js';
export * from './phi-accrual.js';
export * from './level.js';
export * from './swim/config.js';
export * from './swim/messages.js';
export * from './swim/awareness.js';
export * from './swim/suspicion.js';
export * from './swim/broadcast-queue.js';
export * from './swim/probe-order.js';
export * from './swim/flap-damper.js';
export * from './swim/swim.js';
