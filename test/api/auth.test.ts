// etcd Auth on tenure's client API, driven by Debian's etcdctl 3.4 and raw gRPC: CN-based auth with
// --client-cert-auth (the certificate's CN is the user when no token is sent; a token wins), user
// and password over TLS, the gateway's Authorization header (and the CN never used through it),
// grants etcd 3.4.23 would have crashed on or stored, and the auth store surviving a restart of a
// real member. The wider request-by-request comparison with etcd is test/compat/auth-differential.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as https from 'node:https';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { ClientApi } from '../../src/server/api/client-listener.js';
import { startClientApi } from '../../src/server/api/client-listener.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
import { serviceDefinition } from '../../src/server/api/protos.js';
import { repoRoot } from '../support/paths.js';
import { join } from 'node:path';
import { startCluster } from '../cluster/cluster.js';
import { EtcdGrpc } from '../compat/grpc-client.js';

const ETCDCTL = '/usr/bin/etcdctl';
const pem = (name: string): string => join(repoRoot(), 'testdata', 'tls', name);

interface Ran {
  readonly code: number;
  readonly out: string;
}

function etcdctl(endpoint: string, args: readonly string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      ETCDCTL,
      [`--endpoints=${endpoint}`, '--dial-timeout=3s', '--command-timeout=5s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({
          code: err === null ? 0 : ((err.code as number | undefined) ?? 1),
          out: stdout + stderr,
        }),
    );
  });
}

const tlsAs = (who: 'client' | 'client-alice'): string[] => [
  `--cacert=${pem('ca.crt')}`,
  `--cert=${pem(`${who}.crt`)}`,
  `--key=${pem(`${who}.key`)}`,
];

