// The SDK's TLS and auth contract: the same tests against any target that starts one member
// serving TLS on its client port (auth-target.ts), etcd 3.4 today (auth-etcd.test.ts) and
// tenure once its server has the Auth service. The suite sets auth up itself through the SDK
// (root user and role, a user `alice` with READWRITE on the prefix `app/`, AuthEnable), then
// checks what a client with credentials sees: permissions as typed errors, a wrong password at
// connect, and tokens lost with a member restart replaced without the caller noticing, for
// calls (one shared Authenticate) and for a watch. Member restarts are the way to lose tokens
// because etcd keeps simple tokens in memory only; waits are bounded polls on conditions.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  AuthFailedError,
  AuthNotEnabledError,
  PermissionDeniedError,
  RoleAlreadyExistsError,
  RoleNotFoundError,
  RootUserNotExistError,
  TimeoutError,
  UnavailableError,
  UserAlreadyExistsError,
  UserEmptyError,
  UserNotFoundError,
  connect,
  type Client,
  type ClientOptions,
  type TlsOptions,
  type WatchBatch,
  type Watcher,
} from '../../src/client/index.js';
import { until } from '../support/poll.js';
import { tlsFile, type AuthMember, type AuthTarget } from './auth-target.js';

const rootPassword = 'root-secret';
const alicePassword = 'alice-secret';
/** A call expected to fail at the TLS handshake gives up after this long. */
const refusedCallTimeoutMs = 2_000;

const s = (b: Buffer | undefined): string | undefined => b?.toString();

/** Collect a watcher's events (as `key=value`) in the background; ends with the watcher. */
function collect(w: Watcher): string[] {
  const seen: string[] = [];
  void (async () => {
    for await (const batch of w as AsyncIterable<WatchBatch>) {
      for (const e of batch.events) seen.push(`${s(e.kv.key)}=${s(e.kv.value)}`);
    }
  })().catch(() => undefined);
  return seen;
}

