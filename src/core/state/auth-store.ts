// etcd's auth store as replicated state (etcd 3.4 auth/store.go): whether auth is on, the auth
// revision, users with their bcrypt hashes and roles, and roles with their key permissions. Every
// member applies the same mutations from the log, so they agree on it and a restart (WAL replay or
// snapshot) keeps it. Passwords are hashed before they are proposed (as etcd 3.5 does), so the log
// holds hashes only and apply is cheap and deterministic. Tokens are not here: see auth-tokens.ts.
import { fnvBytes, fnvNumber, fnvString } from '../base/hash.js';
import type { AuthOp } from './auth-ops.js';
import {
  isValidPermissionRange,
  mergePermissions,
  permits,
  type MergedPermissions,
  type Permission,
} from './auth-perms.js';
import type { EtcdError } from './etcd-errors.js';
import {
  ERR_AUTH_OLD_REVISION,
  ERR_INVALID_AUTH_MGMT,
  ERR_PERMISSION_DENIED,
  ERR_PERMISSION_NOT_GIVEN,
  ERR_PERMISSION_NOT_GRANTED,
  ERR_ROLE_ALREADY_EXIST,
  ERR_ROLE_EMPTY,
  ERR_ROLE_NOT_FOUND,
  ERR_ROLE_NOT_GRANTED,
  ERR_ROOT_ROLE_NOT_EXIST,
  ERR_ROOT_USER_NOT_EXIST,
  ERR_USER_ALREADY_EXIST,
  ERR_USER_EMPTY,
  ERR_USER_NOT_FOUND,
} from './etcd-errors.js';
import { compareBytes } from './key-range.js';

/** The one user and the one role etcd treats specially. */
export const ROOT_USER = 'root';
export const ROOT_ROLE = 'root';

/** Who a request runs as, stamped by the API layer (etcd's RequestHeader username/auth_revision). */
export interface AuthAs {
  readonly user: string;
  /** The auth revision when the caller's identity was resolved. */
  readonly revision: number;
  /**
   * The server's own steps (the Lock and Election services', whose caller was checked before
   * they began), as etcd runs its internal requests under its root context. Only the API layer
   * makes commands, so no client can set it.
   */
  readonly server?: true;
}

export const SERVER_AS: AuthAs = Object.freeze({ user: '', revision: 0, server: true });

export interface UserRecord {
  readonly name: string;
  /** bcrypt hash in modular-crypt form; null for a `no_password` user (certificate CN only). */
  readonly passwordHash: string | null;
  /** Sorted. */
  readonly roles: readonly string[];
}

export interface RoleRecord {
  readonly name: string;
  /** Sorted by key (etcd keeps permSlice sorted by key). */
  readonly perms: readonly Permission[];
}

export interface AuthData {
  readonly enabled: boolean;
  readonly revision: number;
  readonly users: readonly UserRecord[];
  readonly roles: readonly RoleRecord[];
}

/** What an Auth request answers besides its header. */
export interface AuthAnswer {
  readonly roles?: readonly string[];
  readonly users?: readonly string[];
  readonly perms?: readonly Permission[];
}

/** The state of a fresh store: a fresh etcd store's revision is 1 (bumped from 0 at creation). */
const FRESH_REVISION = 1;

/** What happened to tokens by a mutation; the machine passes it on to the token table. */
export type TokenEffect =
  | { readonly kind: 'none' }
  | { readonly kind: 'dropUser'; readonly user: string }
  | { readonly kind: 'dropAll' };

const NO_EFFECT: TokenEffect = { kind: 'none' };

export class AuthStore {
  private enabledFlag = false;
  private rev = FRESH_REVISION;
  private readonly users = new Map<string, UserRecord>();
  private readonly roles = new Map<string, RoleRecord>();
  private readonly merged = new Map<string, MergedPermissions>();

  get enabled(): boolean {
    return this.enabledFlag;
  }

  get revision(): number {
    return this.rev;
  }

  /** True while nothing was ever stored: snapshots and digests leave the store out then. */
  get isPristine(): boolean {
    return (
      !this.enabledFlag &&
      this.rev === FRESH_REVISION &&
      this.users.size === 0 &&
      this.roles.size === 0
    );
  }

  user(name: string): UserRecord | undefined {
    return this.users.get(name);
  }

  hasRole(user: string, role: string): boolean {
    return this.users.get(user)?.roles.includes(role) ?? false;
  }

  // ---- Checks (etcd auth/store.go IsAdminPermitted, isOpPermitted) ----

  /** Admin: the role `root`. Passes everyone while auth is off (how the first AuthEnable works). */
  checkAdmin(as: AuthAs | undefined): EtcdError | null {
    if (!this.enabledFlag || as?.server === true) return null;
    if (as === undefined || as.user === '') return ERR_USER_EMPTY;
    const u = this.users.get(as.user);
    if (u === undefined) return ERR_USER_NOT_FOUND;
    return u.roles.includes(ROOT_ROLE) ? null : ERR_PERMISSION_DENIED;
  }

