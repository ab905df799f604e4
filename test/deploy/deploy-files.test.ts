// The files in deploy/ stay in step with the code: the systemd unit's ExecStart, with the
// example environment file's values, is a set of flags `tenure start` accepts and does not warn
// about; systemd itself accepts the unit; the container image runs `tenure start` from paths the
// build copies. (No Docker engine runs on the project's machines, so the image is not built
// here; see docs/operations.md.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { resolveStartOptions, type StartFlags } from '../../src/server/config.js';
import { unsafeConfigWarnings } from '../../src/server/config-warnings.js';
import { repoRoot } from '../support/paths.js';

const root = repoRoot();
const deploy = (p: string): string => join(root, 'deploy', p);

function envFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) out.set(m[1] ?? '', m[2] ?? '');
  }
  return out;
}

/** ExecStart's words after `tenure start`, continuation lines joined, ${VAR}s substituted. */
function execStartArgs(unit: string, env: ReadonlyMap<string, string>): string[] {
  const joined = unit.replace(/\\\n/g, ' ');
  const line = joined.split('\n').find((l) => l.startsWith('ExecStart='));
  assert.ok(line !== undefined, 'the unit has an ExecStart');
  const words = line.slice('ExecStart='.length).trim().split(/\s+/);
  const start = words.indexOf('start');
  assert.ok(start > 0 && /bin\/tenure$/.test(words[start - 1] ?? ''), line);
  return words.slice(start + 1).map((w) =>
    w.replace(/\$\{([A-Z_]+)\}/g, (_, k: string) => {
      const v = env.get(k);
      assert.ok(v !== undefined, `${k} is not in tenure.env`);
      return v;
    }),
  );
}

/** `--some-flag value` / `--switch` as StartFlags (commander's camelCase keys). */
function asFlags(args: readonly string[]): StartFlags {
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    assert.ok(a.startsWith('--'), `expected a flag, got ${a}`);
    const key = a.slice(2).replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const next = args[i + 1];
    if (next === undefined || next.startsWith('--')) flags[key] = true;
    else {
      flags[key] = next;
      i++;
    }
  }
  return flags;
}

test('the systemd unit with the example environment is a configuration tenure start takes', () => {
  const env = envFile(readFileSync(deploy('systemd/tenure.env'), 'utf8'));
  const args = execStartArgs(readFileSync(deploy('systemd/tenure.service'), 'utf8'), env);
  const opts = resolveStartOptions(asFlags(args));
  assert.equal(opts.name, 'n1');
  assert.equal(opts.initialCluster.length, 3);
  assert.ok(opts.peerTls?.clientCertAuth, 'peers are verified');
  assert.ok(opts.clientTls !== undefined && opts.clientCertAuth, 'clients are verified');
  assert.deepEqual(unsafeConfigWarnings(opts), []);
});

test('systemd accepts the unit', (t) => {
  const r = spawnSync('systemd-analyze', ['verify', deploy('systemd/tenure.service')], {
    encoding: 'utf8',
  });
  if (r.error !== undefined) {
    // Debian's systemd package has it; a machine without systemd cannot check the unit.
    t.diagnostic(`systemd-analyze: ${r.error.message}`);
    assert.fail('systemd-analyze is missing: apt-get install systemd');
  }
  // Unknown keys or bad values are errors; a missing EnvironmentFile or user is not (they are
  // made at install).
  assert.doesNotMatch(r.stderr, /Unknown key|Failed to parse|Invalid/, r.stderr);
});

test('the container image runs tenure start from what its build copies', () => {
  const file = readFileSync(deploy('container/Containerfile'), 'utf8');
  assert.match(
    file,
    /^ENTRYPOINT \["node", "--max-semi-space-size=2", "\/opt\/tenure\/bin\/tenure", "start"\]$/m,
  );
  for (const path of ['package.json', 'package-lock.json', 'README.md', 'bin/tenure', 'proto'])
    assert.ok(existsSync(join(root, path)), `${path} is copied but missing`);
  const ignored = readFileSync(join(root, '.dockerignore'), 'utf8').split('\n');
  for (const needed of ['src', 'proto', 'bin', 'tsconfig.json'])
    assert.ok(!ignored.includes(needed), `${needed} is left out of the build context`);
});
