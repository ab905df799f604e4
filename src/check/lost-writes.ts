// No acknowledged write lost: every key was put once, by one client, with a value of its own;
// after the run the whole key range is read back with one linearizable read, and that read must
// hold every acknowledged put. It is Jepsen's "set" workload (Kingsbury's etcd analyses add
// unique elements and read them back at the end) with etcd's revisions as extra evidence. Checks:
// - lost: an acknowledged put's key is missing (etcd promises durability of what it acknowledged:
//   API guarantees, "Durability");
// - value: a key is present with a value no put of it wrote;
// - phantom: a key is present that no client ever tried to put;
// - revision: a key written once must have create_revision = mod_revision (two are a put applied
//   twice); an acknowledged put's mod_revision is the response header's revision (etcd's apply
//   returns the store revision of the write itself: server/etcdserver/apply.go, Put); no two
//   acknowledged puts share a revision (each Put is its own revision); no key is newer than the
//   read that saw it;
// - order: revisions follow real time (linearizability of the store's revision counter): a put
//   called after another put was acknowledged at revision r has a revision above r.
// A put whose outcome is unknown (failed after it may have been sent, or still open) may be
// present or absent; if present it is judged like any other (value, revision, order).

import { assert } from '../core/base/index.js';

export interface InsertAttempt {
  readonly client: number;
  readonly key: string;
  readonly value: string;
  /** When the put was called, on the run's clock. */
  readonly callMs: number;
  /** When it returned; Infinity when its outcome is unknown. */
  readonly returnMs: number;
  /** The response header's revision when acknowledged; undefined when failed or unknown. */
  readonly ackRevision?: number;
}

export interface ReadBackEntry {
  readonly key: string;
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
}

export interface ReadBack {
  /** The read's header revision. */
  readonly revision: number;
  /** When it returned, on the run's clock (what a phantom is dated with). */
  readonly atMs: number;
  readonly kvs: readonly ReadBackEntry[];
}

export type LostWriteKind = 'lost' | 'value' | 'phantom' | 'revision' | 'order';

export interface LostWriteViolation {
  readonly kind: LostWriteKind;
  readonly key: string;
  /** When it became visible: the put's acknowledgement (its call if unknown), or the read. */
  readonly atMs: number;
  readonly message: string;
}

export interface LostWritesResult {
  readonly ok: boolean;
  readonly violations: readonly LostWriteViolation[];
  readonly acknowledged: number;
  /** Puts with an unknown outcome found applied, and not. */
  readonly unknownPresent: number;
  readonly unknownAbsent: number;
}

export function checkLostWrites(
  attempts: readonly InsertAttempt[],
  read: ReadBack,
): LostWritesResult {
  const byKey = new Map<string, InsertAttempt>();
  for (const a of attempts) {
    assert(!byKey.has(a.key), () => `lost writes: key ${a.key} attempted twice`);
    byKey.set(a.key, a);
  }
  const present = new Map<string, ReadBackEntry>();
  for (const kv of read.kvs) present.set(kv.key, kv);
  const out: LostWriteViolation[] = [];
  const add = (kind: LostWriteKind, key: string, atMs: number, message: string): void => {
    out.push({ kind, key, atMs, message: `key ${key}: ${message}` });
  };
  let acknowledged = 0;
  let unknownPresent = 0;
  let unknownAbsent = 0;
  for (const a of attempts) {
    const kv = present.get(a.key);
    const acked = a.ackRevision !== undefined;
    if (acked) acknowledged++;
    else if (kv === undefined) unknownAbsent++;
    else unknownPresent++;
    if (kv === undefined) {
      if (acked)
        add('lost', a.key, a.returnMs, `acknowledged at revision ${a.ackRevision}, not read back`);
      continue;
    }
    const atMs = acked ? a.returnMs : a.callMs;
    if (kv.value !== a.value)
      add('value', a.key, atMs, `read back ${JSON.stringify(kv.value)}, put ${a.value}`);
    if (kv.createRevision !== kv.modRevision)
      add(
        'revision',
        a.key,
        atMs,
        `put once but created at revision ${kv.createRevision} and modified at ${kv.modRevision}`,
      );
    if (acked && kv.modRevision !== a.ackRevision)
      add(
        'revision',
        a.key,
        atMs,
        `acknowledged at revision ${a.ackRevision} but its mod_revision is ${kv.modRevision}`,
      );
    if (kv.modRevision > read.revision)
      add(
        'revision',
        a.key,
        atMs,
        `mod_revision ${kv.modRevision} after the read's ${read.revision}`,
      );
  }
  for (const kv of read.kvs) {
    if (!byKey.has(kv.key))
      add('phantom', kv.key, read.atMs, `read back at revision ${kv.modRevision}, never put`);
  }
  sharedRevisions(attempts, add);
  realTimeOrder(attempts, present, add);
  return {
    ok: out.length === 0,
    violations: out,
    acknowledged,
    unknownPresent,
    unknownAbsent,
  };
}

type Add = (kind: LostWriteKind, key: string, atMs: number, message: string) => void;

function sharedRevisions(attempts: readonly InsertAttempt[], add: Add): void {
  const byRevision = new Map<number, InsertAttempt>();
  for (const a of attempts) {
    if (a.ackRevision === undefined) continue;
    const other = byRevision.get(a.ackRevision);
    if (other === undefined) byRevision.set(a.ackRevision, a);
    else
      add(
        'revision',
        a.key,
        a.returnMs,
        `acknowledged at revision ${a.ackRevision}, as the put of ${other.key} was`,
      );
  }
}

/**
 * Each applied put's revision (the acknowledged one, or the one read back for an unknown put)
 * must exceed every revision acknowledged before the put was called. One sweep over the puts
 * by call time, with the acknowledgements taken in return order.
 */
function realTimeOrder(
  attempts: readonly InsertAttempt[],
  present: ReadonlyMap<string, ReadBackEntry>,
  add: Add,
): void {
  const acks = attempts
    .filter((a) => a.ackRevision !== undefined)
    .sort((x, y) => x.returnMs - y.returnMs);
  const calls = [...attempts].sort((x, y) => x.callMs - y.callMs);
  let next = 0;
  let before: InsertAttempt | undefined;
  for (const a of calls) {
    while (next < acks.length && (acks[next] as InsertAttempt).returnMs < a.callMs) {
      const b = acks[next++] as InsertAttempt;
      if (before === undefined || (b.ackRevision as number) > (before.ackRevision as number))
        before = b;
    }
    const revision = a.ackRevision ?? present.get(a.key)?.modRevision;
    if (before === undefined || revision === undefined) continue;
    if (revision <= (before.ackRevision as number))
      add(
        'order',
        a.key,
        a.ackRevision === undefined ? a.callMs : a.returnMs,
        `applied at revision ${revision}, but ${before.key} was acknowledged at revision ` +
          `${before.ackRevision} before this put was called`,
      );
  }
}
