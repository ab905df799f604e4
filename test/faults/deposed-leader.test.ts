// A member cut off from its peers but not from its clients, on real processes: the leader's lease
// renewals under starvation, a write forwarded by a cut-off follower, a late Unlock and one its
// client left open. Each scenario
// (deposed-leader-scenarios.ts) runs inside a fresh network and PID namespace (`unshare --net
// --pid`), where iptables cuts a member's peer links; everything in the namespace ends with it.
// They need root (namespaces, iptables); npm test installs
// iptables. The same scenarios, pointed at the code before the fix (`node
// dist/test/faults/deposed-leader-scenarios.js SCENARIO --tenure OTHER/bin/tenure`), report the
// violations each test here rejects.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { track } from '../../src/launcher/processes.js';
import { repoRoot } from '../support/paths.js';
import { SCENARIOS, type Scenario, type Verdict } from './deposed-leader-scenarios.js';

/** A hang guard for one scenario (each takes 10–30 s here), not a speed check. */
const SCENARIO_BUDGET_MS = 180_000;

function runScenario(
  name: Scenario,
): Promise<{ verdict?: Verdict; stderr: string; code: number | null }> {
  const script = join(repoRoot(), 'dist', 'test', 'faults', 'deposed-leader-scenarios.js');
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(
        'unshare',
        ['--net', '--pid', '--fork', '--kill-child', process.execPath, script, name],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      ),
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), SCENARIO_BUDGET_MS);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').pop() ?? '';
      let verdict: Verdict | undefined;
      try {
        verdict = JSON.parse(last) as Verdict;
      } catch {
        verdict = undefined;
      }
      resolve({ ...(verdict !== undefined ? { verdict } : {}), stderr, code });
    });
  });
}

const WHAT: Record<Scenario, string> = {
  renewals: 'a leader cut off and starved answers no renewal the new leader does not honour',
  'forwarded-write': 'a write through a cut-off follower answered as failed is never applied',
  'late-unlock': "a late Unlock through a cut-off follower spares the holder's new key",
  'abandoned-unlock': "an Unlock its client stopped waiting for spares the holder's new key",
};

for (const name of SCENARIOS) {
  test(WHAT[name], async () => {
    assert.equal(
      process.getuid?.(),
      0,
      'these scenarios need root: they make network namespaces and iptables rules ' +
        '(run npm test as root, as CI does)',
    );
    const r = await runScenario(name);
    assert.ok(r.verdict, `scenario ${name} gave no verdict (exit ${r.code}):\n${r.stderr}`);
    console.log(`# ${name}: ${JSON.stringify(r.verdict.figures)}`);
    assert.deepEqual(r.verdict.violations, [], r.stderr);
  });
}
