// --auto-tls and --peer-auto-tls as in etcd 3.4: self-signed certificates for the listen URLs'
// hosts in <data-dir>/fixtures/{client,peer}/, reused at the next start. A 3-member cluster on
// https:// client and peer URLs with nothing but the two flags elects and serves Debian's etcdctl,
// which must skip verification (nobody signed the certificate); a restarted member keeps its
// certificate. Every process is stopped by PID.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startCluster, type Cluster } from '../../src/launcher/cluster.js';
import { selfCert, urlHosts } from '../../src/server/auto-tls.js';
import { ConfigError, resolveStartOptions } from '../../src/server/config.js';

const ETCDCTL = '/usr/bin/etcdctl';
const READY_MS = 60_000;

function etcdctl(endpoints: readonly string[], args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      ETCDCTL,
      [`--endpoints=${endpoints.join(',')}`, '--dial-timeout=3s', '--command-timeout=5s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)),
    );
  });
}

/** etcdctl 3.4 speaks TLS without certificate files only with transport security turned on. */
const skipVerify = ['--insecure-transport=false', '--insecure-skip-tls-verify'];

describe('selfCert', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tenure-selfcert-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('makes a certificate for the hosts, then reuses it', async () => {
    const made = await selfCert(dir, ['127.0.0.1', 'localhost'], ['serverAuth', 'clientAuth']);
    assert.equal(made.created, true);
    const cert = new X509Certificate(readFileSync(made.certFile));
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.match(cert.subjectAltName ?? '', /DNS:localhost/);
    assert.ok(cert.issuer === cert.subject && cert.verify(cert.publicKey), 'not self-signed');
    assert.deepEqual(cert.keyUsage?.sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
    assert.equal(statSync(made.keyFile).mode & 0o077, 0, 'the key is readable by others');
    const again = await selfCert(dir, ['10.0.0.1'], ['serverAuth']);
    assert.equal(again.created, false);
    assert.ok(readFileSync(again.certFile).equals(readFileSync(made.certFile)));
  });

  test('the hosts of the listen URLs, once each, without brackets', () => {
    assert.deepEqual(
      urlHosts(['https://127.0.0.1:1', 'https://127.0.0.1:2', 'https://[::1]:3', 'https://a:4']),
      ['127.0.0.1', '::1', 'a'],
    );
  });
});

describe('auto TLS flags', () => {
  const https = {
    name: 'n1',
    listenClientUrls: 'https://127.0.0.1:2379',
    listenPeerUrls: 'https://127.0.0.1:2380',
  };
  const refused = (re: RegExp) => (e: unknown) => e instanceof ConfigError && re.test(e.message);

  test('the flags alone serve https:// URLs; certificates given win', () => {
    const auto = resolveStartOptions({ ...https, autoTls: true, peerAutoTls: true });
    assert.equal(auto.clientAutoTls, true);
    assert.equal(auto.peerAutoTls, true);
    const given = resolveStartOptions({
      ...https,
      autoTls: true,
      peerAutoTls: true,
      certFile: 'c.crt',
      keyFile: 'c.key',
      peerCertFile: 'p.crt',
      peerKeyFile: 'p.key',
    });
    assert.equal(given.clientAutoTls, undefined);
    assert.equal(given.peerAutoTls, undefined);
    assert.equal(given.peerTls?.certFile, 'p.crt');
  });

  test('without https:// URLs, or with a CA to verify by, they are refused', () => {
    assert.throws(() => resolveStartOptions({ name: 'n1', autoTls: true }), refused(/https:\/\//));
    assert.throws(
      () => resolveStartOptions({ name: 'n1', peerAutoTls: true }),
      refused(/https:\/\/ peer/),
    );
    assert.throws(
      () =>
        resolveStartOptions({
          ...https,
          autoTls: true,
          peerAutoTls: true,
          peerTrustedCaFile: 'ca.crt',
        }),
      refused(/--peer-auto-tls makes a self-signed certificate/),
    );
    assert.throws(
      () =>
        resolveStartOptions({ ...https, peerAutoTls: true, autoTls: true, clientCertAuth: true }),
      refused(/--auto-tls makes a self-signed certificate/),
    );
  });
});

describe('a cluster with --auto-tls and --peer-auto-tls', { timeout: 240_000 }, () => {
  let c: Cluster;
  before(async () => {
    assert.ok(existsSync(ETCDCTL), `${ETCDCTL} is missing: apt-get install etcd-client`);
    c = await startCluster({
      kind: 'tenure',
      size: 3,
      tls: { client: 'auto', peer: 'auto' },
      readyTimeoutMs: READY_MS,
    });
  });
  after(() => c?.stop());

  test('elects, and serves etcdctl over TLS when it skips verification', async () => {
    assert.ok(c.endpoints.every((u) => u.startsWith('https://')));
    assert.ok(c.peerUrls.every((u) => u.startsWith('https://')));
    assert.equal((await etcdctl(c.endpoints, [...skipVerify, 'put', 'auto', 'tls'])).trim(), 'OK');
    const got = await etcdctl([c.endpoints[2] as string], [...skipVerify, 'get', 'auto']);
    assert.match(got, /^auto\ntls$/m);
    // Nobody signed the certificate: a client that verifies refuses it.
    await assert.rejects(
      etcdctl([c.endpoints[0] as string], ['--insecure-transport=false', 'get', 'auto']),
    );
  });

  test('writes the certificates to <data-dir>/fixtures, reused after a restart', async () => {
    const dir = c.dataDirs[1] as string;
    const clientCert = join(dir, 'fixtures', 'client', 'cert.pem');
    const peerCert = join(dir, 'fixtures', 'peer', 'cert.pem');
    for (const f of [clientCert, peerCert, join(dir, 'fixtures', 'peer', 'key.pem')])
      assert.ok(existsSync(f), `${f} is missing`);
    const peer = new X509Certificate(readFileSync(peerCert));
    assert.match(peer.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    const before = [readFileSync(clientCert), readFileSync(peerCert)];
    await c.kill(1, 'SIGTERM');
    await c.restart(1);
    await c.waitReady(READY_MS);
    assert.ok(readFileSync(clientCert).equals(before[0] as Buffer), 'client certificate remade');
    assert.ok(readFileSync(peerCert).equals(before[1] as Buffer), 'peer certificate remade');
    assert.match(c.logTail(1, 200), /peer auto TLS: reused/);
  });
});
