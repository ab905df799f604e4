// The Auth differential script: users, roles and grants, AuthEnable, Authenticate, then permitted
// and forbidden Range/Put/DeleteRange/Txn/Watch/Lease/Compact/Maintenance calls, token expiry,
// a password change and a user deleted while its token is in use — each response or gRPC status
// recorded in the normalised form of differential.ts, plus: a simple token becomes "TOKEN" (its
// letters are random and its index is the cluster's own).
//
// Run against a fresh 3-member cluster started with `--auth-token-ttl=2` (so that one step can
// outwait a token), on member 0. etcd 3.4.23 crashes on RoleGrantPermission without a `perm`
// (a nil dereference, fixed in 3.4.25), so the script never sends one; tenure's answer to it is
// tested in test/api/auth.test.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { EtcdGrpc, type BidiStream, type Message, type Outcome } from './grpc-client.js';
import { Normaliser, type Recording } from './differential.js';

/** The cluster's --auth-token-ttl for this script, in seconds. */
export const AUTH_SCRIPT_TOKEN_TTL_SECONDS = 2;

const b = (s: string): Buffer => Buffer.from(s, 'utf8');
const SIMPLE_TOKEN = /^[A-Za-z]{16}\.[0-9]+$/;

/** A lease ID from a grant's response (int64 fields arrive as decimal strings). */
function idOf(m: Message | undefined): string {
  const id = m?.['ID'];
  return typeof id === 'string' ? id : '0';
}

/** The header revision of a response (int64 fields arrive as decimal strings). */
function headerRevision(m: Message): bigint {
  const header = m['header'] as Message | undefined;
  const revision = header?.['revision'];
  if (typeof revision !== 'string') throw new Error(`no header revision in ${JSON.stringify(m)}`);
  return BigInt(revision);
}

