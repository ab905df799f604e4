// Fuzzing what a member reads back from its data directory on restart (src/replica/wal.ts, the
// key space's snapshot codec, the server snapshot, log records): a WAL or snapshot damaged byte
// by byte gives a clean CorruptWalError or loses only a torn tail, never an fsynced record in
// the middle; records whose checksum was recomputed over damaged payloads (a bug that wrote
// them so) are refused with typed errors, never a RangeError or a TypeError.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { logIndex, nodeId, term } from '../../src/core/base/units.js';
import type { Entry, HardState } from '../../src/core/raft/types.js';
import { encodeCommand, type Command } from '../../src/core/state/command.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import { SnapshotDecodeError } from '../../src/core/state/snapshot-codec.js';
import { crc32 } from '../../src/replica/crc32.js';
import { LogFormatError, readRecord } from '../../src/replica/member/log-record.js';
import { encodeEtcdEntry, ServerMachine } from '../../src/replica/member/server-machine.js';
import {
  CorruptWalError,
  decodeSnapshot,
  encodeEntries,
  encodeHardState,
  encodeSnapshot,
  encodeSnapshotMarker,
  recover,
  type Recovered,
} from '../../src/replica/wal.js';
import { commandArb, memberCommandArb, snapshotArb } from './arbitraries.js';
import { decodesOrRefuses, fuzzParams, hostile, mutated } from './mutate.js';

const opts = { mutants: NO_MUTANTS };

// ---- a WAL as the replica writes it

type WalRecord =
  | { readonly kind: 'entries'; readonly entries: readonly Entry[] }
  | { readonly kind: 'hardState'; readonly hs: HardState }
  | { readonly kind: 'marker'; readonly index: number };

function encodeRecord(r: WalRecord): Uint8Array {
  if (r.kind === 'entries') return encodeEntries(r.entries);
  if (r.kind === 'hardState') return encodeHardState(r.hs);
  return encodeSnapshotMarker(logIndex(r.index), term(1));
}

/** Records of a plausible log: entries appended (and sometimes rewritten), hard states. */
const walArb: fc.Arbitrary<readonly WalRecord[]> = fc
  .array(
    fc.oneof(
      fc.record({
        kind: fc.constant('entries' as const),
        from: fc.integer({ min: 1, max: 30 }),
        texts: fc.array(fc.uint8Array({ maxLength: 24 }), { minLength: 1, maxLength: 3 }),
      }),
      fc.record({
        kind: fc.constant('hardState' as const),
        t: fc.integer({ min: 0, max: 9 }),
        commit: fc.integer({ min: 0, max: 30 }),
      }),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((xs) =>
    xs.map((x): WalRecord => {
      if (x.kind === 'hardState')
        return {
          kind: 'hardState',
          hs: { term: term(x.t), vote: nodeId(1), commit: logIndex(x.commit) },
        };
      return {
        kind: 'entries',
        entries: x.texts.map((data, i) => ({
          index: logIndex(x.from + i),
          term: term(1),
          type: 'normal',
          data,
        })),
      };
    }),
  );

const cat = (parts: readonly Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

function sameRecovery(a: Recovered, b: Recovered): boolean {
  try {
    assert.deepEqual(a.entries, b.entries);
    assert.deepEqual(a.hardState, b.hardState);
    return true;
  } catch {
    return false;
  }
}

test('WAL damaged byte by byte: CorruptWalError, or every record before the damage', () => {
  fc.assert(
    fc.property(walArb, fc.boolean(), fc.nat(), (records, zeroTail, seed) => {
      const parts = records.map(encodeRecord);
      const original = cat(zeroTail ? [...parts, new Uint8Array(64)] : parts);
      const damaged = fc.sample(mutated(fc.constant(original)), { seed, numRuns: 1 })[0];
      assert.ok(damaged !== undefined);
      const got = decodesOrRefuses(
        () => recover(damaged, undefined, opts),
        [CorruptWalError],
        damaged,
      );
      // Where the damage is: bytes [first, originalEnd) of the original differ.
      let first = 0;
      while (
        first < damaged.length &&
        first < original.length &&
        damaged[first] === original[first]
      )
        first++;
      let same = 0;
      while (
        same < damaged.length - first &&
        same < original.length - first &&
        damaged[damaged.length - 1 - same] === original[original.length - 1 - same]
      )
        same++;
      const damageEnd = original.length - same;
      const ends: number[] = [];
      let at = 0;
      for (const p of parts) ends.push((at += p.length));
      const whole = ends.filter((e) => e <= first).length;
      // A whole original record after the damage, unchanged: the damage is in the middle.
      const intactAfter = parts.some((p, i) => ends[i]! - p.length >= damageEnd);
      if (first >= original.length && damaged.length >= original.length) {
        // Only bytes appended after the log (or nothing changed): the log is all there.
        if (got !== undefined) assert.ok(sameRecovery(got, recover(original, undefined, opts)));
        return;
      }
      if (intactAfter && damageEnd > first) {
        assert.equal(got, undefined, 'damage with valid records after it must refuse to start');
        return;
      }
      if (got === undefined) return;
      // What came back is the replay of a prefix of the records, at least the undamaged ones.
      const prefixes = parts
        .map((_, i) => i + 1)
        .filter((n) => n >= whole)
        .map((n) => recover(cat(parts.slice(0, n)), undefined, opts));
      if (whole === 0) prefixes.push(recover(new Uint8Array(0), undefined, opts));
      assert.ok(
        prefixes.some((p) => sameRecovery(got, p)),
        `recovered ${got.entries.length} entries; the damage at ${first} follows ${whole} records`,
      );
    }),
    fuzzParams(),
  );
});

/** A record whose payload was damaged and its CRC recomputed: a writer bug, not a torn write. */
function reframed(payload: Uint8Array): Uint8Array {
  const out = Buffer.alloc(8 + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload), 4);
  out.set(payload, 8);
  return new Uint8Array(out);
}

test('WAL records with valid checksums over damaged payloads: decoded or CorruptWalError', () => {
  const payloadArb = walArb.map((records) => records.map((r) => encodeRecord(r).subarray(8)));
  fc.assert(
    fc.property(
      payloadArb.chain((payloads) =>
        fc.tuple(...payloads.map((p) => hostile(fc.constant(new Uint8Array(p)), 64))),
      ),
      (payloads) => {
        const wal = cat(payloads.filter((p) => p.length > 0).map(reframed));
        const r = decodesOrRefuses(() => recover(wal, undefined, opts), [CorruptWalError], wal);
        if (r === undefined) return;
        for (const e of r.entries) {
          assert.ok(Number.isSafeInteger(e.index) && e.index > 0, `index ${e.index}`);
          assert.ok(Number.isSafeInteger(e.term) && e.term >= 0, `term ${e.term}`);
        }
        if (r.hardState !== undefined) {
          assert.ok(Number.isSafeInteger(r.hardState.term) && r.hardState.term >= 0);
          assert.ok(Number.isSafeInteger(r.hardState.commit) && r.hardState.commit >= 0);
        }
      },
    ),
    fuzzParams(),
  );
});

// ---- the snapshot file and the snapshot inside it

test('snapshot file damaged byte by byte: decoded, or CorruptWalError', () => {
  fc.assert(
    fc.property(hostile(snapshotArb.map(encodeSnapshot)), (bytes) => {
      decodesOrRefuses(() => decodeSnapshot(bytes), [CorruptWalError], bytes);
    }),
    fuzzParams(),
  );
});

const b = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A server snapshot of a machine that ran `cmds`, with member records from `members`. */
const serverSnapshotArb = fc
  .record({
    cmds: fc.array(commandArb, { maxLength: 8 }),
    puts: fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 6 }), fc.uint8Array()), {
      maxLength: 6,
    }),
    members: fc.array(memberCommandArb, { maxLength: 2 }),
  })
  .map(({ cmds, puts, members }) => {
    const sm = new ServerMachine();
    let i = 0;
    const all: Command[] = [
      { type: 'leaseGrant', id: 7n, ttlSeconds: 30, nowMs: 1 },
      ...puts.map(([key, value]): Command => ({ type: 'put', request: { key, value, lease: 7n } })),
      ...cmds,
    ];
    for (const c of all) sm.apply(logIndex(++i), encodeEtcdEntry(c, 1));
    for (const m of members)
      sm.apply(logIndex(++i), new Uint8Array([1, 2, ...b(JSON.stringify(m))]));
    return sm.snapshot();
  });

