// The naive key space (src/sim/keyspace-reference.ts) against tenure's EtcdMachine on random
// command sequences: every answer, and the whole key space after every command, must agree. Then
// each key-space mutant, planted in the machine, must make them disagree: the reference is only
// trusted because it catches them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MutantName } from '../../src/core/base/mutants.js';
import { prng, type Prng } from '../../src/core/base/prng.js';
import { logIndex } from '../../src/core/base/units.js';
import { encodeCommand, type Command } from '../../src/core/state/command.js';
import { DEFAULT_ETCD_LIMITS } from '../../src/core/state/etcd-limits.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import type {
  Compare,
  DeleteRangeRequest,
  LeaseId,
  PutRequest,
  RangeRequest,
  RequestOp,
  TxnRequest,
} from '../../src/core/state/kv-types.js';
import { KeyspaceReference } from '../../src/sim/keyspace-reference.js';

const enc = new TextEncoder();
const ALL = new Uint8Array([0]);
const SEQUENCES = 150;
const COMMANDS = 200;

interface GenState {
  rev: number;
  nowMs: number;
  leases: LeaseId[];
}

/** Random commands over six keys, with every option the reference models. */
function command(p: Prng, st: GenState): Command {
  const key = (): Uint8Array => enc.encode(`k${p.int(0, 5)}`);
  const end = (): Uint8Array | undefined =>
    p.pick([undefined, ALL, enc.encode(`k${p.int(0, 6)}`), new Uint8Array(0)]);
  const lease = (): LeaseId =>
    p.chance(0.6)
      ? 0n
      : st.leases.length > 0 && p.chance(0.8)
        ? p.pick(st.leases)
        : BigInt(p.int(1, 9));
  const put = (): PutRequest => {
    const r = p.next();
    if (r < 0.05) return { key: key(), value: new Uint8Array(0), ignoreValue: true };
    if (r < 0.1) return { key: key(), value: enc.encode(`v${p.int(0, 99)}`), ignoreLease: true };
    return {
      key: key(),
      value: enc.encode(`v${p.int(0, 99)}`),
      lease: lease(),
      prevKv: p.chance(0.4),
    };
  };
  const rangeEnd = end();
  const del = (): DeleteRangeRequest => ({
    key: key(),
    ...(p.chance(0.5) && rangeEnd ? { rangeEnd } : {}),
    prevKv: p.chance(0.4),
  });
  const range = (): RangeRequest => ({
    key: key(),
    ...(p.chance(0.5) ? { rangeEnd: ALL } : {}),
    limit: p.chance(0.3) ? p.int(1, 3) : 0,
    revision: p.chance(0.2) ? p.int(0, st.rev + 1) : 0,
    sortOrder: p.pick(['NONE', 'ASCEND', 'DESCEND'] as const),
    sortTarget: p.pick(['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'] as const),
    keysOnly: p.chance(0.1),
    countOnly: p.chance(0.1),
    minModRevision: p.chance(0.1) ? p.int(0, st.rev) : 0,
    maxCreateRevision: p.chance(0.1) ? p.int(0, st.rev) : 0,
  });
  const compare = (): Compare => {
    const base = {
      result: p.pick(['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'] as const),
      key: key(),
      ...(p.chance(0.2) ? { rangeEnd: ALL } : {}),
    };
    const n = p.int(0, st.rev + 1);
    switch (p.int(0, 5)) {
      case 0:
        return { ...base, target: 'VERSION', version: p.int(0, 4) };
      case 1:
        return { ...base, target: 'CREATE', createRevision: n };
      case 2:
        return { ...base, target: 'MOD', modRevision: n };
      case 3:
        return { ...base, target: 'VALUE', value: enc.encode(`v${p.int(0, 99)}`) };
      default:
        return { ...base, target: 'LEASE', lease: lease() };
    }
  };
  const op = (depth: number): RequestOp => {
    const r = p.next();
    if (r < 0.3) return { type: 'range', request: range() };
    if (r < 0.6) return { type: 'put', request: put() };
    if (r < 0.85 || depth > 1) return { type: 'deleteRange', request: del() };
    return { type: 'txn', request: txn(depth + 1) };
  };
  const txn = (depth: number): TxnRequest => ({
    compare: Array.from({ length: p.int(0, 2) }, compare),
    success: Array.from({ length: p.int(0, 3) }, () => op(depth)),
    failure: Array.from({ length: p.int(0, 2) }, () => op(depth)),
  });
  const r = p.next();
  if (r < 0.25) return { type: 'put', request: put() };
  if (r < 0.35) return { type: 'deleteRange', request: del() };
  if (r < 0.7) return { type: 'txn', request: txn(0) };
  if (r < 0.74) return { type: 'compact', request: { revision: p.int(0, st.rev + 1) } };
  if (r < 0.82)
    return {
      type: 'leaseGrant',
      id: p.chance(0.5) ? 0n : BigInt(p.int(1, 9)),
      ttlSeconds: p.int(1, 10),
      nowMs: st.nowMs,
    };
  const id = lease() || 1n;
  if (r < 0.88)
    return { type: 'leaseRevoke', id, ...(p.chance(0.5) ? { ifExpiredAtMs: st.nowMs } : {}) };
  if (r < 0.93) return { type: 'leaseKeepAlive', id, nowMs: st.nowMs };
  if (r < 0.96) return { type: 'leaseRefreshAll', nowMs: st.nowMs, extraMs: 1000 };
  return {
    type: 'leaseCheckpoint',
    checkpoints: st.leases.slice(0, 2).map((l) => ({ id: l, remainingTtlSeconds: p.int(0, 10) })),
  };
}