export async function runAuthScript(endpoint: string): Promise<Recording> {
  const client = new EtcdGrpc(endpoint);
  const n = new Normaliser();
  const recording: Recording = [];
  const streams: BidiStream[] = [];
  const tokens = new Map<string, string>();

  const normalise = (m: Message): unknown => {
    const v = n.value(m) as Record<string, unknown>;
    if (typeof v['token'] === 'string' && SIMPLE_TOKEN.test(v['token'])) v['token'] = 'TOKEN';
    return v;
  };
  const record = (step: string, outcome: Outcome): Message | undefined => {
    if ('error' in outcome) {
      recording.push({ step, result: { error: outcome.error } });
      return undefined;
    }
    recording.push({ step, result: normalise(outcome.ok) });
    return outcome.ok;
  };
  /** A call as `who` (a user whose token is held, 'nobody', or a literal token '=<text>'). */
  const call = async (
    step: string,
    service: string,
    name: string,
    request: Message,
    who = 'nobody',
  ): Promise<Message | undefined> => {
    let md: Record<string, string> = {};
    if (who.startsWith('=')) md = { token: who.slice(1) };
    else if (who !== 'nobody') {
      const token = tokens.get(who);
      if (token === undefined) throw new Error(`no token for ${who}`);
      md = { token };
    }
    return record(step, await client.unary(service, name, request, undefined, md));
  };
  const auth = (step: string, name: string, request: Message, who?: string) =>
    call(step, 'Auth', name, request, who);
  const kv = (step: string, name: string, request: Message, who?: string) =>
    call(step, 'KV', name, request, who);
  const login = async (step: string, user: string, password: string): Promise<void> => {
    const r = await auth(step, 'Authenticate', { name: user, password });
    const token = r?.['token'];
    if (typeof token === 'string') tokens.set(user, token);
  };
  /** One watch create on a stream of its own; records the first response. */
  const watch = async (step: string, create: Message, who: string): Promise<void> => {
    const token = tokens.get(who);
    const s = client.stream('Watch', 'Watch', token === undefined ? {} : { token });
    streams.push(s);
    s.send({ create_request: create });
    const [first] = await s.take((batch) => batch.length > 0, step);
    recording.push({ step, result: first === undefined ? null : normalise(first) });
  };
  const rw = (permType: string, key: string, rangeEnd = ''): Message => ({
    permType,
    key: b(key),
    range_end: b(rangeEnd),
  });

  try {
    const first = await client.unary('KV', 'Range', { key: b('k') });
    if (!('ok' in first)) throw new Error(`first Range failed: ${JSON.stringify(first)}`);
    n.setBase(headerRevision(first.ok));

    // ---- A fresh store: no users, no roles, and AuthEnable's two rules.
    await auth('user list on a fresh store', 'UserList', {});
    await auth('role list on a fresh store', 'RoleList', {});
    await auth('auth enable without a root user', 'AuthEnable', {});
    await auth('user add root', 'UserAdd', { name: 'root', password: 'rootpw' });
    await auth('auth enable without the root role', 'AuthEnable', {});
    await auth('user add with an empty name', 'UserAdd', { name: '', password: 'x' });
    await auth('user add root again', 'UserAdd', { name: 'root', password: 'other' });
    await auth('user grant role root (no such role needed)', 'UserGrantRole', {
      user: 'root',
      role: 'root',
    });
    await auth('user grant role to a missing user', 'UserGrantRole', { user: 'nobody', role: 'x' });
    await auth('user grant a missing role', 'UserGrantRole', { user: 'root', role: 'missing' });

    // ---- Roles and grants.
    await auth('role add with an empty name', 'RoleAdd', { name: '' });
    for (const role of ['reader', 'writer', 'rw', 'empty'])
      await auth(`role add ${role}`, 'RoleAdd', { name: role });
    await auth('role add reader again', 'RoleAdd', { name: 'reader' });
    await auth('grant reader READ prefix r/', 'RoleGrantPermission', {
      name: 'reader',
      perm: rw('READ', 'r/', 'r0'),
    });
    await auth('grant reader READ key a', 'RoleGrantPermission', {
      name: 'reader',
      perm: rw('READ', 'a'),
    });
    await auth('grant writer WRITE prefix w/', 'RoleGrantPermission', {
      name: 'writer',
      perm: rw('WRITE', 'w/', 'w0'),
    });
    await auth('grant rw READ k/ to k/m', 'RoleGrantPermission', {
      name: 'rw',
      perm: rw('READ', 'k/', 'k/m'),
    });
    await auth('grant rw READWRITE k/ to k/m: replaces the type', 'RoleGrantPermission', {
      name: 'rw',
      perm: rw('READWRITE', 'k/', 'k/m'),
    });
    await auth('grant rw READWRITE k/m to k0', 'RoleGrantPermission', {
      name: 'rw',
      perm: rw('READWRITE', 'k/m', 'k0'),
    });
    await auth('grant rw READ from key z', 'RoleGrantPermission', {
      name: 'rw',
      perm: rw('READ', 'z', '\0'),
    });
    await auth('grant to a missing role', 'RoleGrantPermission', {
      name: 'missing',
      perm: rw('READ', 'x'),
    });
    await auth('role get rw: sorted by key', 'RoleGet', { role: 'rw' });
    await auth('role get a missing role', 'RoleGet', { role: 'missing' });
    await auth('revoke a permission not granted', 'RoleRevokePermission', {
      role: 'rw',
      key: b('k/'),
    });
    await auth('revoke from a missing role', 'RoleRevokePermission', {
      role: 'missing',
      key: b('k/'),
    });
    await auth('role list', 'RoleList', {});

    // ---- Users.
    await auth('user add alice', 'UserAdd', { name: 'alice', password: 'apw' });
    await auth('user add bob', 'UserAdd', { name: 'bob', password: 'bpw' });
    await auth('user add carol without a password', 'UserAdd', {
      name: 'carol',
      options: { no_password: true },
    });
    await auth('user add dave with an empty password', 'UserAdd', { name: 'dave', password: '' });
    for (const [user, role] of [
      ['alice', 'writer'],
      ['alice', 'reader'],
      ['bob', 'rw'],
      ['carol', 'reader'],
      ['dave', 'empty'],
    ] as const)
      await auth(`grant ${role} to ${user}`, 'UserGrantRole', { user, role });
    await auth('grant reader to alice again', 'UserGrantRole', { user: 'alice', role: 'reader' });
    await auth('user get alice: roles sorted', 'UserGet', { name: 'alice' });
    await auth('user get a missing user', 'UserGet', { name: 'missing' });
    await auth('user list: sorted', 'UserList', {});
    await auth('revoke a role not granted', 'UserRevokeRole', { name: 'bob', role: 'reader' });
    await auth('revoke from a missing user', 'UserRevokeRole', { name: 'missing', role: 'rw' });
    await auth('authenticate while auth is disabled', 'Authenticate', {
      name: 'alice',
      password: 'apw',
    });
    await kv('put r/1 while auth is disabled', 'Put', { key: b('r/1'), value: b('1') });
    await kv('put w/1 while auth is disabled', 'Put', { key: b('w/1'), value: b('1') });
    await kv('put k/a while auth is disabled', 'Put', { key: b('k/a'), value: b('1') });

    // ---- Enable, then who is who.
    await auth('auth enable', 'AuthEnable', {});
    await auth('auth enable again, without a token', 'AuthEnable', {});
    await login('authenticate root', 'root', 'rootpw');
    await auth('auth enable again as root', 'AuthEnable', {}, 'root');
    await auth('authenticate with a wrong password', 'Authenticate', {
      name: 'alice',
      password: 'nope',
    });
    await auth('authenticate a missing user', 'Authenticate', { name: 'eve', password: 'x' });
    await auth('authenticate a user without a password', 'Authenticate', {
      name: 'carol',
      password: 'x',
    });
    await login('authenticate dave with the empty password', 'dave', '');
    await login('authenticate alice', 'alice', 'apw');
    await login('authenticate bob', 'bob', 'bpw');
    await kv('range without a token', 'Range', { key: b('r/1') });
    await kv('put without a token', 'Put', { key: b('w/1'), value: b('2') });
    await kv('range with a malformed token', 'Range', { key: b('r/1') }, '=lol');
    await kv('range with a well-formed unknown token', 'Range', { key: b('r/1') }, '=abc.1');

    // ---- Key permissions of single keys and ranges.
    await kv('alice range r/1', 'Range', { key: b('r/1') }, 'alice');
    await kv('alice range prefix r/', 'Range', { key: b('r/'), range_end: b('r0') }, 'alice');
    await kv('alice range a (single-key grant)', 'Range', { key: b('a') }, 'alice');
    await kv(
      'alice range a to a\\0 (the point as a range)',
      'Range',
      {
        key: b('a'),
        range_end: b('a\0'),
      },
      'alice',
    );
    await kv('alice range w/1 (write only)', 'Range', { key: b('w/1') }, 'alice');
    await kv(
      'alice range r/ to w0 (a gap)',
      'Range',
      { key: b('r/'), range_end: b('w0') },
      'alice',
    );
    await kv('alice range from key r/', 'Range', { key: b('r/'), range_end: b('\0') }, 'alice');
    await kv('alice put w/2', 'Put', { key: b('w/2'), value: b('2') }, 'alice');
    await kv('alice put r/2 (read only)', 'Put', { key: b('r/2'), value: b('2') }, 'alice');
    await kv(
      'alice put w/2 with prev_kv',
      'Put',
      {
        key: b('w/2'),
        value: b('3'),
        prev_kv: true,
      },
      'alice',
    );
    await kv(
      'alice delete prefix w/',
      'DeleteRange',
      { key: b('w/'), range_end: b('w0') },
      'alice',
    );
    await kv('alice delete r/1', 'DeleteRange', { key: b('r/1') }, 'alice');
    await kv(
      'alice delete w/1 with prev_kv',
      'DeleteRange',
      {
        key: b('w/1'),
        prev_kv: true,
      },
      'alice',
    );
    await kv(
      'bob range k/ to k0 (two grants joined)',
      'Range',
      {
        key: b('k/'),
        range_end: b('k0'),
      },
      'bob',
    );
    await kv(
      'bob range k/ to k1 (past the grants)',
      'Range',
      {
        key: b('k/'),
        range_end: b('k1'),
      },
      'bob',
    );
    await kv('bob range z (from-key grant)', 'Range', { key: b('zz') }, 'bob');
    await kv('bob range from key z', 'Range', { key: b('z'), range_end: b('\0') }, 'bob');
    await kv('bob put k/x', 'Put', { key: b('k/x'), value: b('x') }, 'bob');
    await kv('dave range r/1 (no grants)', 'Range', { key: b('r/1') }, 'dave');
    await kv('root range everything', 'Range', { key: b('\0'), range_end: b('\0') }, 'root');

    // ---- Txn: compares and both branches are checked.
    const cmp = (key: string): Message => ({
      result: 'EQUAL',
      target: 'VERSION',
      key: b(key),
      version: '0',
    });
    await kv(
      'alice txn: compare r/1, put w/3',
      'Txn',
      {
        compare: [cmp('r/1')],
        success: [{ request_put: { key: b('w/3'), value: b('3') } }],
        failure: [{ request_range: { key: b('r/1') } }],
      },
      'alice',
    );
    await kv(
      'alice txn: compare w/3 (not readable)',
      'Txn',
      {
        compare: [cmp('w/3')],
        success: [],
        failure: [],
      },
      'alice',
    );
    await kv(
      'alice txn: failure branch puts r/3',
      'Txn',
      {
        compare: [cmp('r/1')],
        success: [],
        failure: [{ request_put: { key: b('r/3'), value: b('3') } }],
      },
      'alice',
    );
    await kv(
      'alice read-only txn on w/3',
      'Txn',
      {
        compare: [],
        success: [{ request_range: { key: b('w/3') } }],
        failure: [],
      },
      'alice',
    );
    await kv(
      'alice txn: delete w/ with prev_kv',
      'Txn',
      {
        compare: [],
        success: [{ request_delete_range: { key: b('w/'), range_end: b('w0'), prev_kv: true } }],
        failure: [],
      },
      'alice',
    );

    // ---- Watch: READ on the range, at creation; a refusal cancels the watch only.
    await watch('alice watch prefix r/', { key: b('r/'), range_end: b('r0') }, 'alice');
    await watch('alice watch w/1', { key: b('w/1') }, 'alice');
    await watch('watch without a token', { key: b('r/1') }, 'nobody');

    // ---- Leases: revoke needs WRITE on the lease's keys.
    const grant = await call('alice lease grant', 'Lease', 'LeaseGrant', { TTL: '60' }, 'alice');
    const leaseId = idOf(grant);
    await kv(
      'alice put w/l on the lease',
      'Put',
      {
        key: b('w/l'),
        value: b('l'),
        lease: leaseId,
      },
      'alice',
    );
    await kv(
      "bob put k/l on alice's lease",
      'Put',
      {
        key: b('k/l'),
        value: b('l'),
        lease: leaseId,
      },
      'bob',
    );
    await call('bob lease revoke', 'Lease', 'LeaseRevoke', { ID: leaseId }, 'bob');
    await call('alice lease revoke', 'Lease', 'LeaseRevoke', { ID: leaseId }, 'alice');

    const empty = await call('lease grant without a token', 'Lease', 'LeaseGrant', { TTL: '60' });
    await call('lease revoke of a keyless lease, no token', 'Lease', 'LeaseRevoke', {
      ID: idOf(empty),
    });

    // ---- Admin-only calls.
    await call('alice maintenance hash', 'Maintenance', 'Hash', {}, 'alice');
    await call('maintenance defragment without a token', 'Maintenance', 'Defragment', {});
    await auth('alice user get alice (own name)', 'UserGet', { name: 'alice' }, 'alice');
    await auth('alice user get bob', 'UserGet', { name: 'bob' }, 'alice');
    await auth('alice role get reader (own role)', 'RoleGet', { role: 'reader' }, 'alice');
    await auth('alice role get rw', 'RoleGet', { role: 'rw' }, 'alice');
    await auth('alice user list', 'UserList', {}, 'alice');
    await auth(
      'alice changes her own password',
      'UserChangePassword',
      {
        name: 'alice',
        password: 'x',
      },
      'alice',
    );
    await auth('user list without a token', 'UserList', {});
    await auth('root deletes user root', 'UserDelete', { name: 'root' }, 'root');
    await auth('root deletes role root', 'RoleDelete', { role: 'root' }, 'root');
    await auth(
      'root revokes root from root',
      'UserRevokeRole',
      {
        name: 'root',
        role: 'root',
      },
      'root',
    );
    await auth(
      'root revokes a role of a missing user',
      'UserRevokeRole',
      {
        name: 'missing',
        role: 'x',
      },
      'root',
    );

    // ---- Changes while tokens are in use.
    await auth(
      'revoke writer WRITE prefix w/',
      'RoleRevokePermission',
      {
        role: 'writer',
        key: b('w/'),
        range_end: b('w0'),
      },
      'root',
    );
    await kv(
      'alice put w/6 after the revoke (token still valid)',
      'Put',
      {
        key: b('w/6'),
        value: b('6'),
      },
      'alice',
    );
    await auth('role delete reader', 'RoleDelete', { role: 'reader' }, 'root');
    await auth('user get alice after the role is gone', 'UserGet', { name: 'alice' }, 'root');
    await kv('alice range r/1 after her role is gone', 'Range', { key: b('r/1') }, 'alice');
    await auth(
      "change alice's password",
      'UserChangePassword',
      {
        name: 'alice',
        password: 'apw2',
      },
      'root',
    );
    await kv('alice range with her old token', 'Range', { key: b('r/1') }, 'alice');
    await auth('authenticate alice with the old password', 'Authenticate', {
      name: 'alice',
      password: 'apw',
    });
    await login('authenticate alice with the new password', 'alice', 'apw2');
    await auth('delete bob', 'UserDelete', { name: 'bob' }, 'root');
    await kv('bob range k/a after his deletion', 'Range', { key: b('k/a') }, 'bob');
    await auth('delete a missing user', 'UserDelete', { name: 'bob' }, 'root');
    await auth('delete a missing role', 'RoleDelete', { role: 'reader' }, 'root');

    // ---- Expiry: a token unused for longer than --auth-token-ttl is gone (etcd sweeps each
    // second, so this waits TTL plus two sweeps).
    await login('authenticate dave again', 'dave', '');
    await sleep((AUTH_SCRIPT_TOKEN_TTL_SECONDS + 2) * 1000);
    await kv('dave range after his token expired', 'Range', { key: b('r/1') }, 'dave');
    await login('authenticate root again (his token expired too)', 'root', 'rootpw');

    // ---- Disable.
    await login('authenticate alice again', 'alice', 'apw2');
    await auth('alice auth disable', 'AuthDisable', {}, 'alice');
    await auth('root auth disable', 'AuthDisable', {}, 'root');
    await auth('auth disable again', 'AuthDisable', {});
    // etcd 3.4.23 rejects a token sent while auth is off; 3.4.28+ ignores it, and so do we.
    await kv('range with a stale token while auth is off', 'Range', { key: b('r/1') }, 'root');
    await kv('range without a token while auth is off', 'Range', { key: b('r/1') });
    await auth('delete user root while auth is off', 'UserDelete', { name: 'root' });
    await auth('delete role root while auth is off (none exists)', 'RoleDelete', { role: 'root' });
    await auth('user list with auth off', 'UserList', {});
    await auth('role list with auth off', 'RoleList', {});

    // ---- The holes in 3.4.23's checks that tenure closes. Last, because etcd's answers write
    // revisions that tenure's refusals do not, which would shift every later header revision.
    await auth('user add root once more', 'UserAdd', { name: 'root', password: 'rootpw' });
    await auth('grant root to root once more', 'UserGrantRole', { user: 'root', role: 'root' });
    await auth('role add reader2', 'RoleAdd', { name: 'reader2' });
    await auth('grant reader2 READ prefix r/', 'RoleGrantPermission', {
      name: 'reader2',
      perm: rw('READ', 'r/', 'r0'),
    });
    await auth('grant writer WRITE prefix w/ again', 'RoleGrantPermission', {
      name: 'writer',
      perm: rw('WRITE', 'w/', 'w0'),
    });
    await auth('grant reader2 to alice', 'UserGrantRole', { user: 'alice', role: 'reader2' });
    await auth('user add frank', 'UserAdd', { name: 'frank', password: 'fpw' });
    await auth('grant rw to frank', 'UserGrantRole', { user: 'frank', role: 'rw' });
    await auth('auth enable once more', 'AuthEnable', {});
    await login('authenticate alice for the holes', 'alice', 'apw2');
    await login('authenticate frank', 'frank', 'fpw');
    const second = await call('alice lease grant 2', 'Lease', 'LeaseGrant', { TTL: '60' }, 'alice');
    const secondId = idOf(second);
    await kv(
      'alice put w/m on lease 2',
      'Put',
      { key: b('w/m'), value: b('m'), lease: secondId },
      'alice',
    );
    // A txn put onto that lease: 3.4.23 skips the lease-keys check (3.4.44): closed here.
    await kv(
      "frank txn put k/l2 on alice's lease 2",
      'Txn',
      {
        compare: [],
        success: [{ request_put: { key: b('k/l2'), value: b('l'), lease: secondId } }],
        failure: [],
      },
      'frank',
    );

    // etcd 3.4.23 does not look inside a nested txn (fixed in 3.4.42): a bypass we close.
    await kv(
      'alice nested txn puts r/4',
      'Txn',
      {
        compare: [],
        success: [
          {
            request_txn: {
              compare: [],
              success: [{ request_put: { key: b('r/4'), value: b('4') } }],
              failure: [],
            },
          },
        ],
        failure: [],
      },
      'alice',
    );
    // etcd 3.4.23 skips a txn put's prev_kv READ check (fixed in 3.4.44): closed here.
    await kv(
      'alice txn put w/5 with prev_kv',
      'Txn',
      {
        compare: [],
        success: [{ request_put: { key: b('w/5'), value: b('5'), prev_kv: true } }],
        failure: [],
      },
      'alice',
    );

    // etcd 3.4 checks a from-key watch as the single key (fixed in 3.5): closed here.
    await watch('alice watch from key r/', { key: b('r/'), range_end: b('\0') }, 'alice');
    // Compact is open in 3.4.23 and admin-only from 3.4.42: closed here.
    await kv('alice compact', 'Compact', { revision: '1' }, 'alice');
  } finally {
    for (const s of streams) s.close();
    client.close();
  }
  return recording;
}