test('server snapshots damaged byte by byte: restored whole, or SnapshotDecodeError', () => {
  fc.assert(
    fc.property(hostile(serverSnapshotArb, 512), (bytes) => {
      const sm = new ServerMachine();
      const ok = decodesOrRefuses(
        () => {
          sm.restore(bytes);
          return true;
        },
        [SnapshotDecodeError],
        bytes,
      );
      if (ok === undefined) return;
      // A machine restored from it works: it digests, snapshots and applies.
      sm.digest();
      sm.snapshot();
      sm.apply(
        logIndex(sm.etcd.appliedIndex + 1),
        encodeEtcdEntry({ type: 'put', request: { key: b('after'), value: b('x') } }, 1),
      );
    }),
    fuzzParams(),
  );
});

test('key-space snapshots damaged byte by byte: restored, or SnapshotDecodeError', () => {
  const keySpace = fc.array(commandArb, { maxLength: 10 }).map((cmds) => {
    const m = new EtcdMachine();
    cmds.forEach((c, i) => m.apply(logIndex(i + 1), encodeCommand(c)));
    return m.snapshot();
  });
  fc.assert(
    fc.property(hostile(keySpace, 512), (bytes) => {
      const m = new EtcdMachine();
      decodesOrRefuses(() => m.restore(bytes), [SnapshotDecodeError], bytes);
    }),
    fuzzParams(),
  );
});

// ---- log records

test('log records: any bytes are a record, null, or LogFormatError', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 16 }), (bytes) => {
      decodesOrRefuses(() => readRecord(logIndex(1), bytes), [LogFormatError], bytes);
    }),
    fuzzParams(500),
  );
});

test('log entries damaged byte by byte apply without an exception, on a fresh machine', () => {
  const entries = commandArb.map((c) => encodeEtcdEntry(c, 1));
  fc.assert(
    fc.property(hostile(entries), (bytes) => {
      if (bytes.length < 2) return; // too short for a record: never written (a member asserts)
      const sm = new ServerMachine();
      decodesOrRefuses(() => sm.apply(logIndex(1), bytes), [LogFormatError], bytes);
    }),
    fuzzParams(),
  );
});
