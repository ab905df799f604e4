// The peer transport over TLS (src/server/peer-tls.ts), in-process on loopback with the
// certificates of testdata/tls (make.sh): two members with peer certificates from the cluster's
// CA exchange messages and snapshots; a member presenting a foreign CA's certificate is refused
// at the handshake both ways and counted; a plain-text member and a TLS one refuse each other at
// once, each saying why; a peer that never finishes a handshake is given up on within the bound
// and retried; the stall bound still resets the TCP connection under TLS.
import assert from 'node:assert/strict';
import { createServer as createTcpServer, type Socket } from 'node:net';
import * as tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { logIndex, nodeId, term, type NodeId } from '../../src/core/base/units.js';
import type { Message } from '../../src/core/raft/types.js';
import { PeerTransport, type PeerEvent } from '../../src/server/peer-transport.js';
import { peerTlsOptions, type PeerTls, type PeerTlsFiles } from '../../src/server/peer-tls.js';
import { TlsConfigError } from '../../src/server/api/client-tls.js';
import { until } from '../support/poll.js';

const DIR = join(process.cwd(), 'testdata', 'tls');
const pem = (name: string): string => join(DIR, name);
const n1 = nodeId(1);
const n2 = nodeId(2);

/** A peer certificate from the cluster's CA, verifying peers against it. */
const trusted: PeerTlsFiles = {
  certFile: pem('peer.crt'),
  keyFile: pem('peer.key'),
  trustedCaFile: pem('ca.crt'),
  clientCertAuth: true,
};
/** An intruder: trusts the cluster's CA, but its own certificate is a foreign CA's. */
const foreign: PeerTlsFiles = {
  certFile: pem('foreign-peer.crt'),
  keyFile: pem('foreign-peer.key'),
  trustedCaFile: pem('ca.crt'),
  clientCertAuth: true,
};

const heartbeat = (context: number): Message => ({
  type: 'heartbeat',
  from: n2,
  to: n1,
  term: term(1),
  commit: logIndex(0),
  context,
});

interface End {
  readonly t: PeerTransport;
  readonly got: Message[];
  readonly events: PeerEvent[];
}

async function end(
  self: NodeId,
  peerTls: PeerTls | undefined,
  peers: ReadonlyMap<NodeId, { host: string; port: number }> = new Map(),
  waitMaxMs?: number,
): Promise<End> {
  const got: Message[] = [];
  const events: PeerEvent[] = [];
  const t = await PeerTransport.start({
    clusterId: 'c1',
    self,
    listen: { host: '127.0.0.1', port: 0 },
    nowMs: () => performance.now(),
    peers,
    onMessage: (m) => got.push(m),
    onEvent: (e) => events.push(e),
    ...(peerTls === undefined ? {} : { tls: peerTls }),
    ...(waitMaxMs === undefined ? {} : { waitMaxMs }),
  });
  return { t, got, events };
}

/** b (n2) dials a (n1); both as given. */
async function pair(aTls: PeerTls | undefined, bTls: PeerTls | undefined) {
  const a = await end(n1, aTls);
  const b = await end(n2, bTls, new Map([[n1, { host: '127.0.0.1', port: a.t.port }]]));
  return { a, b, close: async () => Promise.all([a.t.close(), b.t.close()]) };
}

const tlsFailures = (events: readonly PeerEvent[], direction: 'inbound' | 'outbound') =>
  events.filter((e) => e.type === 'tlsFailed' && e.direction === direction);

/** Keep sending (Raft would) until `cond` holds. */
async function sendUntil(b: End, what: string, cond: () => boolean): Promise<void> {
  let ctx = 0;
  await until(what, () => {
    b.t.send(heartbeat(++ctx));
    return cond();
  });
}