  /** READ or WRITE on one key (empty `rangeEnd`), a range, or every key from `key` ("\0"). */
  checkKeys(
    as: AuthAs | undefined,
    need: 'read' | 'write',
    key: Uint8Array,
    rangeEnd?: Uint8Array,
  ): EtcdError | null {
    if (!this.enabledFlag || as?.server === true) return null;
    if (as === undefined || as.user === '') return ERR_USER_EMPTY;
    if (as.revision < this.rev) return ERR_AUTH_OLD_REVISION;
    const u = this.users.get(as.user);
    // A CN whose user is gone, or a request that raced a deletion (auth/store.go: "cannot find
    // a user for permission check").
    if (u === undefined) return ERR_PERMISSION_DENIED;
    if (u.roles.includes(ROOT_ROLE)) return null;
    const merged = this.mergedFor(u);
    return permits(need === 'read' ? merged.read : merged.write, key, rangeEnd)
      ? null
      : ERR_PERMISSION_DENIED;
  }

  private mergedFor(u: UserRecord): MergedPermissions {
    let m = this.merged.get(u.name);
    if (m === undefined) {
      const perms: Permission[] = [];
      for (const r of u.roles) perms.push(...(this.roles.get(r)?.perms ?? []));
      m = mergePermissions(perms);
      this.merged.set(u.name, m);
    }
    return m;
  }

  // ---- Mutations and reads through the log (etcd etcdserver/apply_auth.go, auth/store.go) ----

  /**
   * Apply one Auth request as `as`. Returns the answer or etcd's error, and what it does to
   * tokens. Admin rights are checked first, as etcd's authApplierV3 does, except for UserGet (own
   * name) and RoleGet (own role).
   */
  apply(
    op: AuthOp,
    as: AuthAs | undefined,
  ): { readonly answer: AuthAnswer | EtcdError; readonly tokens: TokenEffect } {
    const denied = this.checkAdmin(as);
    if (op.op === 'userGet') {
      if (denied !== null && op.name !== as?.user) return { answer: denied, tokens: NO_EFFECT };
    } else if (op.op === 'roleGet') {
      if (denied !== null && !this.hasRole(as?.user ?? '', op.role))
        return { answer: denied, tokens: NO_EFFECT };
    } else if (denied !== null) return { answer: denied, tokens: NO_EFFECT };
    return this.execute(op);
  }

