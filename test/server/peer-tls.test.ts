// Peer TLS on real processes: a 3-member tenure cluster on https:// peer URLs, each member with a
// peer certificate from the cluster's CA (testdata/tls, make.sh), elects a leader and replicates
// a put. Member n3, restarted with its data but a certificate from a foreign CA, is refused at
// every handshake, both ways, and never learns the keys written meanwhile; restarted with its
// own certificate it catches up, so what kept it out was the certificate. A member with plain
// http:// peer URLs cannot talk to the TLS members either: both sides name the mismatch. Every
// process is stopped by PID.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startCluster, type Cluster } from '../../src/launcher/cluster.js';
import {
  memberCommand,
  memberEnv,
  tlsFlags,
  type PeerTlsSpec,
} from '../../src/launcher/member-command.js';
import { freePorts } from '../../src/launcher/ports.js';
import { stopProcess, track } from '../../src/launcher/processes.js';
import { ConfigError, resolveStartOptions } from '../../src/server/config.js';
import { GrpcKv } from '../cluster/grpc-kv.js';
import { eventually, until } from '../support/poll.js';
import { runCli } from '../support/run-child.js';

const DIR = join(process.cwd(), 'testdata', 'tls');
const pem = (name: string): string => join(DIR, name);
const TOKEN = 'peer-tls-test';
const READY_MS = 60_000;
/** Long enough for several reconnects (backoff up to 2 s) on a loaded 2-core machine. */
const REFUSALS_MS = 60_000;

const cluster: PeerTlsSpec = {
  certFile: pem('peer.crt'),
  keyFile: pem('peer.key'),
  caFile: pem('ca.crt'),
};
/** Trusts the cluster's CA, but its own certificate is a foreign CA's. */
const intruder: PeerTlsSpec = {
  certFile: pem('foreign-peer.crt'),
  keyFile: pem('foreign-peer.key'),
  caFile: pem('ca.crt'),
};

