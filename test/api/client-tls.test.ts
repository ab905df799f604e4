// TLS on the client port, as etcd 3.4 serves it: Debian's etcdctl (grpc-go) and an HTTPS
// gateway client against a MemoryBackend server with the certificates of testdata/tls
// (testdata/tls/make.sh). With a trusted CA, a client without a certificate, or with one
// from another CA, is refused at the handshake.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as https from 'node:https';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ClientApi } from '../../src/server/api/client-listener.js';
import { startClientApi } from '../../src/server/api/client-listener.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
import { ConfigError, resolveStartOptions } from '../../src/server/config.js';

const ETCDCTL = '/usr/bin/etcdctl';
const DIR = join(process.cwd(), 'testdata', 'tls');
const pem = (name: string): string => join(DIR, name);

function etcdctl(endpoint: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      ETCDCTL,
      [`--endpoints=${endpoint}`, '--dial-timeout=3s', '--command-timeout=5s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)),
    );
  });
}

function gatewayRange(
  port: number,
  cert: { cert: string; key: string } | undefined,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v3/kv/range',
        method: 'POST',
        ca: readFileSync(pem('ca.crt')),
        ...(cert === undefined
          ? {}
          : { cert: readFileSync(cert.cert), key: readFileSync(cert.key) }),
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ key: Buffer.from('tls-key').toString('base64') }));
  });
}

before(() => {
  assert.ok(existsSync(ETCDCTL), `${ETCDCTL} is missing: apt-get install etcd-client`);
});

describe('client certificates required (--client-cert-auth)', () => {
  let api: ClientApi;
  let endpoint: string;
  before(async () => {
    api = await startClientApi({
      backend: new MemoryBackend(),
      urls: ['https://127.0.0.1:0'],
      tls: {
        certFile: pem('server.crt'),
        keyFile: pem('server.key'),
        trustedCaFile: pem('ca.crt'),
        clientCertAuth: true,
      },
    });
    endpoint = `https://127.0.0.1:${api.ports[0]}`;
  });
  after(() => api.close());

  const trusted = [
    '--cacert',
    pem('ca.crt'),
    '--cert',
    pem('client.crt'),
    '--key',
    pem('client.key'),
  ];

  test('etcdctl with a certificate from the trusted CA puts and gets', async () => {
    assert.equal((await etcdctl(endpoint, [...trusted, 'put', 'tls-key', 'v1'])).trim(), 'OK');
    const got = await etcdctl(endpoint, [...trusted, 'get', 'tls-key', '--print-value-only']);
    assert.equal(got.trim(), 'v1');
  });

  test('etcdctl without a client certificate is refused', async () => {
    await assert.rejects(etcdctl(endpoint, ['--cacert', pem('ca.crt'), 'get', 'tls-key']));
  });

  test('etcdctl with a certificate from a foreign CA is refused', async () => {
    const foreign = ['--cert', pem('foreign-client.crt'), '--key', pem('foreign-client.key')];
    await assert.rejects(etcdctl(endpoint, ['--cacert', pem('ca.crt'), ...foreign, 'get', 'k']));
  });

  test('etcdctl speaking plain text to the TLS port is refused', async () => {
    const plain = endpoint.replace('https:', 'http:');
    await assert.rejects(etcdctl(plain, ['get', 'tls-key']));
  });

  test('the JSON gateway is behind the same TLS', async () => {
    const ok = await gatewayRange(api.ports[0] as number, {
      cert: pem('client.crt'),
      key: pem('client.key'),
    });
    assert.equal(ok.status, 200);
    const kvs = (JSON.parse(ok.body) as { kvs?: { value: string }[] }).kvs ?? [];
    assert.equal(Buffer.from(kvs[0]?.value ?? '', 'base64').toString(), 'v1');
    await assert.rejects(gatewayRange(api.ports[0] as number, undefined));
  });
});

describe('server certificate only', () => {
  let api: ClientApi;
  before(async () => {
    api = await startClientApi({
      backend: new MemoryBackend(),
      urls: ['https://127.0.0.1:0'],
      tls: { certFile: pem('server.crt'), keyFile: pem('server.key') },
    });
  });
  after(() => api.close());

  test('etcdctl trusting the CA talks without a client certificate', async () => {
    const endpoint = `https://127.0.0.1:${api.ports[0]}`;
    const ca = ['--cacert', pem('ca.crt')];
    assert.equal((await etcdctl(endpoint, [...ca, 'put', 'a', '1'])).trim(), 'OK');
    assert.equal((await etcdctl(endpoint, [...ca, 'get', 'a', '--print-value-only'])).trim(), '1');
  });

  test('etcdctl that does not trust the CA refuses the server', async () => {
    await assert.rejects(etcdctl(`https://127.0.0.1:${api.ports[0]}`, ['get', 'a']));
  });
});

describe('TLS flags', () => {
  const base = { name: 'n1', initialCluster: 'n1=http://127.0.0.1:2380' };
  test('an https:// client URL needs a certificate and key', () => {
    assert.throws(
      () => resolveStartOptions({ ...base, listenClientUrls: 'https://127.0.0.1:2379' }),
      (e: unknown) => e instanceof ConfigError && /--cert-file and --key-file/.test(e.message),
    );
  });
  test('certificate flags without an https:// URL are a mistake, not ignored', () => {
    assert.throws(
      () => resolveStartOptions({ ...base, certFile: pem('server.crt') }),
      (e: unknown) => e instanceof ConfigError && /https:\/\//.test(e.message),
    );
  });
  test('--client-cert-auth needs a CA, and a CA alone implies client verification', () => {
    const https = { ...base, listenClientUrls: 'https://127.0.0.1:2379' };
    const files = { certFile: pem('server.crt'), keyFile: pem('server.key') };
    assert.throws(() => resolveStartOptions({ ...https, ...files, clientCertAuth: true }));
    const opts = resolveStartOptions({ ...https, ...files, trustedCaFile: pem('ca.crt') });
    assert.equal(opts.clientTls?.clientCertAuth, true);
  });
});