  private execute(op: AuthOp): {
    readonly answer: AuthAnswer | EtcdError;
    readonly tokens: TokenEffect;
  } {
    const done = (answer: AuthAnswer | EtcdError = {}, tokens: TokenEffect = NO_EFFECT) => ({
      answer,
      tokens,
    });
    switch (op.op) {
      case 'authEnable': {
        if (this.enabledFlag) return done();
        const root = this.users.get(ROOT_USER);
        if (root === undefined) return done(ERR_ROOT_USER_NOT_EXIST);
        if (!root.roles.includes(ROOT_ROLE)) return done(ERR_ROOT_ROLE_NOT_EXIST);
        this.enabledFlag = true; // not a revision bump, as in etcd
        return done();
      }
      case 'authDisable':
        if (!this.enabledFlag) return done();
        this.enabledFlag = false;
        this.bump();
        return done({}, { kind: 'dropAll' });
      case 'userAdd':
        if (op.name === '') return done(ERR_USER_EMPTY);
        if (this.users.has(op.name)) return done(ERR_USER_ALREADY_EXIST);
        this.users.set(op.name, { name: op.name, passwordHash: op.passwordHash, roles: [] });
        this.bump();
        return done();
      case 'userDelete':
        if (this.enabledFlag && op.name === ROOT_USER) return done(ERR_INVALID_AUTH_MGMT);
        if (!this.users.delete(op.name)) return done(ERR_USER_NOT_FOUND);
        this.bump();
        return done({}, { kind: 'dropUser', user: op.name });
      case 'userChangePassword': {
        const u = this.users.get(op.name);
        if (u === undefined) return done(ERR_USER_NOT_FOUND);
        // etcd 3.5: a no-password user stays one (3.4 stored a hash it never checked).
        const passwordHash = u.passwordHash === null ? null : op.passwordHash;
        this.users.set(op.name, { ...u, passwordHash });
        this.bump();
        return done({}, { kind: 'dropUser', user: op.name });
      }
      case 'userGet': {
        const u = this.users.get(op.name);
        return done(u === undefined ? ERR_USER_NOT_FOUND : { roles: u.roles });
      }
      case 'userList':
        return done({ users: [...this.users.keys()].sort() });
      case 'userGrantRole': {
        const u = this.users.get(op.user);
        if (u === undefined) return done(ERR_USER_NOT_FOUND);
        // Granting `root` needs no role of that name (auth/store.go UserGrantRole).
        if (op.role !== ROOT_ROLE && !this.roles.has(op.role)) return done(ERR_ROLE_NOT_FOUND);
        if (u.roles.includes(op.role)) return done();
        this.users.set(u.name, { ...u, roles: [...u.roles, op.role].sort() });
        this.bump();
        return done();
      }
      case 'userRevokeRole': {
        if (this.enabledFlag && op.name === ROOT_USER && op.role === ROOT_ROLE)
          return done(ERR_INVALID_AUTH_MGMT);
        const u = this.users.get(op.name);
        if (u === undefined) return done(ERR_USER_NOT_FOUND);
        if (!u.roles.includes(op.role)) return done(ERR_ROLE_NOT_GRANTED);
        this.users.set(u.name, { ...u, roles: u.roles.filter((r) => r !== op.role) });
        this.bump();
        return done();
      }
      case 'roleAdd':
        if (op.name === '') return done(ERR_ROLE_EMPTY);
        if (this.roles.has(op.name)) return done(ERR_ROLE_ALREADY_EXIST);
        this.roles.set(op.name, { name: op.name, perms: [] });
        this.bump();
        return done();
      case 'roleGet': {
        const r = this.roles.get(op.role);
        return done(r === undefined ? ERR_ROLE_NOT_FOUND : { perms: r.perms });
      }
      case 'roleList':
        return done({ roles: [...this.roles.keys()].sort() });
      case 'roleDelete':
        if (this.enabledFlag && op.role === ROOT_ROLE) return done(ERR_INVALID_AUTH_MGMT);
        if (!this.roles.delete(op.role)) return done(ERR_ROLE_NOT_FOUND);
        for (const u of this.users.values())
          if (u.roles.includes(op.role))
            this.users.set(u.name, { ...u, roles: u.roles.filter((r) => r !== op.role) });
        this.bump();
        return done();
      case 'roleGrantPermission': {
        // Validation of 3.4.25+ and 3.5 (3.4.23 crashed on a missing perm).
        if (op.perm === null) return done(ERR_PERMISSION_NOT_GIVEN);
        if (!isValidPermissionRange(op.perm.key, op.perm.rangeEnd))
          return done(ERR_INVALID_AUTH_MGMT);
        const r = this.roles.get(op.name);
        if (r === undefined) return done(ERR_ROLE_NOT_FOUND);
        const perm = op.perm;
        const same = (p: Permission): boolean =>
          compareBytes(p.key, perm.key) === 0 && compareBytes(p.rangeEnd, perm.rangeEnd) === 0;
        const perms = r.perms.some(same)
          ? r.perms.map((p) => (same(p) ? perm : p))
          : [...r.perms, perm].sort((a, b) => compareBytes(a.key, b.key));
        this.roles.set(r.name, { name: r.name, perms });
        this.bump();
        return done();
      }
      case 'roleRevokePermission': {
        const r = this.roles.get(op.role);
        if (r === undefined) return done(ERR_ROLE_NOT_FOUND);
        const at = r.perms.findIndex(
          (p) => compareBytes(p.key, op.key) === 0 && compareBytes(p.rangeEnd, op.rangeEnd) === 0,
        );
        if (at < 0) return done(ERR_PERMISSION_NOT_GRANTED);
        this.roles.set(r.name, { name: r.name, perms: r.perms.filter((_, i) => i !== at) });
        this.bump();
        return done();
      }
    }
  }

  /** Every successful mutation but AuthEnable moves the revision; cached permissions go. */
  private bump(): void {
    this.rev += 1;
    this.merged.clear();
  }

  // ---- Snapshots and digests ----

  toData(): AuthData {
    return {
      enabled: this.enabledFlag,
      revision: this.rev,
      users: [...this.users.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
      roles: [...this.roles.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
    };
  }

  static fromData(d: AuthData): AuthStore {
    const s = new AuthStore();
    s.enabledFlag = d.enabled;
    s.rev = d.revision;
    for (const u of d.users) s.users.set(u.name, u);
    for (const r of d.roles) s.roles.set(r.name, r);
    return s;
  }

  /** Folds the whole store into `h`: members that disagree on users or grants differ here. */
  digest(h: number): number {
    const d = this.toData();
    h = fnvNumber(fnvNumber(h, d.enabled ? 1 : 0), d.revision);
    for (const u of d.users) {
      h = fnvString(fnvString(h, u.name), u.passwordHash ?? '\u0000');
      for (const r of u.roles) h = fnvString(h, r);
    }
    for (const r of d.roles) {
      h = fnvString(h, r.name);
      for (const p of r.perms) h = fnvBytes(fnvBytes(fnvString(h, p.permType), p.key), p.rangeEnd);
    }
    return h;
  }
}