export function authContract(target: AuthTarget): void {
  const label = target.label;
  const clients: Client[] = [];
  /** A client closed in the suite's `after`. */
  const open = async (options: ClientOptions): Promise<Client> => {
    const c = await connect(options);
    clients.push(c);
    return c;
  };

  after(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
  });

  describe(`${label}: TLS and auth (server certificate only)`, () => {
    let member: AuthMember;
    let admin: Client;
    const tls: TlsOptions = { caFile: tlsFile('ca.crt') };
    const as = (username: string, password: string): ClientOptions => ({
      endpoints: [member.endpoint],
      tls,
      auth: { username, password },
    });

    before(async () => {
      member = await target.start({ clientCertAuth: false });
      admin = await open({ endpoints: [member.endpoint], tls });
    });
    after(async () => {
      await member?.stop();
    });

    test(`${label}: https:// with the CA, and a bare host:port with tls, talk TLS`, async () => {
      await admin.kv.put('tls/a', '1');
      assert.equal(s((await admin.kv.get('tls/a'))?.value), '1');
      const bare = await open({ endpoints: [member.endpoint.replace('https://', '')], tls });
      assert.equal(s((await bare.kv.get('tls/a'))?.value), '1');
    });

    test(`${label}: plain text to the TLS port, or an untrusted CA, fails`, async () => {
      const plain = await open({ endpoints: [member.endpoint.replace('https:', 'http:')], tls });
      await assert.rejects(
        plain.kv.get('tls/a', { timeoutMs: refusedCallTimeoutMs }),
        (e) => e instanceof TimeoutError || e instanceof UnavailableError,
      );
      const foreign = await open({
        endpoints: [member.endpoint],
        tls: { ca: readFileSync(tlsFile('foreign-ca.crt'), 'utf8') },
      });
      await assert.rejects(foreign.kv.get('tls/a', { timeoutMs: refusedCallTimeoutMs }), (e) => {
        // The deadline's error says what the handshake ran into.
        assert.ok(e instanceof TimeoutError || e instanceof UnavailableError, String(e));
        assert.match((e as Error).message, /certificate/i);
        return true;
      });
    });

    test(`${label}: auth disabled: Authenticate and AuthEnable are refused`, async () => {
      await assert.rejects(admin.auth.authenticate('root', rootPassword), AuthNotEnabledError);
      await assert.rejects(admin.auth.authEnable(), RootUserNotExistError);
    });

    test(`${label}: users, roles and permissions are managed through client.auth`, async () => {
      await admin.auth.userAdd('root', rootPassword);
      await admin.auth.roleAdd('root');
      await admin.auth.userGrantRole('root', 'root');
      await admin.auth.userAdd('alice', alicePassword);
      await admin.auth.roleAdd('app');
      await admin.auth.roleGrantPermission('app', 'app/', 'readwrite', { prefix: true });
      await admin.auth.userGrantRole('alice', 'app');

      await assert.rejects(admin.auth.userAdd('alice', 'x'), UserAlreadyExistsError);
      await assert.rejects(admin.auth.roleAdd('app'), RoleAlreadyExistsError);
      await assert.rejects(admin.auth.userGet('nobody'), UserNotFoundError);
      await assert.rejects(admin.auth.roleGet('nothing'), RoleNotFoundError);
      assert.deepEqual(await admin.auth.userGet('alice'), ['app']);
      const perms = await admin.auth.roleGet('app');
      assert.deepEqual(
        perms.map((p) => [p.type, s(p.key), s(p.rangeEnd)]),
        [['readwrite', 'app/', 'app0']],
      );
      assert.deepEqual((await admin.auth.userList()).sort(), ['alice', 'root']);
      assert.deepEqual((await admin.auth.roleList()).sort(), ['app', 'root']);
    });

    // Connected while auth is off: no token. Once auth is on, its first call is refused for
    // want of a user and it signs in then.
    let early: Client;
    test(`${label}: a client with credentials connects while auth is disabled`, async () => {
      early = await open(as('alice', alicePassword));
      assert.equal(early.authentications, 0);
      await early.kv.put('app/early', '0');
    });

    test(`${label}: auth enabled: a client without credentials is refused`, async () => {
      await admin.auth.authEnable();
      await assert.rejects(admin.kv.put('app/x', '1'), (e) => {
        assert.ok(e instanceof UserEmptyError, String(e));
        assert.equal(e.code, 'USER_EMPTY');
        assert.equal(e.grpcCode, 3);
        return true;
      });
    });

    test(`${label}: a client connected before auth was enabled signs in when refused`, async () => {
      await early.kv.put('app/early', '1');
      assert.equal(early.authentications, 1);
      assert.equal(s((await early.kv.get('app/early'))?.value), '1');
    });

    test(`${label}: a wrong password or an unknown user fails at connect`, async () => {
      for (const [user, password] of [
        ['alice', 'wrong'],
        ['mallory', 'x'],
      ] as const) {
        await assert.rejects(connect(as(user, password)), (e) => {
          assert.ok(e instanceof AuthFailedError, String(e));
          assert.equal(e.code, 'AUTH_FAILED');
          assert.equal(e.grpcCode, 3);
          return true;
        });
      }
    });

    test(`${label}: alice reads and writes inside app/ and is denied outside it`, async () => {
      const alice = await open(as('alice', alicePassword));
      assert.equal(alice.authentications, 1);
      await alice.kv.put('app/a', 'A');
      assert.equal(s((await alice.kv.get('app/a'))?.value), 'A');
      const denied = (e: unknown): boolean => {
        assert.ok(e instanceof PermissionDeniedError, String(e));
        assert.equal(e.code, 'PERMISSION_DENIED');
        assert.equal(e.grpcCode, 7);
        return true;
      };
      await assert.rejects(alice.kv.put('other', '1'), denied);
      await assert.rejects(alice.kv.get('other'), denied);
      await assert.rejects(alice.kv.range('ap', { prefix: true }), denied);
      const w = alice.watch('other');
      denied(await w.closed());

      const root = await open(as('root', rootPassword));
      await root.kv.put('other', 'root was here');
      assert.equal(s((await root.kv.get('other'))?.value), 'root was here');
    });

    test(`${label}: leases and sessions work under auth`, async () => {
      const alice = await open(as('alice', alicePassword));
      const session = await alice.session({ ttlSeconds: 5 });
      try {
        await alice.kv.put('app/leased', 'x', { lease: session.leaseId });
        assert.equal((await alice.kv.get('app/leased'))?.lease, session.leaseId);
        await alice.lease.keepAliveOnce(session.leaseId);
      } finally {
        await session.close();
      }
      assert.equal(await alice.kv.get('app/leased'), undefined);
    });

    test(`${label}: tokens lost in a member restart are replaced unnoticed`, async () => {
      // Three clients, each with its own token: one writes, one reads concurrently, one watches.
      const writer = await open(as('alice', alicePassword));
      const reader = await open(as('alice', alicePassword));
      const watching = await open(as('alice', alicePassword));
      const w = watching.watch('app/w/', { prefix: true });
      const seen = collect(w);
      let ended: string | undefined;
      void w.closed().then((e) => (ended = `ended: ${String(e)}`));
      await w.ready();
      await writer.kv.put('app/w/before', '0');
      await until('the watch sees the first put', () => seen.includes('app/w/before=0'));

      await member.restart();

      // A write refused for its token was not applied: it is sent again after a new Authenticate.
      await writer.kv.put('app/w/after', '1', { timeoutMs: 10_000 });
      assert.equal(writer.authentications, 2);
      // Concurrent calls refused for the same token share one Authenticate.
      const values = await Promise.all(
        Array.from({ length: 8 }, () => reader.kv.get('app/w/after', { timeoutMs: 10_000 })),
      );
      assert.deepEqual(
        values.map((kv) => s(kv?.value)),
        Array.from({ length: 8 }, () => '1'),
      );
      assert.equal(reader.authentications, 2);
      // The watch's stream broke with the restart; made again with the old token, it is
      // cancelled for it, and made again after the watcher's client signed in anew.
      await until('the watch sees the put made after the restart, or ends', () => {
        return ended !== undefined || seen.includes('app/w/after=1');
      });
      assert.equal(ended, undefined, 'the watch ended');
      assert.ok(seen.includes('app/w/after=1'));
      assert.equal(watching.authentications, 2);
      assert.ok(w.reconnects > 0);
      await w.close();
    });

    test(`${label}: a password changed meanwhile is reported, not retried forever`, async () => {
      const alice = await open(as('alice', alicePassword));
      await alice.kv.put('app/b', '1');
      const root = await open(as('root', rootPassword));
      // Changing a password makes etcd forget the user's tokens.
      await root.auth.userChangePassword('alice', 'new-secret');
      await assert.rejects(alice.kv.get('app/b'), AuthFailedError);
      const renewed = await open(as('alice', 'new-secret'));
      assert.equal(s((await renewed.kv.get('app/b'))?.value), '1');
    });
  });

  describe(`${label}: TLS with client certificates (--client-cert-auth)`, () => {
    let member: AuthMember;

    before(async () => {
      member = await target.start({ clientCertAuth: true });
    });
    after(async () => {
      await member?.stop();
    });

    test(`${label}: a client certificate from the CA, as files or PEM, is let in`, async () => {
      const files = await open({
        endpoints: [member.endpoint],
        tls: {
          caFile: tlsFile('ca.crt'),
          certFile: tlsFile('client.crt'),
          keyFile: tlsFile('client.key'),
        },
      });
      await files.kv.put('mtls/a', '1');
      const pem = await open({
        endpoints: [member.endpoint],
        tls: {
          ca: readFileSync(tlsFile('ca.crt'), 'utf8'),
          cert: readFileSync(tlsFile('client.crt')),
          key: readFileSync(tlsFile('client.key'), 'utf8'),
          serverName: 'localhost',
        },
      });
      assert.equal(s((await pem.kv.get('mtls/a'))?.value), '1');
    });

    test(`${label}: a client without a certificate is refused at the handshake`, async () => {
      const anonymous = await open({
        endpoints: [member.endpoint],
        tls: { caFile: tlsFile('ca.crt') },
      });
      await assert.rejects(
        anonymous.kv.get('mtls/a', { timeoutMs: refusedCallTimeoutMs }),
        (e) => e instanceof TimeoutError || e instanceof UnavailableError,
      );
    });
  });
}
