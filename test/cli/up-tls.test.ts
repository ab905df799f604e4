// `tenure up --tls`: a 3-member cluster on https:// client and peer URLs with a throwaway CA,
// client certificates required; the etcdctl command it prints works as printed (Debian's
// etcdctl), put and get with the same flags work, without a client certificate etcdctl is
// refused, and with auth enabled the certificate's CN and --user name the caller. `tenure down` stops it; every member is also stopped by PID whatever happens.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePorts } from '../../src/launcher/ports.js';
import { isAlive, readState } from '../../src/cli/local-cluster.js';
import { runChild, runCli } from '../support/run-child.js';

const ETCDCTL = '/usr/bin/etcdctl';
const UP_BUDGET_MS = 90_000;

/** Split a printed command line into words: spaces separate, '…' quotes (as shellWord does). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const m of line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g))
    words.push(m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : (m[2] as string));
  return words;
}

function etcdctl(args: readonly string[]) {
  return runChild(ETCDCTL, ['--dial-timeout=3s', '--command-timeout=5s', ...args], 30_000, {
    env: { ...process.env, ETCDCTL_API: '3' },
  });
}

test('tenure up --tls: etcdctl works as printed, refused without a certificate', async () => {
  assert.ok(existsSync(ETCDCTL), `${ETCDCTL} is missing: apt-get install etcd-client`);
  const dir = mkdtempSync(join(tmpdir(), 'tenure-up-tls-'));
  const ports = await freePorts(6);
  const dataDir = join(dir, '.tenure');
  const where = [
    '--data-dir',
    dataDir,
    '--client-ports',
    ports.slice(0, 3).join(','),
    '--peer-ports',
    ports.slice(3).join(','),
  ];
  try {
    const up = await runCli(['up', '--tls', '--detach', ...where], UP_BUDGET_MS);
    assert.equal(up.code, 0, up.stderr);
    const state = readState(dataDir);
    assert.ok(state?.tls !== undefined, 'no TLS in the state file');
    assert.ok(state.members.every((m) => m.peerUrl.startsWith('https://127.0.0.1:')));
    // The printed command, run exactly as printed.
    const health = up.stdout.split('\n').find((l) => /etcdctl .* endpoint health$/.test(l));
    assert.ok(health !== undefined, up.stdout);
    const words = shellWords(health.trim());
    assert.equal(words[0], 'etcdctl');
    const eps = `--endpoints=${ports
      .slice(0, 3)
      .map((p) => `https://127.0.0.1:${p}`)
      .join(',')}`;
    assert.equal(words[1], eps);
    for (const flag of ['--cacert', '--cert', '--key']) assert.ok(words.includes(flag), flag);
    const healthy = await etcdctl(words.slice(1));
    assert.equal(healthy.code, 0, healthy.stderr);
    assert.equal((healthy.stdout + healthy.stderr).match(/is healthy/g)?.length, 3);
    // The same flags put and get.
    const flags = words.slice(1, -2);
    const put = await etcdctl([...flags, 'put', 'greeting', 'hello']);
    assert.equal(put.code, 0, put.stderr);
    const get = await etcdctl([...flags, 'get', 'greeting', '--print-value-only']);
    assert.equal(get.stdout.trim(), 'hello', get.stderr);
    // Without the client certificate: refused at the handshake.
    const ca = words[words.indexOf('--cacert') + 1] as string;
    const noCert = [eps, '--cacert', ca];
    const refused = await etcdctl([...noCert, 'get', 'greeting']);
    assert.notEqual(refused.code, 0, refused.stdout);
    assert.doesNotMatch(refused.stdout, /hello/);

    // Auth on the same cluster: the client certificate's CN (root) is the user, and a password
    // user's token wins over the certificate.
    for (const args of [
      ['user', 'add', 'root', '--no-password'],
      ['user', 'grant-role', 'root', 'root'],
      ['role', 'add', 'app'],
      ['role', 'grant-permission', 'app', 'readwrite', 'app/', '--prefix'],
      ['user', 'add', 'alice:apw'],
      ['user', 'grant-role', 'alice', 'app'],
      ['auth', 'enable'],
    ]) {
      const r = await etcdctl([...flags, ...args]);
      assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
    }
    const asRoot = await etcdctl([...flags, 'put', 'anywhere', 'x']);
    assert.equal(asRoot.code, 0, asRoot.stderr);
    const alice = [...flags, '--user=alice:apw'];
    const inPrefix = await etcdctl([...alice, 'put', 'app/1', 'v']);
    assert.equal(inPrefix.code, 0, inPrefix.stderr);
    const outside = await etcdctl([...alice, 'put', 'anywhere', 'y']);
    assert.notEqual(outside.code, 0);
    assert.match(outside.stderr, /etcdserver: permission denied/);
    const badPassword = await etcdctl([...flags, '--user=alice:nope', 'get', 'app/1']);
    assert.match(badPassword.stderr, /authentication failed, invalid user ID or password/);

    const down = await runCli(['down', '--data-dir', dataDir], 30_000);
    assert.equal(down.code, 0, down.stderr);
    assert.ok(state.members.every((m) => !isAlive(m.pid)));
    // The data dir stays a TLS cluster's: up without --tls refuses it.
    const plain = await runCli(['up', '--detach', ...where], 30_000);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /started with --tls/);
  } finally {
    const state = readState(dataDir);
    for (const m of state?.members ?? []) if (isAlive(m.pid)) process.kill(m.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
