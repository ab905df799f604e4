// Wire compatibility with the real Go client: Debian's etcdctl (v3.4) against a MemoryBackend
// server. npm test installs etcdctl (Debian etcd-client); without it these tests fail, never skip.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { Fixture } from './api-fixture.js';
import { startFixture } from './api-fixture.js';
import { track } from '../../src/launcher/processes.js';

const ETCDCTL = '/usr/bin/etcdctl';
/** Puts sent while waiting for `etcdctl watch` to start (200 ms apart: 30 s in all). */
const WATCH_START_ATTEMPTS_MAX = 150;

let f: Fixture;
before(async () => {
  assert.ok(existsSync(ETCDCTL), `${ETCDCTL} is missing: apt-get install etcd-client`);
  f = await startFixture();
});
after(() => f.close());

function etcdctl(
  args: readonly string[],
  input?: string,
  stream: 'stdout' | 'stderr' = 'stdout',
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      ETCDCTL,
      [`--endpoints=${f.address}`, '--command-timeout=10s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        err
          ? reject(new Error(`etcdctl ${args.join(' ')}: ${stderr}`))
          : resolve(stream === 'stdout' ? stdout : stderr),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

test('put, get, del', async () => {
  assert.equal((await etcdctl(['put', 'foo', 'bar'])).trim(), 'OK');
  assert.equal(await etcdctl(['get', 'foo']), 'foo\nbar\n');
  const json = JSON.parse(await etcdctl(['get', 'foo', '-w', 'json'])) as {
    kvs: { key: string; value: string; version: number }[];
  };
  assert.equal(Buffer.from(json.kvs[0]?.value ?? '', 'base64').toString(), 'bar');
  assert.equal((await etcdctl(['del', 'foo'])).trim(), '1');
  assert.equal(await etcdctl(['get', 'foo']), '');
});

test('txn from stdin', async () => {
  await etcdctl(['put', 'tk', 'v1']);
  const out = await etcdctl(['txn'], 'value("tk") = "v1"\n\nput tk v2\n\nput tk other\n\n');
  assert.match(out, /^SUCCESS/);
  assert.equal(await etcdctl(['get', 'tk', '--print-value-only']), 'v2\n');
});

test('watch sees a put and a delete', async () => {
  const child = track(
    spawn(ETCDCTL, [`--endpoints=${f.address}`, 'watch', 'wk', '--prev-kv'], {
      env: { ...process.env, ETCDCTL_API: '3' },
    }),
  );
  try {
    let out = '';
    const seen = (pattern: RegExp): Promise<void> =>
      new Promise((resolve) => {
        const check = (): void => {
          if (pattern.test(out)) resolve();
        };
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          check();
        });
        check();
      });
    // etcdctl prints nothing on creation, so keep writing until the first event shows up.
    const first = seen(/PUT\nwk\nv1\n/);
    let done = false;
    void first.then(() => (done = true));
    // Bounded: a watch that never starts fails the test instead of hanging it.
    for (let attempt = 0; !done; attempt++) {
      assert.ok(attempt < WATCH_START_ATTEMPTS_MAX, `etcdctl watch printed nothing: ${out}`);
      await etcdctl(['put', 'wk', 'v1']);
      await Promise.race([first, new Promise((r) => setTimeout(r, 200))]);
    }
    await etcdctl(['del', 'wk']);
    await seen(/DELETE\nwk\n/);
  } finally {
    child.kill();
  }
});

test('lease grant, keep-alive --once, timetolive, revoke', async () => {
  const grant = await etcdctl(['lease', 'grant', '30']);
  const id = /lease ([0-9a-f]+) granted with TTL\(30s\)/.exec(grant)?.[1];
  assert.ok(id, grant);
  assert.match(await etcdctl(['lease', 'keep-alive', '--once', id]), /keepalived with TTL\(30\)/);
  await etcdctl(['put', '--lease', id, 'lk', 'v']);
  assert.match(await etcdctl(['lease', 'timetolive', id, '--keys']), /attached keys\(\[lk\]\)/);
  assert.match(await etcdctl(['lease', 'revoke', id]), /revoked/);
  assert.equal(await etcdctl(['get', 'lk']), '');
});

test('member list, endpoint status, endpoint health', async () => {
  assert.match(await etcdctl(['member', 'list']), /^1, started, default, /);
  const status = JSON.parse(await etcdctl(['endpoint', 'status', '-w', 'json'])) as {
    Status: { version: string; leader: number };
  }[];
  assert.equal(status[0]?.Status.version, '3.4.0');
  assert.equal(status[0]?.Status.leader, 1);
  // etcdctl prints the health line on stderr.
  assert.match(await etcdctl(['endpoint', 'health'], undefined, 'stderr'), /is healthy/);
});