/** A serializable Range through the JSON gateway: what this member itself holds. */
async function localValue(clientUrl: string, key: string): Promise<string | undefined> {
  const res = await fetch(`${clientUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(key).toString('base64'), serializable: true }),
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const kvs = ((await res.json()) as { kvs?: { value: string }[] }).kvs ?? [];
  return kvs[0] === undefined ? undefined : Buffer.from(kvs[0].value, 'base64').toString();
}

/**
 * A put that outlives an election: the member stopped just before may have been the leader, and
 * until a new one is elected the put is refused as unavailable. The same value is written again,
 * so a retried put whose first try did land changes nothing the test reads.
 */
async function putAcrossElection(kv: GrpcKv, key: string, value: string): Promise<void> {
  await eventually(
    `put ${key}`,
    async () => {
      try {
        await kv.put(key, value);
        return true;
      } catch (e) {
        if ((e as { code?: number }).code === grpc.status.UNAVAILABLE) return undefined;
        if ((e as { code?: number }).code === grpc.status.DEADLINE_EXCEEDED) return undefined;
        throw e;
      }
    },
    READY_MS,
  );
}

/** The JSON log lines of `text` whose msg is `msg`. */
function logLines(text: string, msg: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (o.msg === msg) out.push(o);
    } catch {
      // a partial line
    }
  }
  return out;
}

/** A member started by hand (the intruder, the plain one), its output in `logFile`. */
interface HandStarted {
  readonly child: ChildProcess;
  readonly logFile: string;
  log(): string;
}

function startByHand(
  name: string,
  dataDir: string,
  clientUrl: string,
  peerUrl: string,
  initialCluster: string,
  extraArgs: readonly string[],
  logFile: string,
): HandStarted {
  const { file, args } = memberCommand(
    'tenure',
    { name, clientUrl, peerUrl, dataDir },
    initialCluster,
    TOKEN,
    { extraArgs },
  );
  const fd = openSync(logFile, 'a');
  try {
    const child = track(spawn(file, args, { env: memberEnv(), stdio: ['ignore', fd, fd] }));
    return { child, logFile, log: () => readFileSync(logFile, 'utf8') };
  } finally {
    closeSync(fd);
  }
}

describe('a tenure cluster on https:// peer URLs', { timeout: 300_000 }, () => {
  let c: Cluster;
  let scratch: string;
  const byHand: HandStarted[] = [];
  let kv: GrpcKv;

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'tenure-peer-tls-'));
    c = await startCluster({
      kind: 'tenure',
      size: 3,
      token: TOKEN,
      tls: { peer: cluster },
      readyTimeoutMs: READY_MS,
    });
    kv = new GrpcKv(c.endpoints[0] as string);
  });

  after(async () => {
    kv?.close();
    for (const h of byHand) await stopProcess(h.child);
    await c?.stop();
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  test('elects a leader and replicates a put', async () => {
    assert.ok(c.peerUrls.every((u) => u.startsWith('https://127.0.0.1:')));
    await kv.put('k1', 'v1');
    for (const url of c.endpoints)
      await eventually(`k1 on ${url}`, async () =>
        (await localValue(url, 'k1')) === 'v1' ? true : undefined,
      );
  });

  test("a foreign CA's certificate is refused at the handshake and learns nothing", async () => {
    await c.kill(2, 'SIGTERM');
    await putAcrossElection(kv, 'k2', 'while-down');
    const n3 = 2;
    const initialCluster = c.names.map((n, i) => `${n}=${c.peerUrls[i]}`).join(',');
    const bad = startByHand(
      c.names[n3] as string,
      c.dataDirs[n3] as string,
      c.endpoints[n3] as string,
      c.peerUrls[n3] as string,
      initialCluster,
      tlsFlags({ peer: intruder }),
      join(scratch, 'intruder.log'),
    );
    byHand.push(bad);
    // The cluster refuses the intruder's certificate when it dials in, and when it dials out.
    const clusterLog = (): string => c.logTail(0, 400) + c.logTail(1, 400);
    await until(
      'the cluster to refuse the intruder both ways, more than once',
      () => {
        const failed = logLines(clusterLog(), 'peer TLS handshake failed');
        const inbound = failed.filter(
          (l) => l.direction === 'inbound' && /peer certificate refused/.test(String(l.err)),
        );
        const outbound = failed.filter((l) => l.direction === 'outbound');
        return inbound.length >= 2 && outbound.length >= 2;
      },
      REFUSALS_MS,
    );
    // The intruder is told why, inside TLS.
    await until(
      'the intruder to be told',
      () =>
        logLines(bad.log(), 'peer refused this member').some((l) =>
          /peer certificate refused/.test(String(l.reason)),
        ),
      REFUSALS_MS,
    );
    await putAcrossElection(kv, 'k3', 'after-restart');
    const url = c.endpoints[n3] as string;
    assert.equal(await localValue(url, 'k2'), undefined, 'the intruder learned k2');
    assert.equal(await localValue(url, 'k3'), undefined, 'the intruder learned k3');
    await stopProcess(bad.child);

    // The same member with its own certificate catches up: the certificate kept it out.
    await c.restart(n3);
    await c.waitReady(READY_MS);
    await eventually('k2 and k3 on n3', async () =>
      (await localValue(url, 'k2')) === 'while-down' &&
      (await localValue(url, 'k3')) === 'after-restart'
        ? true
        : undefined,
    );
  });

  test('a member with plain http:// peer URLs cannot talk to the TLS members', async () => {
    const n3 = 2;
    await c.kill(n3, 'SIGTERM');
    await putAcrossElection(kv, 'k4', 'plain');
    const plainPeers = c.peerUrls.map((u) => u.replace('https:', 'http:'));
    const initialCluster = c.names.map((n, i) => `${n}=${plainPeers[i]}`).join(',');
    const plain = startByHand(
      c.names[n3] as string,
      join(scratch, 'plain-data'),
      c.endpoints[n3] as string,
      plainPeers[n3] as string,
      initialCluster,
      [],
      join(scratch, 'plain.log'),
    );
    byHand.push(plain);
    await until(
      'both sides to name the mismatch',
      () => {
        const told = logLines(plain.log(), 'peer refused this member').some((l) =>
          /serves TLS/.test(String(l.reason)),
        );
        const dialedIn = logLines(plain.log(), 'peer connection refused').some((l) =>
          /a TLS peer .* plain-text peer port/.test(String(l.reason)),
        );
        const clusterSaw = logLines(
          c.logTail(0, 400) + c.logTail(1, 400),
          'peer TLS handshake failed',
        ).some((l) => /plain-text peer/.test(String(l.err)));
        return told && dialedIn && clusterSaw;
      },
      REFUSALS_MS,
    );
    const url = c.endpoints[n3] as string;
    assert.equal(await localValue(url, 'k1'), undefined);
    assert.equal(await localValue(url, 'k4'), undefined);
    await stopProcess(plain.child);
  });
});

describe('peer TLS flags', () => {
  const https3 = 'n1=https://127.0.0.1:2380,n2=https://127.0.0.1:2381';
  const base = {
    name: 'n1',
    listenPeerUrls: 'https://127.0.0.1:2380',
    initialCluster: https3,
  };
  const files = { peerCertFile: pem('peer.crt'), peerKeyFile: pem('peer.key') };
  const refused = (re: RegExp) => (e: unknown) => e instanceof ConfigError && re.test(e.message);

  test('https:// peer URLs need a certificate and key (or --peer-auto-tls)', () => {
    assert.throws(() => resolveStartOptions(base), refused(/--peer-cert-file and --peer-key/));
    assert.equal(resolveStartOptions({ ...base, peerAutoTls: true }).peerAutoTls, true);
  });

  test('peer certificate flags without https:// peer URLs are a mistake, not ignored', () => {
    assert.throws(() => resolveStartOptions({ name: 'n1', ...files }), refused(/https:\/\/ peer/));
    assert.throws(
      () => resolveStartOptions({ name: 'n1', peerAutoTls: true }),
      refused(/https:\/\/ peer/),
    );
  });

  test('--peer-client-cert-auth needs a CA, and a CA alone implies peer verification', () => {
    assert.throws(
      () => resolveStartOptions({ ...base, ...files, peerClientCertAuth: true }),
      refused(/--peer-client-cert-auth needs --peer-trusted-ca-file/),
    );
    const opts = resolveStartOptions({ ...base, ...files, peerTrustedCaFile: pem('ca.crt') });
    assert.equal(opts.peerTls?.clientCertAuth, true);
    assert.equal(opts.peerTls?.trustedCaFile, pem('ca.crt'));
    assert.equal(opts.peerAutoTls, undefined, 'auto TLS is ignored when certificates are given');
  });

  test('--peer-cert-allowed-cn needs a CA to verify against', () => {
    assert.throws(
      () => resolveStartOptions({ ...base, ...files, peerCertAllowedCn: 'n1' }),
      refused(/--peer-cert-allowed-cn .* needs --peer-trusted-ca-file/),
    );
    const ca = pem('ca.crt');
    const cn = 'tenure test peer';
    const opts = resolveStartOptions({
      ...base,
      ...files,
      peerTrustedCaFile: ca,
      peerCertAllowedCn: cn,
    });
    assert.equal(opts.peerTls?.allowedCn, cn);
  });

  test('peer URLs that mix http:// and https:// are refused', () => {
    assert.throws(
      () =>
        resolveStartOptions({
          ...base,
          ...files,
          initialCluster: 'n1=https://127.0.0.1:2380,n2=http://127.0.0.1:2381',
        }),
      refused(/mix http:\/\/ and https:\/\/.*must use https:\/\/ peer URLs, or none/),
    );
  });

  test('tenure start says so and exits 2', async () => {
    const [p] = await freePorts(1);
    const r = await runCli(
      [
        'start',
        '--listen-peer-urls',
        `https://127.0.0.1:${p}`,
        '--data-dir',
        join(tmpdir(), 'never-made'),
      ],
      30_000,
    );
    assert.equal(r.code, 2);
    assert.match(r.stderr, /tenure start: https:\/\/ peer URLs .* need --peer-cert-file/);
  });
});
