// The Auth service's requests as they travel through the Raft log (etcd's InternalRaftRequest
// Auth* fields). Field names follow etcd's messages, inconsistencies included (UserGrantRole's
// `user`, UserRevokeRole's `name`), so the API layer maps them one to one. In etcd 3.4 every Auth
// RPC goes through the log, reads included, so they need a leader and are linearizable.
import type { Permission } from './auth-perms.js';

export type AuthOp =
  | { readonly op: 'authEnable' }
  | { readonly op: 'authDisable' }
  /** `passwordHash` null: a `no_password` user. Hashed before proposing; never the password. */
  | { readonly op: 'userAdd'; readonly name: string; readonly passwordHash: string | null }
  | { readonly op: 'userDelete'; readonly name: string }
  | { readonly op: 'userChangePassword'; readonly name: string; readonly passwordHash: string }
  | { readonly op: 'userGet'; readonly name: string }
  | { readonly op: 'userList' }
  | { readonly op: 'userGrantRole'; readonly user: string; readonly role: string }
  | { readonly op: 'userRevokeRole'; readonly name: string; readonly role: string }
  | { readonly op: 'roleAdd'; readonly name: string }
  | { readonly op: 'roleGet'; readonly role: string }
  | { readonly op: 'roleList' }
  | { readonly op: 'roleDelete'; readonly role: string }
  /** `perm` null when the request carried none (etcd: `permission not given`). */
  | { readonly op: 'roleGrantPermission'; readonly name: string; readonly perm: Permission | null }
  | {
      readonly op: 'roleRevokePermission';
      readonly role: string;
      readonly key: Uint8Array;
      readonly rangeEnd: Uint8Array;
    };

export type AuthOpName = AuthOp['op'];
