// The member's clock is the machine's CLOCK_MONOTONIC, not one that starts with the process:
// peers keep a member's clock readings across its restart, and the deadlines of requests they
// forward to it are put on that clock (docs/leases-and-time.md), so a restarted process on the
// same machine must read on from where the last one left off.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { monotonicClock } from '../../src/server/clock.js';

test('a new process reads the clock on from where this one is', () => {
  const before = monotonicClock.nowMs();
  const module = pathToFileURL(new URL('../../src/server/clock.js', import.meta.url).pathname);
  const printed = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { monotonicClock } from '${module.href}'; console.log(monotonicClock.nowMs());`,
    ],
    { encoding: 'utf8' },
  );
  const child = Number(printed.trim());
  const after = monotonicClock.nowMs();
  assert.ok(
    child >= before && child <= after,
    `child read ${child}, this process ${before}–${after}`,
  );
});
