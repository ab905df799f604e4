export * from './types.js';
export * from './raft.js';
export * from './conf.js';
export * from './quorum.js';
export * from './limits.js';
export { RaftLog } from './log.js';
export * from './describe.js';
