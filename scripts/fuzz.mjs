#!/usr/bin/env node
// `npm run fuzz`: the decoder fuzz suites of test/fuzz, longer than in `npm test`. Builds, then
// runs them with TENURE_FUZZ_SCALE times the runs (default 25: 50,000 cases for most
// properties) and TENURE_FUZZ_SEED (a fresh one unless given, printed first so a failure
// replays: `TENURE_FUZZ_SEED=<seed> npm run fuzz`). One suite at a time; the exit code is the
// test runner's.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const seed = process.env.TENURE_FUZZ_SEED || String(randomInt(2 ** 31));
const scale = process.env.TENURE_FUZZ_SCALE || '25';
process.stderr.write(`fuzz: TENURE_FUZZ_SEED=${seed} TENURE_FUZZ_SCALE=${scale}\n`);
const dir = join(root, 'dist', 'test', 'fuzz');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => join(dir, f));
const run = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...files], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, TENURE_FUZZ_SEED: seed, TENURE_FUZZ_SCALE: scale },
});
process.exit(run.status ?? 1);
