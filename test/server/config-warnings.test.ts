// tenure start's warnings about configurations that are unsafe on real machines
// (config-warnings.ts): each fires on its case and stays quiet on the safe variant.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolveStartOptions } from '../../src/server/config.js';
import { isLoopbackHost, unsafeConfigWarnings } from '../../src/server/config-warnings.js';

const warn = (flags: Parameters<typeof resolveStartOptions>[0]): string[] =>
  unsafeConfigWarnings(resolveStartOptions(flags));

test('an even member count is warned about, an odd one is not', () => {
  const cluster = (n: number): string =>
    Array.from({ length: n }, (_, i) => `n${i + 1}=http://127.0.0.1:${2380 + i}`).join(',');
  const four = warn({ name: 'n1', initialCluster: cluster(4) });
  assert.equal(four.length, 1);
  assert.match(four[0] ?? '', /4 members: an even count tolerates 1 failure.*use 3 or 5/);
  assert.deepEqual(warn({ name: 'n1', initialCluster: cluster(3) }), []);
  assert.deepEqual(warn({ name: 'n1', initialCluster: cluster(1) }), []);
  // Joining an existing cluster one member at a time passes through even counts.
  assert.deepEqual(
    warn({ name: 'n1', initialCluster: cluster(4), initialClusterState: 'existing' }),
    [],
  );
});

test('a loopback peer URL in a cluster spread over machines is warned about', () => {
  const w = warn({
    name: 'n1',
    listenPeerUrls: 'http://127.0.0.1:2380',
    initialCluster: 'n1=http://127.0.0.1:2380,n2=http://10.0.0.2:2380,n3=http://10.0.0.3:2380',
  });
  assert.equal(w.length, 1);
  assert.match(w[0] ?? '', /n1's peer URL http:\/\/127\.0\.0\.1:2380 is on loopback.*n2/);
  assert.deepEqual(
    warn({
      name: 'n1',
      listenPeerUrls: 'http://10.0.0.1:2380',
      initialCluster: 'n1=http://10.0.0.1:2380,n2=http://10.0.0.2:2380,n3=http://10.0.0.3:2380',
    }),
    [],
  );
});

test('plain-text clients on a non-loopback address are warned about', () => {
  const w = warn({ name: 'n1', listenClientUrls: 'http://0.0.0.0:2379' });
  assert.equal(w.length, 1);
  assert.match(w[0] ?? '', /plain text on http:\/\/0\.0\.0\.0:2379.*unless auth is enabled/);
  assert.deepEqual(warn({ name: 'n1', listenClientUrls: 'http://127.0.0.1:2379' }), []);
});

test('loopback hosts', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '[::1]', 'a.localhost'])
    assert.ok(isLoopbackHost(h), h);
  for (const h of ['10.0.0.1', '0.0.0.0', 'node-a', '::', '128.0.0.1'])
    assert.ok(!isLoopbackHost(h), h);
});
