// Outbound peer connections leave from the member's own peer address (outboundAddress in
// src/server/peer-transport.ts), so a partition can cut exactly the links it names by address.
// The connection is made inside a fresh network namespace (`unshare --net`, root only), where
// 127.0.0.2 and 127.0.0.3 stand for two hosts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { outboundAddress } from '../../src/server/peer-transport.js';
import { repoRoot } from '../support/paths.js';

const run = promisify(execFile);
/** A hang guard for the namespaced child, not a speed check. */
const CHILD_TIMEOUT_MS = 30_000;

test('a connection leaves from the listen address when it is one of the same family and scope', () => {
  assert.equal(outboundAddress('127.0.0.2', '127.0.0.3'), '127.0.0.2');
  assert.equal(outboundAddress('10.0.0.5', '10.0.0.6'), '10.0.0.5');
  assert.equal(outboundAddress('::1', '::1'), '::1');
  assert.equal(outboundAddress('0.0.0.0', '10.0.0.6'), undefined, 'the wildcard');
  assert.equal(outboundAddress('::', '::1'), undefined, 'the IPv6 wildcard');
  assert.equal(outboundAddress('127.0.0.1', '10.0.0.6'), undefined, 'loopback to a host');
  assert.equal(outboundAddress('10.0.0.5', '::1'), undefined, 'another family');
  assert.equal(outboundAddress('10.0.0.5', 'peer.example'), undefined, 'a name');
});

test('a member on 127.0.0.2 reaches its peer from 127.0.0.2', async () => {
  assert.equal(process.getuid?.(), 0, 'this test makes a network namespace: run npm test as root');
  const script = join(repoRoot(), 'dist', 'test', 'server', 'peer-source-address.js');
  const { stdout } = await run(
    'unshare',
    ['--net', '--pid', '--fork', '--kill-child', process.execPath, script],
    { timeout: CHILD_TIMEOUT_MS },
  );
  const last = stdout.trim().split('\n').pop() ?? '';
  assert.deepEqual(JSON.parse(last), { source: '127.0.0.2' });
});
