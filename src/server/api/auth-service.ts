// etcdserverpb.Auth (etcd 3.4 etcdserver/v3_server.go and api/v3rpc/auth.go). As in 3.4, every
// request goes through the log, reads included, and is checked at apply (auth-store.ts), so
// members agree on users and roles and a check sees the state its request lands on. Two things
// happen before proposing, off the event loop: passwords are bcrypt-hashed (etcd 3.5 hashes here
// too; 3.4 hashed at apply on every member), and Authenticate checks the password against the
// member's applied store, then proposes only the token's random prefix.
import { randomInt } from 'node:crypto';
import bcrypt from 'bcrypt';
import type { AuthOp } from '../../core/state/auth-ops.js';
import type { Permission, PermissionType } from '../../core/state/auth-perms.js';
import { AUTH_TOKEN_PREFIX_LENGTH } from '../../core/state/auth-tokens.js';
import {
  ERR_AUTH_FAILED,
  ERR_AUTH_NOT_ENABLED,
  ERR_NO_PASSWORD_USER,
} from '../../core/state/etcd-errors.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { ClientApiConfig } from './api-config.js';
import { authOn, NO_STAMP, stampOf } from './auth-identity.js';
import type { ApiService, CallInfo, UnaryHandler, WireObject } from './convert.js';
import {
  asMessage,
  badField,
  boolField,
  bytesField,
  enumField,
  stringField,
  toBuffer,
  toProtoHeader,
} from './convert.js';
import { expectResult } from './results.js';
import { ApiError } from './status.js';

type AuthAnswerShape = (r: {
  readonly roles?: readonly string[];
  readonly users?: readonly string[];
  readonly perms?: readonly Permission[];
}) => object;

const AUTH = '/etcdserverpb.Auth';

/**
 * Authenticate proposes again when the auth store changed between its password check and its
 * apply (etcd retries the same way); a store changing this often is an attack or a bug.
 */
const AUTHENTICATE_ATTEMPTS_MAX = 8;

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** etcd's simple token prefix: 16 random ASCII letters (auth/simple_token.go genTokenPrefix). */
function tokenPrefix(): string {
  let s = '';
  for (let i = 0; i < AUTH_TOKEN_PREFIX_LENGTH; i++) s += LETTERS[randomInt(LETTERS.length)];
  return s;
}

const PERM_TYPES: readonly PermissionType[] = ['READ', 'WRITE', 'READWRITE'];

function permissionOf(x: unknown): Permission | null {
  if (x === null || x === undefined) return null;
  const m = asMessage(x, 'perm');
  const t = enumField(m, 'permType', 'READ');
  const permType = PERM_TYPES.find((p) => p === t);
  if (permType === undefined) throw badField('perm.permType', 'READ, WRITE or READWRITE');
  return { permType, key: bytesField(m, 'key'), rangeEnd: bytesField(m, 'range_end') };
}

function toProtoPermission(p: Permission): object {
  return { permType: p.permType, key: toBuffer(p.key), range_end: toBuffer(p.rangeEnd) };
}

