// The SDK's auth and TLS pieces without a real cluster: etcd's auth messages as typed errors, the
// TLS scheme rule, the token source's single flight, and the retry-once rule of connection.ts
// against an in-process gRPC server (127.0.0.1, plain text) whose answers the test chooses.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { TokenSource } from '../../src/client/auth-token.js';
import { parseEndpointUrl } from '../../src/client/endpoints.js';
import { errorFromMessage, isTokenRefusal } from '../../src/client/errors.js';
import { method } from '../../src/client/protos.js';
import { ChannelSecurity } from '../../src/client/tls.js';
import {
  AuthError,
  AuthFailedError,
  AuthNotEnabledError,
  AuthOldRevisionError,
  InvalidAuthTokenError,
  PermissionDeniedError,
  PermissionNotGrantedError,
  RoleAlreadyExistsError,
  RoleNotFoundError,
  RoleNotGrantedError,
  RootRoleNotExistError,
  RootUserNotExistError,
  UserAlreadyExistsError,
  UserEmptyError,
  UserNotFoundError,
  connect,
  type Client,
} from '../../src/client/index.js';
import { tlsFile } from './auth-target.js';

describe('auth errors', () => {
  const cases: ReadonlyArray<readonly [string, number, new (...a: never[]) => AuthError, string]> =
    [
      ['etcdserver: permission denied', 7, PermissionDeniedError, 'PERMISSION_DENIED'],
      [
        'etcdserver: authentication failed, invalid user ID or password',
        3,
        AuthFailedError,
        'AUTH_FAILED',
      ],
      ['etcdserver: invalid auth token', 16, InvalidAuthTokenError, 'INVALID_AUTH_TOKEN'],
      ['etcdserver: authentication is not enabled', 9, AuthNotEnabledError, 'AUTH_NOT_ENABLED'],
      ['etcdserver: user name is empty', 3, UserEmptyError, 'USER_EMPTY'],
      ['etcdserver: revision of auth store is old', 3, AuthOldRevisionError, 'AUTH_OLD_REVISION'],
      ['etcdserver: user name already exists', 9, UserAlreadyExistsError, 'USER_ALREADY_EXISTS'],
      ['etcdserver: user name not found', 9, UserNotFoundError, 'USER_NOT_FOUND'],
      ['etcdserver: role name already exists', 9, RoleAlreadyExistsError, 'ROLE_ALREADY_EXISTS'],
      ['etcdserver: role name not found', 9, RoleNotFoundError, 'ROLE_NOT_FOUND'],
      ['etcdserver: role is not granted to the user', 9, RoleNotGrantedError, 'ROLE_NOT_GRANTED'],
      [
        'etcdserver: permission is not granted to the role',
        9,
        PermissionNotGrantedError,
        'PERMISSION_NOT_GRANTED',
      ],
      ['etcdserver: root user does not exist', 9, RootUserNotExistError, 'ROOT_USER_NOT_EXIST'],
      [
        'etcdserver: root user does not have root role',
        9,
        RootRoleNotExistError,
        'ROOT_ROLE_NOT_EXIST',
      ],
      ['etcdserver: invalid auth management', 3, AuthError, 'INVALID_AUTH_MGMT'],
      ['etcdserver: permission not given', 3, AuthError, 'PERMISSION_NOT_GIVEN'],
      ['etcdserver: role name is empty', 3, AuthError, 'ROLE_EMPTY'],
    ];

  test("etcd's exact messages map to their classes and codes", () => {
    for (const [message, grpcCode, Class, code] of cases) {
      const e = errorFromMessage(message, grpcCode);
      assert.ok(e instanceof Class, `${message} → ${e.name}`);
      assert.ok(e instanceof AuthError);
      assert.equal(e.code, code, message);
      assert.equal(e.grpcCode, grpcCode);
      assert.equal(e.serverMessage, message);
    }
  });

  test('a Go status string (a watch cancel_reason) is read for its code and message', () => {
    const e = errorFromMessage(
      'rpc error: code = Unauthenticated desc = etcdserver: invalid auth token',
      undefined,
    );
    assert.ok(e instanceof InvalidAuthTokenError);
    assert.equal(e.grpcCode, 16);
    assert.equal(e.serverMessage, 'etcdserver: invalid auth token');
    const other = errorFromMessage('rpc error: code = PermissionDenied desc = something new', 2);
    assert.ok(other instanceof PermissionDeniedError);
    assert.equal(other.grpcCode, 7);
  });

  test('unknown messages fall back on the gRPC code', () => {
    assert.ok(errorFromMessage('no such thing', 7) instanceof PermissionDeniedError);
    assert.ok(errorFromMessage('no such thing', 16) instanceof InvalidAuthTokenError);
  });

  test('only token refusals are cured by a new token', () => {
    assert.ok(isTokenRefusal(errorFromMessage('etcdserver: invalid auth token', 16)));
    assert.ok(isTokenRefusal(errorFromMessage('etcdserver: revision of auth store is old', 3)));
    assert.ok(isTokenRefusal(errorFromMessage('etcdserver: user name is empty', 3)));
    assert.ok(!isTokenRefusal(errorFromMessage('etcdserver: permission denied', 7)));
    assert.ok(
      !isTokenRefusal(
        errorFromMessage('etcdserver: authentication failed, invalid user ID or password', 3),
      ),
    );
  });
});

