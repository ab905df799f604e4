// The dashboard and /metrics obey the client port's TLS (etcd serves /metrics on its client
// URLs, so behind their certificates): a member with https:// client URLs and
// --client-cert-auth answers /metrics, /ui/ and /ui/api/state only to a client presenting a
// certificate from the trusted CA; an https:// --listen-metrics-urls has the same rule; an
// http:// one is the plain, separate listener etcd's --listen-metrics-urls allows.
// Certificates: testdata/tls (make.sh).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePorts } from '../../src/launcher/ports.js';
import { resolveStartOptions } from '../../src/server/config.js';
import { serveMember, type RunningMember } from '../../src/server/serve.js';
import { eventually } from '../support/poll.js';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const DIR = join(process.cwd(), 'testdata', 'tls');
const pem = (name: string): Buffer => readFileSync(join(DIR, name));

interface Got {
  readonly status: number;
  readonly type: string;
  readonly body: string;
}

/** GET over https with the test CA, with or without a client certificate. */
function get(url: string, withCert: boolean, foreign = false): Promise<Got> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'GET',
        ca: pem('ca.crt'),
        ...(withCert
          ? foreign
            ? { cert: pem('foreign-client.crt'), key: pem('foreign-client.key') }
            : { cert: pem('client.crt'), key: pem('client.key') }
          : {}),
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers['content-type'] ?? ''),
            body,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('a member with client TLS and --client-cert-auth', () => {
  let dir: string;
  let member: RunningMember;
  let client: string;
  let secureMetrics: string;
  let plainMetrics: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tenure-metrics-tls-'));
    const [clientPort, peerPort, securePort, plainPort] = await freePorts(4);
    member = await serveMember(
      resolveStartOptions({
        name: 'm1',
        dataDir: join(dir, 'm1'),
        listenClientUrls: `https://127.0.0.1:${String(clientPort)}`,
        advertiseClientUrls: `https://127.0.0.1:${String(clientPort)}`,
        listenPeerUrls: `http://127.0.0.1:${String(peerPort)}`,
        listenMetricsUrls:
          `https://127.0.0.1:${String(securePort)},` + `http://127.0.0.1:${String(plainPort)}`,
        certFile: join(DIR, 'server.crt'),
        keyFile: join(DIR, 'server.key'),
        trustedCaFile: join(DIR, 'ca.crt'),
        clientCertAuth: true,
      }),
      quiet,
    );
    client = member.clientUrls[0] as string;
    [secureMetrics, plainMetrics] = member.metricsUrls as [string, string];
    await eventually('a leader', async () =>
      (await get(`${client}/health`, true)).status === 200 ? true : undefined,
    );
  });
  after(async () => {
    await member.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('/metrics, /ui/ and /ui/api/state on the client port need a trusted certificate', async () => {
    const metrics = await get(`${client}/metrics`, true);
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^etcd_server_has_leader 1$/m);
    const page = await get(`${client}/ui/`, true);
    assert.equal(page.status, 200);
    assert.match(page.type, /^text\/html/);
    const state = await get(`${client}/ui/api/state`, true);
    assert.equal(state.status, 200);
    assert.ok(Array.isArray((JSON.parse(state.body) as { members?: unknown }).members));
    for (const path of ['/metrics', '/ui/', '/ui/api/state']) {
      await assert.rejects(get(`${client}${path}`, false), `${path} without a certificate`);
      await assert.rejects(get(`${client}${path}`, true, true), `${path} with a foreign one`);
    }
  });

  test('an https:// --listen-metrics-urls has the client port rule', async () => {
    assert.match(secureMetrics, /^https:/);
    const metrics = await get(`${secureMetrics}/metrics`, true);
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^etcd_server_has_leader 1$/m);
    await assert.rejects(get(`${secureMetrics}/metrics`, false));
  });

  test('an http:// --listen-metrics-urls is a plain listener for /metrics alone', async () => {
    assert.match(plainMetrics, /^http:/);
    const res = await fetch(`${plainMetrics}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^etcd_server_has_leader 1$/m);
    assert.equal((await fetch(`${plainMetrics}/ui/`)).status, 404, 'no dashboard there');
  });
});