/** The first disagreement over one random sequence, or undefined. */
function disagreement(seed: number, mutant?: MutantName): string | undefined {
  const p = prng(seed);
  const machine = new EtcdMachine(DEFAULT_ETCD_LIMITS, new Set(mutant ? [mutant] : []));
  const reference = new KeyspaceReference(DEFAULT_ETCD_LIMITS);
  const st: GenState = { rev: 1, nowMs: 0, leases: [] };
  for (let i = 1; i <= COMMANDS; i++) {
    st.nowMs += p.int(0, 3000);
    const cmd = command(p, st);
    const result = machine.apply(logIndex(i), encodeCommand(cmd));
    const theirs = KeyspaceReference.text(KeyspaceReference.answerOf(result));
    const ref = reference.apply(cmd, result);
    const mine = ref.kind === 'skip' ? theirs : KeyspaceReference.text(ref);
    if (mine !== theirs) return `command ${i} (${cmd.type}): machine ${theirs}, reference ${mine}`;
    const everything = { key: ALL, rangeEnd: ALL };
    const got = machine.range(everything);
    assert.ok('kvs' in got);
    const a = KeyspaceReference.text({ kind: 'ok', answer: got.kvs });
    const b = KeyspaceReference.text({ kind: 'ok', answer: reference.latest() });
    if (a !== b) return `after command ${i} (${cmd.type}): machine holds ${a}, reference ${b}`;
    if (result.type === 'leaseGrant') st.leases.push(result.response.id);
    st.rev = machine.revision;
  }
  return undefined;
}

test(`the reference and EtcdMachine agree on ${SEQUENCES} random sequences`, () => {
  for (let seed = 1; seed <= SEQUENCES; seed++) {
    const d = disagreement(seed);
    assert.equal(d, undefined, `seed ${seed}: ${d}`);
  }
});

const PLANTED: readonly MutantName[] = [
  'txnLessAsLessEqual',
  'prevKvAfterWrite',
  'rangeCountAfterLimit',
  'recreatedKeyKeepsVersion',
  'ignoreLeaseDetaches',
  'revokeMissesKey',
];

for (const mutant of PLANTED) {
  test(`the reference catches ${mutant} planted in the machine`, () => {
    let caught: string | undefined;
    for (let seed = 1; seed <= SEQUENCES && caught === undefined; seed++)
      caught = disagreement(seed, mutant);
    assert.ok(caught !== undefined, `${mutant} went unnoticed over ${SEQUENCES} sequences`);
  });
}