describe('TLS options and endpoints', () => {
  test('https:// is TLS, http:// is not, a bare host:port is TLS iff tls is given', () => {
    const withTls = new ChannelSecurity({ caFile: tlsFile('ca.crt') });
    const without = new ChannelSecurity(undefined);
    const scheme = (e: string) => parseEndpointUrl(e).scheme;
    assert.equal(withTls.secure(scheme('https://127.0.0.1:1')), true);
    assert.equal(withTls.secure(scheme('http://127.0.0.1:1')), false);
    assert.equal(withTls.secure(scheme('127.0.0.1:1')), true);
    assert.equal(without.secure(scheme('https://127.0.0.1:1')), true);
    assert.equal(without.secure(scheme('127.0.0.1:1')), false);
    assert.equal(parseEndpointUrl('https://127.0.0.1:2379/').hostPort, '127.0.0.1:2379');
  });

  test('bad TLS options are refused when the client is made', () => {
    assert.throws(() => new ChannelSecurity({ certFile: tlsFile('client.crt') }), /cert and key/);
    assert.throws(
      () => new ChannelSecurity({ caFile: '/nonexistent/ca.pem' }),
      /tls\.caFile \/nonexistent\/ca\.pem/,
    );
    assert.throws(() => new ChannelSecurity({ ca: 'x', caFile: tlsFile('ca.crt') }), /both/);
  });
});

describe('TokenSource', () => {
  const never = new AbortController().signal;

  test('concurrent callers share one Authenticate; a replaced token is not refreshed', async () => {
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tokens = new TokenSource(async () => {
      calls++;
      await gate;
      return `t${calls}`;
    });
    const first = Promise.all(Array.from({ length: 5 }, () => tokens.get(never)));
    release();
    assert.deepEqual(await first, ['t1', 't1', 't1', 't1', 't1']);
    assert.equal(calls, 1);
    // Five callers refused with t1: one Authenticate.
    const refreshed = await Promise.all(
      Array.from({ length: 5 }, () => tokens.refresh('t1', never)),
    );
    assert.deepEqual(refreshed, ['t2', 't2', 't2', 't2', 't2']);
    assert.equal(calls, 2);
    // A late refusal of t1: t2 replaced it already.
    assert.equal(await tokens.refresh('t1', never), 't2');
    assert.equal(calls, 2);
    assert.equal(tokens.authentications, 2);
  });

  test("one caller's abort does not cancel the shared Authenticate", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tokens = new TokenSource(async () => {
      await gate;
      return 'tok';
    });
    const impatient = new AbortController();
    const a = tokens.get(impatient.signal);
    const b = tokens.get(never);
    impatient.abort(new Error('gave up'));
    await assert.rejects(a, /gave up/);
    release();
    assert.equal(await b, 'tok');
  });

  test('auth disabled: no token until a refusal; failures reach the callers', async () => {
    let answer: 'disabled' | 'failed' | 'ok' = 'disabled';
    let calls = 0;
    const tokens = new TokenSource(() => {
      calls++;
      if (answer === 'disabled')
        return Promise.reject(errorFromMessage('etcdserver: authentication is not enabled', 9));
      if (answer === 'failed')
        return Promise.reject(
          errorFromMessage('etcdserver: authentication failed, invalid user ID or password', 3),
        );
      return Promise.resolve('tok');
    });
    assert.equal(await tokens.get(never), undefined);
    assert.equal(await tokens.get(never), undefined);
    assert.equal(calls, 1);
    answer = 'failed';
    await assert.rejects(tokens.refresh(undefined, never), AuthFailedError);
    answer = 'ok';
    assert.equal(await tokens.refresh(undefined, never), 'tok');
  });
});

