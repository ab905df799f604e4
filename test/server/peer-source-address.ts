// Run inside a fresh network namespace by peer-source-address.test.ts: a member whose peer URL is
// 127.0.0.2 connects to a peer at 127.0.0.3 from 127.0.0.2, so a rule that names the member's
// address sees its traffic. Prints one JSON line: the source address the peer saw.
import { execFileSync } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { logIndex, nodeId, term } from '../../src/core/base/units.js';
import { PeerTransport } from '../../src/server/peer-transport.js';

const PORT = 2380;
/** A hang guard, not a speed check. */
const WAIT_MS = 10_000;

execFileSync('ip', ['link', 'set', 'lo', 'up']);
const seen = new Promise<string>((resolve, reject) => {
  const peer = createServer((s: Socket) => {
    resolve(s.remoteAddress ?? '');
    s.destroy();
    peer.close();
  });
  peer.on('error', reject);
  peer.listen(PORT, '127.0.0.3');
  setTimeout(() => reject(new Error('no connection from the member')), WAIT_MS).unref();
});
const t = await PeerTransport.start({
  clusterId: '1',
  self: nodeId(1),
  listen: { host: '127.0.0.2', port: PORT },
  peers: new Map([[nodeId(2), { host: '127.0.0.3', port: PORT }]]),
  nowMs: () => performance.now(),
  onMessage: () => undefined,
});
try {
  t.send({
    type: 'heartbeat',
    from: nodeId(1),
    to: nodeId(2),
    term: term(1),
    commit: logIndex(0),
    context: 0,
  });
  t.flush();
  console.log(JSON.stringify({ source: await seen }));
} finally {
  await t.close();
}
