// Who a call runs as while auth is enabled (etcd 3.4 auth/store.go AuthInfoFromCtx and
// AuthInfoFromTLS): the user of its simple token (gRPC metadata `token`, or `authorization` as the
// gateway forwards the HTTP header), else, under `--client-cert-auth`, the CN of its verified
// client certificate, else nobody — and every check then fails with `user name is empty`.
//
// While auth is disabled, tokens are ignored, as etcd does from 3.4.28 and 3.5.10 (3.4.23
// rejected them): a client still holding a token from before AuthDisable keeps working.
import type { AuthAs } from '../../core/state/auth-store.js';
import { tokenIndex } from '../../core/state/auth-tokens.js';
import type { EtcdError } from '../../core/state/etcd-errors.js';
import {
  ERR_INVALID_AUTH_TOKEN,
  ERR_PERMISSION_DENIED,
  ERR_USER_EMPTY,
  ERR_USER_NOT_FOUND,
} from '../../core/state/etcd-errors.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { CallInfo } from './convert.js';
import { ApiError, statusOf } from './status.js';

/** The user of `token`, waiting for this member to apply the entry that issued it if needed. */
async function tokenUser(
  backend: KvBackend,
  token: string,
  signal: AbortSignal,
): Promise<string | undefined> {
  const index = tokenIndex(token);
  if (index === null) return undefined;
  const tokens = backend.machine.tokens;
  tokens.sweepIfDue(backend.clock.nowMs());
  const user = tokens.lookup(token, backend.clock.nowMs());
  if (user !== undefined || index <= backend.machine.appliedIndex) return user;
  // Issued by another member at an index this one has not applied yet: etcd waits for it
  // (simple_token.go isValidSimpleToken); the read barrier applies at least that far, since the
  // token's entry was committed before anyone could hold the token.
  await backend.readBarrier(signal);
  return tokens.lookup(token, backend.clock.nowMs());
}

/** The caller, or undefined for nobody (or while auth is off, when nothing is checked). */
export async function callerOf(backend: KvBackend, call: CallInfo): Promise<AuthAs | undefined> {
  const auth = backend.machine.auth;
  if (!auth.enabled) return undefined;
  const token = call.metadata.get('token') ?? call.metadata.get('authorization');
  if (token !== undefined) {
    const user = await tokenUser(backend, token, call.signal);
    if (user === undefined) throw new ApiError(ERR_INVALID_AUTH_TOKEN);
    return { user, revision: auth.revision };
  }
  if (call.commonName !== undefined) return { user: call.commonName, revision: auth.revision };
  return undefined;
}

/**
 * Whether auth checks apply now. Call sites test it before awaiting any helper here, so that
 * with auth off a request takes exactly the turns of the event loop it took before auth existed
 * (the simulator's recorded schedules depend on that).
 */
export function authOn(backend: KvBackend): boolean {
  return backend.machine.auth.enabled;
}

/** What a command carries while auth is off: no identity. */
export const NO_STAMP: { readonly as?: AuthAs } = Object.freeze({});

/** `{ as }` for a command, or nothing: commands made while auth is off carry no identity. */
export async function stampOf(
  backend: KvBackend,
  call: CallInfo,
): Promise<{ readonly as?: AuthAs }> {
  const as = await callerOf(backend, call);
  return as === undefined ? {} : { as };
}

/** Throw an auth check's refusal as the call's status. */
export function refuse(e: EtcdError | null): void {
  if (e !== null) throw new ApiError(e);
}

/**
 * Admin rights for Cluster member changes: the role `root` (etcd 3.4 v3rpc/member.go via
 * EtcdServer.checkMembershipOperationPermission), with the usual errors.
 */
export async function requireAdmin(backend: KvBackend, call: CallInfo): Promise<void> {
  if (!backend.machine.auth.enabled) return;
  refuse(backend.machine.auth.checkAdmin(await callerOf(backend, call)));
}

/** etcd's auth package texts, which Maintenance returns unmapped (code Unknown) in 3.4 and 3.5. */
const UNMAPPED: ReadonlyMap<string, string> = new Map([
  [ERR_USER_EMPTY.message, 'auth: user name is empty'],
  [ERR_USER_NOT_FOUND.message, 'auth: user not found'],
  [ERR_PERMISSION_DENIED.message, 'auth: permission denied'],
  [ERR_INVALID_AUTH_TOKEN.message, 'auth: invalid auth token'],
]);

/**
 * Admin rights for Maintenance Defragment, Snapshot, Hash and HashKV (etcd 3.4
 * v3rpc/maintenance.go authMaintenanceServer.isAuthenticated), refused as etcd refuses them:
 * code Unknown with the auth package's own text.
 */
export async function requireMaintenanceAdmin(backend: KvBackend, call: CallInfo): Promise<void> {
  try {
    await requireAdmin(backend, call);
  } catch (e) {
    const status = statusOf(e);
    const text = status === null ? undefined : UNMAPPED.get(status.message);
    if (text === undefined) throw e;
    throw new ApiError({ code: 'Unknown', message: text });
  }
}

/** One key-range permission a recipe step needs. */
export interface KeyNeed {
  readonly need: 'read' | 'write';
  readonly key: Uint8Array;
  /** Absent for one key; prefixEnd(prefix) for a prefix. */
  readonly rangeEnd?: Uint8Array;
}

/**
 * The Lock and Election services run as their caller: etcd's in-process client passes the
 * call's token to each KV step (v3lock/v3election), so a caller may only lock or campaign where it
 * may read and write the queue's keys. tenure checks what those steps need once, up front, and
 * refuses as etcd's services do: code Unknown with etcd's message.
 */
export async function requireKeysAsCaller(
  backend: KvBackend,
  call: CallInfo,
  needs: readonly KeyNeed[],
): Promise<void> {
  try {
    const as = await callerOf(backend, call);
    for (const n of needs) refuse(backend.machine.auth.checkKeys(as, n.need, n.key, n.rangeEnd));
  } catch (e) {
    const status = statusOf(e);
    if (status === null) throw e;
    throw new ApiError({ code: 'Unknown', message: status.message });
  }
}