/** A KV and Auth service whose refusals the test sets; it records the token of every call. */
class FakeServer {
  readonly server = new grpc.Server();
  port = 0;
  authenticates = 0;
  /** The next this many Range / Put calls are refused with `invalid auth token`. */
  refuseRanges = 0;
  refusePuts = 0;
  readonly rangeTokens: string[] = [];
  readonly putTokens: string[] = [];

  constructor() {
    type Unary = grpc.handleUnaryCall<unknown, unknown>;
    const refused = {
      code: grpc.status.UNAUTHENTICATED,
      details: 'etcdserver: invalid auth token',
    };
    const token = (call: grpc.ServerUnaryCall<unknown, unknown>): string =>
      String(call.metadata.get('token')[0] ?? '');
    const header = { revision: '1' };
    const range: Unary = (call, cb) => {
      this.rangeTokens.push(token(call));
      if (this.refuseRanges > 0) {
        this.refuseRanges--;
        cb(refused);
      } else cb(null, { header, kvs: [], count: '0' });
    };
    const put: Unary = (call, cb) => {
      this.putTokens.push(token(call));
      if (this.refusePuts > 0) {
        this.refusePuts--;
        cb(refused);
      } else cb(null, { header });
    };
    const authenticate: Unary = (_call, cb) => {
      this.authenticates++;
      cb(null, { header, token: `tok${this.authenticates}` });
    };
    const def = (name: Parameters<typeof method>[0]) =>
      method(name) as unknown as grpc.MethodDefinition<unknown, unknown>;
    this.server.addService(
      { Range: def('KV.Range'), Put: def('KV.Put') },
      { Range: range, Put: put },
    );
    this.server.addService(
      { Authenticate: def('Auth.Authenticate') },
      { Authenticate: authenticate },
    );
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, port) => {
        if (e !== null) reject(e);
        else {
          this.port = port;
          resolve();
        }
      }),
    );
  }
}

describe('re-authentication in calls (connection.ts)', () => {
  const fake = new FakeServer();
  let client: Client;
  before(async () => {
    await fake.start();
    client = await connect({
      endpoints: [`http://127.0.0.1:${fake.port}`],
      auth: { username: 'u', password: 'p' },
    });
  });
  after(async () => {
    await client?.close();
    fake.server.forceShutdown();
  });

  test('connect authenticates once; every call carries the token', async () => {
    assert.equal(fake.authenticates, 1);
    await client.kv.get('k');
    assert.deepEqual(fake.rangeTokens, ['tok1']);
  });

  test('a write refused for its token is sent again once, with a fresh token', async () => {
    fake.refusePuts = 1;
    await client.kv.put('k', 'v');
    assert.deepEqual(fake.putTokens, ['tok1', 'tok2']);
    assert.equal(fake.authenticates, 2);
  });

  test('a fresh token refused again is thrown, not retried', async () => {
    fake.rangeTokens.length = 0;
    fake.refuseRanges = 2;
    await assert.rejects(client.kv.get('k'), InvalidAuthTokenError);
    assert.deepEqual(fake.rangeTokens, ['tok2', 'tok3']);
    assert.equal(fake.authenticates, 3);
  });

  test('concurrent calls refused with one token share one Authenticate', async () => {
    fake.rangeTokens.length = 0;
    fake.refuseRanges = 4;
    await Promise.all(Array.from({ length: 4 }, () => client.kv.get('k')));
    assert.equal(fake.authenticates, 4);
    assert.deepEqual(fake.rangeTokens.slice(4), ['tok4', 'tok4', 'tok4', 'tok4']);
    assert.equal(client.authentications, 4);
  });
});
