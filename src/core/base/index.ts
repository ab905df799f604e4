export * from './assert.js';
export * from './units.js';
export * from './prng.js';
export * from './hash.js';
export * from './mutants.js';