export function authHandlers(backend: KvBackend, config: ClientApiConfig): ApiService {
  const tokens = backend.machine.tokens;
  tokens.ttlMs = config.authTokenTtlMs;
  tokens.now = () => backend.clock.nowMs();

  /** A password's bcrypt hash, or the one a 3.5 client hashed itself (`hashedPassword`). */
  const hashOf = async (m: WireObject): Promise<string> => {
    const password = stringField(m, 'password');
    const hashed = stringField(m, 'hashedPassword');
    if (password === '' && hashed !== '') return hashed;
    return bcrypt.hash(password, config.bcryptCost);
  };

  /** Propose one Auth request as the caller and shape its answer. */
  const run = async (
    op: AuthOp,
    call: CallInfo,
    shape: AuthAnswerShape = () => ({}),
  ): Promise<object> => {
    const stamp = authOn(backend) ? await stampOf(backend, call) : NO_STAMP;
    const r = await backend.propose({ type: 'auth', op, ...stamp }, call.signal);
    const response = expectResult(r, 'auth').response;
    return { header: toProtoHeader(backend, response.header.revision), ...shape(response) };
  };

  const m = (req: unknown): WireObject => asMessage(req);
  const unary: Record<string, UnaryHandler> = {
    [`${AUTH}/AuthEnable`]: (_req, call) => run({ op: 'authEnable' }, call),
    [`${AUTH}/AuthDisable`]: (_req, call) => run({ op: 'authDisable' }, call),
    [`${AUTH}/Authenticate`]: (req, call) => authenticate(backend, m(req), call),
    [`${AUTH}/UserAdd`]: async (req, call) => {
      const r = m(req);
      const options = r['options'];
      const noPassword =
        options !== null && options !== undefined && boolField(asMessage(options), 'no_password');
      const name = stringField(r, 'name');
      const passwordHash = noPassword ? null : await hashOf(r);
      return run({ op: 'userAdd', name, passwordHash }, call);
    },
    [`${AUTH}/UserGet`]: (req, call) =>
      run({ op: 'userGet', name: stringField(m(req), 'name') }, call, (a) => ({
        roles: a.roles ?? [],
      })),
    [`${AUTH}/UserList`]: (_req, call) =>
      run({ op: 'userList' }, call, (a) => ({ users: a.users ?? [] })),
    [`${AUTH}/UserDelete`]: (req, call) =>
      run({ op: 'userDelete', name: stringField(m(req), 'name') }, call),
    [`${AUTH}/UserChangePassword`]: async (req, call) => {
      const r = m(req);
      const passwordHash = await hashOf(r);
      return run({ op: 'userChangePassword', name: stringField(r, 'name'), passwordHash }, call);
    },
    [`${AUTH}/UserGrantRole`]: (req, call) => {
      const r = m(req);
      return run(
        { op: 'userGrantRole', user: stringField(r, 'user'), role: stringField(r, 'role') },
        call,
      );
    },
    [`${AUTH}/UserRevokeRole`]: (req, call) => {
      const r = m(req);
      return run(
        { op: 'userRevokeRole', name: stringField(r, 'name'), role: stringField(r, 'role') },
        call,
      );
    },
    [`${AUTH}/RoleAdd`]: (req, call) =>
      run({ op: 'roleAdd', name: stringField(m(req), 'name') }, call),
    [`${AUTH}/RoleGet`]: (req, call) =>
      run({ op: 'roleGet', role: stringField(m(req), 'role') }, call, (a) => ({
        perm: (a.perms ?? []).map(toProtoPermission),
      })),
    [`${AUTH}/RoleList`]: (_req, call) =>
      run({ op: 'roleList' }, call, (a) => ({ roles: a.roles ?? [] })),
    [`${AUTH}/RoleDelete`]: (req, call) =>
      run({ op: 'roleDelete', role: stringField(m(req), 'role') }, call),
    [`${AUTH}/RoleGrantPermission`]: (req, call) => {
      const r = m(req);
      const perm = permissionOf(r['perm']);
      return run({ op: 'roleGrantPermission', name: stringField(r, 'name'), perm }, call);
    },
    [`${AUTH}/RoleRevokePermission`]: (req, call) => {
      const r = m(req);
      return run(
        {
          op: 'roleRevokePermission',
          role: stringField(r, 'role'),
          key: bytesField(r, 'key'),
          rangeEnd: bytesField(r, 'range_end'),
        },
        call,
      );
    },
  };
  return { unary, serverStream: {}, bidi: {} };
}

/**
 * etcd 3.4 EtcdServer.Authenticate: a linearizable barrier, the password checked on this member
 * (outside the log, so it never reaches the WAL), then the token registered through the log on
 * every member; again if the auth store moved in between.
 */
async function authenticate(backend: KvBackend, m: WireObject, call: CallInfo): Promise<object> {
  const name = stringField(m, 'name');
  const password = stringField(m, 'password');
  backend.machine.tokens.sweepIfDue(backend.clock.nowMs());
  for (let attempt = 0; attempt < AUTHENTICATE_ATTEMPTS_MAX; attempt++) {
    await backend.readBarrier(call.signal);
    const auth = backend.machine.auth;
    if (!auth.enabled) throw new ApiError(ERR_AUTH_NOT_ENABLED);
    const user = auth.user(name);
    if (user === undefined) throw new ApiError(ERR_AUTH_FAILED);
    if (user.passwordHash === null) throw new ApiError(ERR_NO_PASSWORD_USER);
    const checkedRevision = auth.revision;
    if (!(await bcrypt.compare(password, user.passwordHash))) throw new ApiError(ERR_AUTH_FAILED);
    const r = await backend.propose(
      { type: 'authenticate', name, tokenPrefix: tokenPrefix(), checkedRevision },
      call.signal,
    );
    const { header, token } = expectResult(r, 'authenticate').response;
    if (token !== null) return { header: toProtoHeader(backend, header.revision), token };
  }
  throw new ApiError(ERR_AUTH_FAILED);
}
