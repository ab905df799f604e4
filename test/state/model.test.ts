// Property test: random command sequences against a naive reference model (a plain map per
// revision), comparing Range at the latest and at every past revision, compaction errors, the
// events a watcher from revision 1 sees, and a snapshot/restore round trip. A failure prints
// fast-check's seed and the shrunk command list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { Command } from '../../src/core/state/command.js';
import { isEtcdError } from '../../src/core/state/etcd-errors.js';
import type { RequestOp } from '../../src/core/state/kv-types.js';
import { b, bigintSafe, Harness, str } from './fixtures.js';

interface ModelKv {
  value: string;
  c: number;
  m: number;
  ver: number;
  lease: number;
}

type State = Map<string, ModelKv>;

/** The naive model: the whole key space copied at every revision. */
class Model {
  states: State[] = [new Map<string, ModelKv>(), new Map<string, ModelKv>()]; // index = revision; revision 1 is empty
  compactRev = 0;
  leases = new Set<number>();

  get rev(): number {
    return this.states.length - 1;
  }

  latest(): State {
    return this.states[this.rev]!;
  }

  /** Apply a batch of writes at one new revision; returns false (no new revision) if none took. */
  write(ops: readonly WriteOp[]) {
    const next = new Map(this.latest());
    const rev = this.rev + 1;
    let changed = false;
    for (const op of ops) {
      if ('put' in op) {
        const prev = next.get(op.put);
        next.set(op.put, {
          value: op.value,
          c: prev ? prev.c : rev,
          m: rev,
          ver: prev ? prev.ver + 1 : 1,
          lease: op.lease ?? 0,
        });
        changed = true;
      } else {
        for (const k of [...next.keys()]) {
          if (inRange(k, op.del, op.end)) {
            next.delete(k);
            changed = true;
          }
        }
      }
    }
    if (changed) this.states.push(next);
    return changed;
  }
}

function inRange(k: string, key: string, end: string | null): boolean {
  return end === null ? k === key : k >= key && k < end;
}

const KEYS = ['a', 'ab', 'b', 'ba', 'c', 'd'];
const key = fc.constantFrom(...KEYS);
const value = fc.constantFrom('', '1', '2', 'xyz');
const leaseId = fc.integer({ min: 1, max: 3 });
const end = fc.option(fc.constantFrom('b', 'c', 'e', 'zz'), { nil: null });

type Step =
  | { t: 'put'; k: string; v: string }
  | { t: 'del'; k: string; end: string | null }
  | { t: 'txn'; k: string; ver: number; ok: WriteOp[]; else: WriteOp[] }
  | { t: 'compact'; back: number }
  | { t: 'grant'; id: number }
  | { t: 'putLeased'; k: string; lease: number }
  | { t: 'revoke'; id: number };

type WriteOp = { put: string; value: string; lease?: number } | { del: string; end: string | null };

const writeOp: fc.Arbitrary<WriteOp> = fc.oneof(
  fc.record({ put: key, value }),
  fc.record({ del: key, end }),
);

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('put' as const), k: key, v: value }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('del' as const), k: key, end }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('txn' as const),
      k: key,
      ver: fc.integer({ min: 0, max: 3 }),
      ok: fc.array(writeOp, { maxLength: 3 }),
      else: fc.array(writeOp, { maxLength: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('compact' as const),
      back: fc.integer({ min: -1, max: 6 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('grant' as const), id: leaseId }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('putLeased' as const), k: key, lease: leaseId }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('revoke' as const), id: leaseId }) },
);

/** The model's duplicate-key rule for a flat branch. */
function duplicate(ops: readonly WriteOp[]): boolean {
  const puts = ops.flatMap((o) => ('put' in o ? [o.put] : []));
  if (new Set(puts).size !== puts.length) return true;
  return ops.some((d) => 'del' in d && puts.some((p) => inRange(p, d.del, d.end)));
}

const toOp = (o: WriteOp): RequestOp =>
  'put' in o
    ? { type: 'put', request: { key: b(o.put), value: b(o.value) } }
    : {
        type: 'deleteRange',
        request: o.end === null ? { key: b(o.del) } : { key: b(o.del), rangeEnd: b(o.end) },
      };