test('members with certificates from the cluster CA exchange messages in order', async () => {
  const { a, b, close } = await pair(peerTlsOptions(trusted), peerTlsOptions(trusted));
  try {
    for (let i = 1; i <= 200; i++) b.t.send(heartbeat(i));
    await until('200 messages', () => a.got.length >= 200);
    assert.deepEqual(
      a.got.map((m) => (m.type === 'heartbeat' ? m.context : -1)),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    assert.equal(a.t.tlsHandshakeFailures + b.t.tlsHandshakeFailures, 0);
  } finally {
    await close();
  }
});

test("a foreign CA's certificate is refused at the handshake, and counted", async () => {
  const { a, b, close } = await pair(peerTlsOptions(trusted), peerTlsOptions(foreign));
  try {
    await sendUntil(b, 'the listener to refuse the handshake', () => a.t.tlsHandshakeFailures > 1);
    const refused = tlsFailures(a.events, 'inbound')[0];
    assert.ok(refused?.type === 'tlsFailed');
    assert.match(refused.remote ?? '', /^127\.0\.0\.1:\d+$/);
    assert.equal(a.got.length, 0, 'a message got through');
    assert.match((refused as { error: string }).error, /peer certificate refused/);
    // The intruder is told, inside TLS, why it was refused.
    await until('the intruder to be told', () => b.events.some((e) => e.type === 'refusedBy'));
    const told = b.events.find((e) => e.type === 'refusedBy');
    assert.match(told?.type === 'refusedBy' ? told.reason : '', /peer certificate refused/);
    // The other way: the cluster's member refuses the intruder's server certificate.
    const c = await end(
      nodeId(3),
      peerTlsOptions(trusted),
      new Map([
        [
          n2,
          {
            host: '127.0.0.1',
            port: b.t.port,
          },
        ],
      ]),
    );
    try {
      let ctx = 0;
      await until('the dialer to refuse the certificate', () => {
        c.t.send({ ...heartbeat(++ctx), from: nodeId(3), to: n2 });
        return tlsFailures(c.events, 'outbound').length > 0;
      });
      const out = tlsFailures(c.events, 'outbound')[0];
      assert.ok(out?.type === 'tlsFailed');
      assert.equal(out.peer, n2);
      assert.match(out.error, /certificate|issuer/i);
      assert.equal(b.got.length, 0, 'the intruder got a message');
    } finally {
      await c.t.close();
    }
  } finally {
    await close();
  }
});

test('a dialer without a certificate is refused before anything it sends is read', async () => {
  const a = await end(n1, peerTlsOptions(trusted));
  const s = tls.connect({ host: '127.0.0.1', port: a.t.port, ca: readFileSync(pem('ca.crt')) });
  s.on('error', () => {});
  try {
    // A heartbeat frame from n2 would reach `got` if the listener read it.
    s.on('secureConnect', () => s.write(Buffer.alloc(64, 1)));
    s.resume(); // read the refusal, and so see the end
    await until('the refusal', () => a.t.tlsHandshakeFailures >= 1);
    await until('the dialer hung up on', () => s.closed);
    assert.equal(a.got.length, 0);
  } finally {
    s.destroy();
    await a.t.close();
  }
});

test('a plain-text member dialing a TLS one is refused at once and told why', async () => {
  // A long handshake bound: the refusal must not be the bound running out.
  const { a, b, close } = await pair(peerTlsOptions(trusted, 600_000), undefined);
  try {
    await sendUntil(b, 'the plain dialer to be told', () =>
      b.events.some((e) => e.type === 'refusedBy'),
    );
    const told = b.events.find((e) => e.type === 'refusedBy');
    assert.ok(told?.type === 'refusedBy');
    assert.equal(told.peer, n1);
    assert.match(told.reason, /serves TLS.*https:\/\//);
    const counted = tlsFailures(a.events, 'inbound')[0];
    assert.ok(counted?.type === 'tlsFailed');
    assert.match(counted.error, /plain-text peer/);
    assert.equal(a.got.length, 0);
  } finally {
    await close();
  }
});

test('a TLS member dialing a plain-text one is refused at once, both sides say so', async () => {
  const { a, b, close } = await pair(undefined, peerTlsOptions(trusted, 600_000));
  try {
    await sendUntil(b, 'both sides to report it', () => {
      const refused = a.events.some(
        (e) => e.type === 'refused' && /a TLS peer .* plain-text peer port/.test(e.reason),
      );
      return refused && tlsFailures(b.events, 'outbound').length > 0;
    });
    const failed = tlsFailures(b.events, 'outbound')[0];
    assert.ok(failed?.type === 'tlsFailed');
    assert.doesNotMatch(failed.error, /not done after/);
    assert.equal(a.got.length, 0);
  } finally {
    await close();
  }
});

test('a handshake that never completes is given up on within the bound, and retried', async () => {
  // Accepts TCP and never answers: the dialer's ClientHello goes unanswered.
  const held: Socket[] = [];
  const mute = createTcpServer((s) => {
    s.on('error', () => {});
    held.push(s);
  });
  await new Promise<void>((r) => mute.listen(0, '127.0.0.1', () => r()));
  const addr = mute.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const b = await end(
    n2,
    peerTlsOptions(trusted, 200),
    new Map([[n1, { host: '127.0.0.1', port }]]),
  );
  try {
    await sendUntil(b, 'two timed-out handshakes', () => b.t.tlsHandshakeFailures >= 2);
    for (const e of tlsFailures(b.events, 'outbound'))
      assert.match(e.type === 'tlsFailed' ? e.error : '', /not done after 200 ms/);
  } finally {
    await b.t.close();
    for (const s of held) s.destroy();
    await new Promise<void>((r) => mute.close(() => r()));
  }
});

test('a dialer that never starts its handshake is cut off within the bound', async () => {
  const a = await end(n1, peerTlsOptions(trusted, 200));
  const { Socket: NetSocket } = await import('node:net');
  const idle = new NetSocket();
  idle.on('error', () => {});
  try {
    idle.connect(a.t.port, '127.0.0.1');
    await until('the silent dialer counted', () => a.t.tlsHandshakeFailures >= 1);
    await until('the silent dialer cut off', () => idle.closed);
    assert.match(
      (tlsFailures(a.events, 'inbound')[0] as { error: string }).error,
      /nothing sent within 200 ms/,
    );
  } finally {
    idle.destroy();
    await a.t.close();
  }
});

test('a TLS connection never acknowledged is reset (RST) after the bound', async () => {
  // A TLS peer that completes the handshake and then reads nothing, so it never acknowledges.
  const resets: string[] = [];
  const sockets: tls.TLSSocket[] = [];
  const silent = tls.createServer(
    {
      cert: readFileSync(pem('peer.crt')),
      key: readFileSync(pem('peer.key')),
      ca: readFileSync(pem('ca.crt')),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (s) => {
      s.pause();
      s.on('error', (e: NodeJS.ErrnoException) => resets.push(e.code ?? e.message));
      sockets.push(s);
    },
  );
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const addr = silent.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  const b = await end(
    n2,
    peerTlsOptions(trusted),
    new Map([[n1, { host: '127.0.0.1', port }]]),
    200,
  );
  try {
    b.t.send(heartbeat(1));
    await until('the stalled connection reset', () => b.events.some((e) => e.type === 'stalled'));
    await until('the peer to see a reset', () => resets.includes('ECONNRESET'));
  } finally {
    await b.t.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
  }
});

test('a snapshot of several chunks arrives whole over TLS', async () => {
  const { a, b, close } = await pair(peerTlsOptions(trusted), peerTlsOptions(trusted));
  try {
    const data = new Uint8Array(3 * 1024 * 1024 + 17);
    for (let i = 0; i < data.length; i += 511) data[i] = i & 0xff;
    b.t.send({
      type: 'snap',
      from: n2,
      to: n1,
      term: term(3),
      snapshot: {
        index: logIndex(90),
        term: term(3),
        conf: { voters: [n1, n2], learners: [] },
        data,
      },
    });
    await until('the snapshot', () => a.got.some((m) => m.type === 'snap'), 60_000);
    const m = a.got.find((x) => x.type === 'snap');
    assert.ok(m?.type === 'snap');
    assert.ok(Buffer.from(m.snapshot.data).equals(Buffer.from(data)));
  } finally {
    await close();
  }
});

test('self-signed (auto TLS) members talk without verifying each other', async () => {
  // Two different certificates, neither trusted by the other: accepted, as etcd's auto TLS does.
  // Encryption without authentication.
  const { a, b, close } = await pair(
    peerTlsOptions({
      certFile: pem('peer.crt'),
      keyFile: pem('peer.key'),
      clientCertAuth: false,
      selfSigned: true,
    }),
    peerTlsOptions({
      certFile: pem('foreign-peer.crt'),
      keyFile: pem('foreign-peer.key'),
      clientCertAuth: false,
      selfSigned: true,
    }),
  );
  try {
    await sendUntil(b, 'a message', () => a.got.length > 0);
    assert.equal(a.t.tlsHandshakeFailures + b.t.tlsHandshakeFailures, 0);
  } finally {
    await close();
  }
});

test('bad TLS files and flags are typed errors at start', () => {
  assert.throws(
    () => peerTlsOptions({ ...trusted, trustedCaFile: pem('nope.crt') }),
    (e: unknown) =>
      e instanceof TlsConfigError && /--peer-trusted-ca-file: cannot read/.test(e.message),
  );
  const { trustedCaFile: _ca, ...noCa } = trusted;
  assert.throws(
    () => peerTlsOptions({ ...noCa, clientCertAuth: true }),
    (e: unknown) => e instanceof TlsConfigError && /needs --peer-trusted-ca-file/.test(e.message),
  );
});

test('--peer-cert-allowed-cn: a verified peer with another CN is refused, the CN let in', async () => {
  const allowing = (cn: string): PeerTls => peerTlsOptions({ ...trusted, allowedCn: cn });
  const ok = await pair(allowing('tenure test peer'), peerTlsOptions(trusted));
  try {
    await sendUntil(ok.b, 'a message through', () => ok.a.got.length > 0);
  } finally {
    await ok.close();
  }
  const { a, b, close } = await pair(allowing('member-1.example'), peerTlsOptions(trusted));
  try {
    await sendUntil(b, 'the listener to refuse the CN', () => a.t.tlsHandshakeFailures > 0);
    const refused = tlsFailures(a.events, 'inbound')[0];
    assert.match(
      (refused as { error: string }).error,
      /CommonName authentication failed \(CN "tenure test peer", allowed "member-1.example"\)/,
    );
    await until('the dialer to be told', () => b.events.some((e) => e.type === 'refusedBy'));
    assert.equal(a.got.length, 0, 'a message got through');
  } finally {
    await close();
  }
});
