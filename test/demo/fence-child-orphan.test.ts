// A leader child of the fence-previous demo does not outlive the demo: when the process that
// spawned it (fence-child-parent.ts, spawning it as the demo does) is SIGKILLed, a running child
// exits by itself, and a child frozen with SIGSTOP exits once it is continued. Every process
// started here is stopped by PID in a finally; time bounds only bound hangs.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { startCluster } from '../cluster/cluster.js';
import { LineChild } from '../support/line-child.js';
import { alive } from '../support/pids.js';
import { sleep, until } from '../support/poll.js';

// Named limits.
/** Bound on the child's first "leading" line and on its exit (a hang guard). */
const stepTimeoutMs = 15_000;
/** How long a stopped child is watched not to exit (it cannot run its handler). */
const stoppedWatchMs = 500;

const parentPath = fileURLToPath(new URL('./fence-child-parent.js', import.meta.url));

/** Gone: no such process, or a zombie not yet reaped by whoever adopted it. */
function gone(pid: number): boolean {
  if (!alive(pid)) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

test('fence-previous: a leader child exits when its parent is SIGKILLed', async () => {
  await using cluster = await startCluster({ kind: 'tenure', size: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'fence-orphan-'));
  try {
    for (const frozen of [false, true]) {
      const name = `orphan-${frozen ? 'frozen' : 'running'}`;
      const args = [parentPath, cluster.endpoints.join(','), name, join(dir, `${name}.log`), '2'];
      const parent = new LineChild(process.execPath, args);
      let pid: number | undefined;
      try {
        const leading = (): number | undefined =>
          parent.records<{ type?: string; pid?: number }>().find((r) => r.type === 'leading')?.pid;
        pid = await parent.waitFor('a leading child', leading, stepTimeoutMs);
        const child = pid;
        if (frozen) process.kill(child, 'SIGSTOP');
        await parent.stop('SIGKILL');
        if (frozen) {
          await sleep(stoppedWatchMs);
          assert.equal(gone(child), false, 'a stopped child runs no handler until continued');
          process.kill(child, 'SIGCONT');
        }
        await until(
          `${name} child ${child} exits after its parent died`,
          () => gone(child),
          stepTimeoutMs,
        );
      } finally {
        if (pid !== undefined && !gone(pid)) process.kill(pid, 'SIGKILL');
        await parent.stop('SIGKILL');
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
