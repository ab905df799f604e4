// Key permissions of etcd's RBAC (etcd auth/range_perm_cache.go and pkg/adt/interval_tree.go, as
// of 3.4): a grant is one key, a half-open interval [key, range_end), or every key from `key` on
// (range_end "\0"). A user may read (or write) a single key when any of its grants of that type
// holds it, and a range only when the grants overlapping the range join into one contiguous run
// covering all of it — so [a,c) and [c,e) cover [a,e) even when they come from different roles.
import { toByteKey, type ByteKey } from './key-range.js';

export type PermissionType = 'READ' | 'WRITE' | 'READWRITE';

/** authpb.Permission: `rangeEnd` empty for one key, "\0" for every key from `key` on. */
export interface Permission {
  readonly permType: PermissionType;
  readonly key: Uint8Array;
  readonly rangeEnd: Uint8Array;
}

/** A half-open interval of byte keys; `end` null is +infinity. */
interface KeyInterval {
  readonly begin: ByteKey;
  readonly end: ByteKey | null;
}

/** Two interval sets per user: what it may read and what it may write. */
export interface MergedPermissions {
  readonly read: readonly KeyInterval[];
  readonly write: readonly KeyInterval[];
}

const FROM_KEY = '\0';

/** True when `end` is etcd's "to the end of the key space" marker. */
function isOpenEnd(end: Uint8Array): boolean {
  return end.length === 1 && end[0] === 0;
}

/**
 * A grant is valid when its key is not empty and its end is empty, "\0", or above the key
 * (etcd 3.4.25+ and 3.5's isValidPermissionRange; 3.4.23 stored empty or inverted ranges).
 */
export function isValidPermissionRange(key: Uint8Array, rangeEnd: Uint8Array): boolean {
  if (key.length === 0) return false;
  if (rangeEnd.length === 0 || isOpenEnd(rangeEnd)) return true;
  return toByteKey(key) < toByteKey(rangeEnd);
}

function intervalOf(p: Permission): KeyInterval {
  const begin = toByteKey(p.key);
  if (p.rangeEnd.length === 0) return { begin, end: begin + FROM_KEY }; // the point [k, k\0)
  return { begin, end: isOpenEnd(p.rangeEnd) ? null : toByteKey(p.rangeEnd) };
}

/** The union of the roles' grants, split by what they allow; READWRITE goes into both. */
export function mergePermissions(perms: Iterable<Permission>): MergedPermissions {
  const read: KeyInterval[] = [];
  const write: KeyInterval[] = [];
  for (const p of perms) {
    const ivl = intervalOf(p);
    if (p.permType !== 'WRITE') read.push(ivl);
    if (p.permType !== 'READ') write.push(ivl);
  }
  const byBegin = (a: KeyInterval, b: KeyInterval): number =>
    a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : 0;
  return { read: read.sort(byBegin), write: write.sort(byBegin) };
}

const endsAfter = (end: ByteKey | null, key: ByteKey): boolean => end === null || end > key;
const endAtLeast = (a: ByteKey | null, b: ByteKey | null): boolean =>
  a === null || (b !== null && a >= b);

/**
 * Whether `granted` (sorted by begin) allows the request's keys: a single key when `rangeEnd` is
 * empty, every key from `key` on when it is "\0", else [key, rangeEnd).
 */
export function permits(
  granted: readonly KeyInterval[],
  key: Uint8Array,
  rangeEnd: Uint8Array | undefined,
): boolean {
  const begin = toByteKey(key);
  if (rangeEnd === undefined || rangeEnd.length === 0)
    return granted.some((g) => g.begin <= begin && endsAfter(g.end, begin));
  const end = isOpenEnd(rangeEnd) ? null : toByteKey(rangeEnd);
  // The grants overlapping [begin, end), in begin order, must start at or before `begin`, leave
  // no gap, and reach `end` (interval_tree.go Contains).
  let reach: ByteKey | null | undefined; // undefined: nothing seen yet
  for (const g of granted) {
    const overlaps = (end === null || g.begin < end) && endsAfter(g.end, begin);
    if (!overlaps) continue;
    if (reach === undefined) {
      if (g.begin > begin) return false;
      reach = g.end;
    } else {
      if (reach !== null && reach < g.begin) return false;
      if (!endAtLeast(reach, g.end)) reach = g.end;
    }
    if (endAtLeast(reach, end)) return true;
  }
  return false;
}
