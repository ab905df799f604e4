// Stands for the fence-previous demo in fence-child-orphan.test.ts: spawns one leader child the
// demo's way (spawnLeaderChild), passes its output on, and idles until the test kills it.
//
//   node fence-child-parent.js ENDPOINTS NAME LOG_PATH TTL_SECONDS
import { spawnLeaderChild } from '../../src/demo/fence-previous.js';

const [endpointsArg, name, logPath, ttlArg] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || logPath === undefined) {
  throw new Error('usage: fence-child-parent ENDPOINTS NAME LOG_PATH TTL_SECONDS');
}
// The child's pipes and IPC channel keep this process alive until it is killed.
const child = spawnLeaderChild(endpointsArg.split(','), name, logPath, Number(ttlArg));
child.stdout?.pipe(process.stdout);
child.stderr?.pipe(process.stderr);
