export * from './schedule.js';
export * from './run.js';
export * from './invariants.js';