function gateway(
  port: number,
  path: string,
  body: object,
  headers: Readonly<Record<string, string>> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca: readFileSync(pem('ca.crt')),
        cert: readFileSync(pem('client.crt')),
        key: readFileSync(pem('client.key')),
        headers,
        agent: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

before(() => {
  assert.ok(existsSync(ETCDCTL), `${ETCDCTL} is missing: apt-get install etcd-client`);
});

describe('auth over TLS with --client-cert-auth', () => {
  let api: ClientApi;
  let endpoint: string;
  let port: number;
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
      config: { clientCertAuth: true, bcryptCost: 4 },
    });
    port = api.ports[0] as number;
    endpoint = `https://127.0.0.1:${port}`;
    const root = tlsAs('client');
    for (const args of [
      ['user', 'add', 'root', '--no-password'],
      ['user', 'grant-role', 'root', 'root'],
      ['user', 'add', 'alice', '--no-password'],
      ['user', 'add', 'bob:bobpw'],
      ['role', 'add', 'apps'],
      ['role', 'grant-permission', 'apps', 'readwrite', 'app/', '--prefix'],
      ['user', 'grant-role', 'alice', 'apps'],
      ['auth', 'enable'],
    ]) {
      const r = await etcdctl(endpoint, [...root, ...args]);
      assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.out}`);
    }
  });
  after(() => api.close());

  test("the certificate's CN is the user: CN=root may do anything", async () => {
    const put = await etcdctl(endpoint, [...tlsAs('client'), 'put', 'anywhere', 'v']);
    assert.equal(put.code, 0, put.out);
    const users = await etcdctl(endpoint, [...tlsAs('client'), 'user', 'list']);
    assert.match(users.out, /alice\nbob\nroot/);
  });

  test('CN=alice may write her prefix and nothing else', async () => {
    const ok = await etcdctl(endpoint, [...tlsAs('client-alice'), 'put', 'app/x', 'v']);
    assert.equal(ok.code, 0, ok.out);
    const denied = await etcdctl(endpoint, [...tlsAs('client-alice'), 'put', 'other', 'v']);
    assert.notEqual(denied.code, 0);
    assert.match(denied.out, /etcdserver: permission denied/);
    const admin = await etcdctl(endpoint, [...tlsAs('client-alice'), 'user', 'list']);
    assert.match(admin.out, /etcdserver: permission denied/);
  });

  test('Lock runs as its caller: alice may lock inside her prefix only', async () => {
    const ok = await etcdctl(endpoint, [
      ...tlsAs('client-alice'),
      'lock',
      'app/locks',
      'echo',
      'held',
    ]);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /held/);
    const denied = await etcdctl(endpoint, [...tlsAs('client-alice'), 'lock', 'ops', 'echo', 'x']);
    assert.notEqual(denied.code, 0);
    assert.match(denied.out, /etcdserver: permission denied/);
    const elect = await etcdctl(endpoint, [...tlsAs('client-alice'), 'elect', '-l', 'ops']);
    assert.match(elect.out, /etcdserver: permission denied/);
  });

  test('the Lock and Election services run as their caller', async () => {
    const client = new grpc.Client(
      `127.0.0.1:${port}`,
      grpc.credentials.createSsl(
        readFileSync(pem('ca.crt')),
        readFileSync(pem('client-alice.key')),
        readFileSync(pem('client-alice.crt')),
      ),
    );
    try {
      const lease = await rawUnary(client, 'etcdserverpb.Lease', 'LeaseGrant', { TTL: '30' });
      const id = lease.ok?.['ID'];
      const held = await rawUnary(client, 'v3lockpb.Lock', 'Lock', {
        name: Buffer.from('app/svc'),
        lease: id,
      });
      assert.ok(held.ok !== undefined, JSON.stringify(held));
      const denied = { error: { code: 'UNKNOWN', details: 'etcdserver: permission denied' } };
      const other = { name: Buffer.from('ops'), lease: id };
      assert.deepEqual(await rawUnary(client, 'v3lockpb.Lock', 'Lock', other), denied);
      assert.deepEqual(
        await rawUnary(client, 'v3lockpb.Lock', 'Unlock', { key: Buffer.from('ops/1') }),
        denied,
      );
      const campaign = { ...other, value: Buffer.from('me') };
      assert.deepEqual(
        await rawUnary(client, 'v3electionpb.Election', 'Campaign', campaign),
        denied,
      );
      assert.deepEqual(
        await rawUnary(client, 'v3electionpb.Election', 'Leader', { name: Buffer.from('ops') }),
        denied,
      );
    } finally {
      client.close();
    }
  });

  test('a token wins over the certificate: --user bob with CN=root is bob', async () => {
    const r = await etcdctl(endpoint, [...tlsAs('client'), '--user=bob:bobpw', 'put', 'k', 'v']);
    assert.notEqual(r.code, 0);
    assert.match(r.out, /etcdserver: permission denied/);
    const wrong = await etcdctl(endpoint, [...tlsAs('client'), '--user=bob:nope', 'get', 'k']);
    assert.match(wrong.out, /authentication failed, invalid user ID or password/);
    const cn = await etcdctl(endpoint, [...tlsAs('client'), '--user=alice:x', 'get', 'k']);
    assert.match(cn.out, /password was given for no password user/);
  });

  test('the gateway takes the Authorization header and never the CN', async () => {
    const noToken = await gateway(port, '/v3/kv/range', { key: b64('anywhere') });
    assert.equal(noToken.status, 400, noToken.body);
    assert.match(noToken.body, /etcdserver: user name is empty/);
    const auth = await gateway(port, '/v3/auth/authenticate', { name: 'bob', password: 'bobpw' });
    assert.equal(auth.status, 200, auth.body);
    const token = (JSON.parse(auth.body) as { token: string }).token;
    assert.match(token, /^[A-Za-z]{16}\.[0-9]+$/);
    const denied = await gateway(
      port,
      '/v3/kv/range',
      { key: b64('anywhere') },
      {
        authorization: token,
      },
    );
    assert.equal(denied.status, 403, denied.body);
    assert.match(denied.body, /etcdserver: permission denied/);
  });

  test('grants with no permission or a backwards range are refused (etcd 3.4.25+)', async () => {
    const client = new grpc.Client(
      `127.0.0.1:${port}`,
      grpc.credentials.createSsl(
        readFileSync(pem('ca.crt')),
        readFileSync(pem('client.key')),
        readFileSync(pem('client.crt')),
      ),
    );
    try {
      const none = await grant(client, { name: 'apps' });
      assert.deepEqual(none, {
        error: { code: 'INVALID_ARGUMENT', details: 'etcdserver: permission not given' },
      });
      const backwards = await grant(client, {
        name: 'apps',
        perm: { permType: 'READ', key: Buffer.from('b'), range_end: Buffer.from('a') },
      });
      assert.deepEqual(backwards, {
        error: { code: 'INVALID_ARGUMENT', details: 'etcdserver: invalid auth management' },
      });
    } finally {
      client.close();
    }
  });
});

/** RoleGrantPermission on a TLS channel (the compat client speaks plain text). */
function grant(client: grpc.Client, request: object): Promise<unknown> {
  return rawUnary(client, 'etcdserverpb.Auth', 'RoleGrantPermission', request);
}

function rawUnary(
  client: grpc.Client,
  service: string,
  method: string,
  request: object,
): Promise<{
  ok?: Record<string, unknown>;
  error?: { code: string | undefined; details: string };
}> {
  const m = serviceDefinition(service)[method];
  assert.ok(m !== undefined);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      request,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err, value) =>
        resolve(
          err === null
            ? { ok: value as Record<string, unknown> }
            : { error: { code: grpc.status[err.code], details: err.details } },
        ),
    );
  });
}

test('users, roles and auth survive a restart of a member', async () => {
  const cluster = await startCluster({ kind: 'tenure', size: 1 });
  try {
    const endpoint = cluster.endpoints[0] as string;
    const client = new EtcdGrpc(endpoint);
    for (const [name, req] of [
      ['UserAdd', { name: 'root', password: 'pw' }],
      ['UserGrantRole', { user: 'root', role: 'root' }],
      ['AuthEnable', {}],
    ] as const) {
      const r = await client.unary('Auth', name, req);
      assert.ok('ok' in r, `${name}: ${JSON.stringify(r)}`);
    }
    client.close();
    await cluster.kill(0, 'SIGTERM');
    await cluster.restart(0);
    await cluster.waitReady();
    const again = new EtcdGrpc(endpoint);
    try {
      const anonymous = await again.unary('Auth', 'UserList', {});
      assert.deepEqual(anonymous, {
        error: { code: 'INVALID_ARGUMENT', details: 'etcdserver: user name is empty' },
      });
      const login = await again.unary('Auth', 'Authenticate', { name: 'root', password: 'pw' });
      assert.ok('ok' in login, JSON.stringify(login));
      const token = login.ok['token'] as string;
      const list = await again.unary('Auth', 'UserList', {}, undefined, { token });
      assert.deepEqual('ok' in list ? list.ok['users'] : list, ['root']);
    } finally {
      again.close();
    }
  } finally {
    await cluster.stop();
  }
});