function runStep(h: Harness, model: Model, s: Step): void {
  let cmd: Command;
  let expectError: string | null = null;
  switch (s.t) {
    case 'put':
      cmd = { type: 'put', request: { key: b(s.k), value: b(s.v) } };
      model.write([{ put: s.k, value: s.v }]);
      break;
    case 'del':
      cmd = {
        type: 'deleteRange',
        request: s.end === null ? { key: b(s.k) } : { key: b(s.k), rangeEnd: b(s.end) },
      };
      model.write([{ del: s.k, end: s.end }]);
      break;
    case 'txn': {
      cmd = {
        type: 'txn',
        request: {
          compare: [{ key: b(s.k), result: 'EQUAL', target: 'VERSION', version: s.ver }],
          success: s.ok.map(toOp),
          failure: s.else.map(toOp),
        },
      };
      if (duplicate(s.ok) || duplicate(s.else)) {
        expectError = 'etcdserver: duplicate key given in txn request';
      } else {
        const taken = (model.latest().get(s.k)?.ver ?? 0) === s.ver;
        model.write(taken ? s.ok : s.else);
      }
      break;
    }
    case 'grant':
      cmd = { type: 'leaseGrant', id: BigInt(s.id), ttlSeconds: 60, nowMs: 0 };
      if (model.leases.has(s.id)) expectError = 'etcdserver: lease already exists';
      model.leases.add(s.id);
      break;
    case 'putLeased':
      cmd = { type: 'put', request: { key: b(s.k), value: b('L'), lease: BigInt(s.lease) } };
      if (model.leases.has(s.lease)) model.write([{ put: s.k, value: 'L', lease: s.lease }]);
      else expectError = 'etcdserver: requested lease not found';
      break;
    case 'revoke': {
      cmd = { type: 'leaseRevoke', id: BigInt(s.id) };
      if (!model.leases.has(s.id)) {
        expectError = 'etcdserver: requested lease not found';
        break;
      }
      model.leases.delete(s.id);
      const doomed = [...model.latest()].filter(([, kv]) => kv.lease === s.id).map(([k]) => k);
      model.write(doomed.map((k) => ({ del: k, end: null })));
      break;
    }
    case 'compact': {
      const rev = model.rev - s.back;
      cmd = { type: 'compact', request: { revision: rev } };
      if (rev <= model.compactRev)
        expectError = 'etcdserver: mvcc: required revision has been compacted';
      else if (rev > model.rev)
        expectError = 'etcdserver: mvcc: required revision is a future revision';
      else model.compactRev = rev;
      break;
    }
  }
  const r = h.run(cmd);
  if (expectError === null) {
    assert.notEqual(r.type, 'error', JSON.stringify(r, bigintSafe));
  } else {
    assert.equal(r.type === 'error' ? r.error.message : r.type, expectError);
  }
  assert.equal(h.m.revision, model.rev, 'revision');
}

const ALL = { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) };

function seen(
  h: Harness,
  revision: number,
  span: { key: Uint8Array; rangeEnd?: Uint8Array } = ALL,
) {
  const r = h.m.range({ ...span, revision });
  if (isEtcdError(r)) return r.message;
  return r.kvs.map(
    (kv) =>
      `${str(kv.key)}=${str(kv.value)} c${kv.createRevision} m${kv.modRevision} v${kv.version} l${kv.lease}`,
  );
}

function expected(model: Model, revision: number, match: (k: string) => boolean = () => true) {
  if (revision < model.compactRev) return 'etcdserver: mvcc: required revision has been compacted';
  const state = model.states[revision]!;
  return [...state.keys()]
    .filter(match)
    .sort()
    .map((k) => {
      const kv = state.get(k)!;
      return `${k}=${kv.value} c${kv.c} m${kv.m} v${kv.ver} l${kv.lease}`;
    });
}

void test('random command sequences agree with the naive model', () => {
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 60, size: 'max' }), (steps) => {
      const h = new Harness();
      const model = new Model();
      const hub = h.m.openWatchHub();
      hub.create({ ...ALL, startRevision: 1 });
      for (const s of steps) runStep(h, model, s);
      // Every revision, latest included, as the model has it; ranges over sub-intervals too.
      for (let rev = 1; rev <= model.rev; rev++) {
        assert.deepEqual(seen(h, rev), expected(model, rev), `revision ${rev}`);
        if (rev >= model.compactRev) {
          const span = { key: b('ab'), rangeEnd: b('c') };
          assert.deepEqual(
            seen(h, rev, span),
            expected(model, rev, (k) => k >= 'ab' && k < 'c'),
          );
          assert.deepEqual(
            seen(h, rev, { key: b('b') }),
            expected(model, rev, (k) => k === 'b'),
          );
        }
      }
      assert.deepEqual(seen(h, 0), expected(model, model.rev), 'latest');
      // The watcher from revision 1 saw every change: replaying its events rebuilds the state.
      const rebuilt = new Map<string, string>();
      let lastRev = 0;
      for (const resp of hub.drain()) {
        for (const e of resp.events) {
          assert.ok(e.kv.modRevision >= lastRev, 'events in revision order');
          lastRev = e.kv.modRevision;
          if (e.type === 'PUT') rebuilt.set(str(e.kv.key), str(e.kv.value));
          else rebuilt.delete(str(e.kv.key));
        }
      }
      const latest = [...model.latest()].map(([k, kv]) => `${k}=${kv.value}`).sort();
      assert.deepEqual([...rebuilt].map(([k, v]) => `${k}=${v}`).sort(), latest);
      // A snapshot restores to the same digest and the same reads.
      const r = new Harness();
      r.m.restore(h.m.snapshot());
      assert.equal(r.m.digest(), h.m.digest());
      for (let rev = model.compactRev; rev <= model.rev; rev++) {
        assert.deepEqual(seen(r, rev), seen(h, rev));
      }
    }),
    { numRuns: 300 },
  );
});
