// The Auth service (etcd 3.4's rpc.proto, service Auth): enabling auth, users, roles and their
// key permissions, for operators and tests. The client's own sign-in (Authenticate, the token on
// every call) is auth-token.ts and connection.ts.
//
// Under the failover rule (connection.ts) every call that changes the auth store is a write: sent
// twice it could, say, re-add a user deleted in between. The gets and lists change nothing and
// are reads; so is Authenticate, which only issues a token. Field names differ between messages
// (name, user, role) exactly as in etcd's rpc.proto.
import type { CallOptions } from './call-options.js';
import {
  decodeHeader,
  rangeEndField,
  toBuffer,
  type Bytes,
  type KeyRangeOptions,
  type ResponseHeader,
  type WireObject,
} from './codec.js';
import type { CallKind, Connection } from './connection.js';
import type { AuthMethod } from './protos.js';

/** What a permission allows on its keys (authpb.Permission.Type). */
export type PermissionType = 'read' | 'write' | 'readwrite';

/** A role's permission on one key, a range [key, rangeEnd), or every key ≥ key (rangeEnd "\0"). */
export interface Permission {
  readonly type: PermissionType;
  readonly key: Buffer;
  /** Empty for the single key `key`. */
  readonly rangeEnd: Buffer;
}

const wireType: Readonly<Record<PermissionType, string>> = {
  read: 'READ',
  write: 'WRITE',
  readwrite: 'READWRITE',
};

function permissionType(w: unknown): PermissionType {
  if (w === 'WRITE' || w === 1) return 'write';
  if (w === 'READWRITE' || w === 2) return 'readwrite';
  return 'read';
}

function strings(w: unknown): string[] {
  return Array.isArray(w) ? w.filter((x): x is string => typeof x === 'string') : [];
}

function bytes(w: unknown): Buffer {
  return Buffer.isBuffer(w) ? w : w instanceof Uint8Array ? Buffer.from(w) : Buffer.alloc(0);
}

export class Auth {
  readonly #connection: Connection;

  constructor(connection: Connection) {
    this.#connection = connection;
  }

  #call(
    rpc: AuthMethod,
    request: object,
    kind: CallKind,
    options: CallOptions,
  ): Promise<WireObject> {
    return this.#connection.unary<WireObject>(`Auth.${rpc}`, request, kind, options);
  }

  async #write(rpc: AuthMethod, request: object, options: CallOptions): Promise<ResponseHeader> {
    return decodeHeader((await this.#call(rpc, request, 'write', options)).header);
  }

  /** Turn auth on. Needs a `root` user with the `root` role (RootUserNotExistError). */
  authEnable(options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('AuthEnable', {}, options);
  }

  /** Turn auth off (as root). */
  authDisable(options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('AuthDisable', {}, options);
  }

  /**
   * A token for `name` (AuthFailedError for a wrong name or password, AuthNotEnabledError when
   * auth is off). The client authenticates by itself when given `auth`; this is the bare call.
   */
  async authenticate(name: string, password: string, options: CallOptions = {}): Promise<string> {
    const w = await this.#call('Authenticate', { name, password }, 'read', options);
    return typeof w.token === 'string' ? w.token : '';
  }

  /** Add a user; `noPassword`: one that signs in only by its TLS client certificate's CN. */
  userAdd(
    name: string,
    password: string,
    options: { readonly noPassword?: boolean } & CallOptions = {},
  ): Promise<ResponseHeader> {
    const request = { name, password, options: { no_password: options.noPassword ?? false } };
    return this.#write('UserAdd', request, options);
  }

  /** The roles of `name` (UserNotFoundError if there is no such user). */
  async userGet(name: string, options: CallOptions = {}): Promise<string[]> {
    return strings((await this.#call('UserGet', { name }, 'read', options)).roles);
  }

  /** Every user's name. */
  async userList(options: CallOptions = {}): Promise<string[]> {
    return strings((await this.#call('UserList', {}, 'read', options)).users);
  }

  userDelete(name: string, options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('UserDelete', { name }, options);
  }

  /** Set a new password; etcd then forgets the user's tokens, so its clients sign in again. */
  userChangePassword(
    name: string,
    password: string,
    options: CallOptions = {},
  ): Promise<ResponseHeader> {
    return this.#write('UserChangePassword', { name, password }, options);
  }

  userGrantRole(user: string, role: string, options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('UserGrantRole', { user, role }, options);
  }

  /** RoleNotGrantedError if the user does not have the role. */
  userRevokeRole(user: string, role: string, options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('UserRevokeRole', { name: user, role }, options);
  }

  roleAdd(name: string, options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('RoleAdd', { name }, options);
  }

  /** The permissions of `role` (RoleNotFoundError if there is no such role). */
  async roleGet(role: string, options: CallOptions = {}): Promise<Permission[]> {
    const w = await this.#call('RoleGet', { role }, 'read', options);
    const perms = Array.isArray(w.perm) ? (w.perm as WireObject[]) : [];
    return perms.map((p) => ({
      type: permissionType(p.permType),
      key: bytes(p.key),
      rangeEnd: bytes(p.range_end),
    }));
  }

  /** Every role's name. */
  async roleList(options: CallOptions = {}): Promise<string[]> {
    return strings((await this.#call('RoleList', {}, 'read', options)).roles);
  }

  roleDelete(role: string, options: CallOptions = {}): Promise<ResponseHeader> {
    return this.#write('RoleDelete', { role }, options);
  }

  /** Let `role` do `type` on `key` (or the range the options select, as for a Range). */
  roleGrantPermission(
    role: string,
    key: Bytes,
    type: PermissionType,
    options: KeyRangeOptions & CallOptions = {},
  ): Promise<ResponseHeader> {
    const k = toBuffer(key);
    const perm = { permType: wireType[type], key: k, ...rangeEndField(k, options) };
    return this.#write('RoleGrantPermission', { name: role, perm }, options);
  }

  /** Take back the permission on exactly that key or range (PermissionNotGrantedError if none). */
  roleRevokePermission(
    role: string,
    key: Bytes,
    options: KeyRangeOptions & CallOptions = {},
  ): Promise<ResponseHeader> {
    const k = toBuffer(key);
    return this.#write(
      'RoleRevokePermission',
      { role, key: k, ...rangeEndField(k, options) },
      options,
    );
  }
}
