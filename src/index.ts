// The package's root entry (`import … from 'tenure'`): the SDK, the same surface as
// `tenure/client`. Fencing and membership have subpaths of their own (`tenure/fence`,
// `tenure/membership`), as do the checker (`tenure/check`) and the simulator (`tenure/sim`).
export * from './client/index.js';
