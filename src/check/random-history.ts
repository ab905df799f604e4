// Random small kv histories for cross-checking the checker against the brute-force oracle. Most
// come from a real sequential execution: every operation gets an interval and a linearization
// point inside it, and outputs are computed by applying operations in point order, so the
// unmutated history is linearizable by construction. Then, often, one mutation is planted (a wrong
// read, a flipped CAS, a shifted interval, a lost or doubled write) so that both verdicts occur.
// Times are small integers, so equal call and return times (closed intervals) are common.

import { assert, type Prng, prng } from '../core/base/index.js';
import type { KvInput, KvOperation, KvOutput, KvValue } from './history.js';

export interface RandomHistoryOptions {
  /** Most operations in one history. Default 8 (the brute-force oracle's comfortable size). */
  readonly opsMax?: number | undefined;
  /** Most clients. Default 3. */
  readonly clientsMax?: number | undefined;
  /** Most distinct keys. Default 2. */
  readonly keysMax?: number | undefined;
  /** What an absent key reads as while computing outputs; as in kvModel. Default null. */
  readonly absentValue?: '' | null | undefined;
  /**
   * Probability that a write's (put, append, delete, CAS) outcome is unknown; reads then always
   * complete. Default: any operation's outcome is unknown with probability 0.12.
   */
  readonly unknownWrites?: number | undefined;
  /**
   * Every put, append and CAS writes a value of its own ("v0", "v1", …) and a CAS expects a value
   * written before it, or absent, as a simulator's workload does; unknown-outcome writes can then
   * be settled from what was seen of them (unknown-writes.ts). Default false: values from a, b, c.
   */
  readonly distinctValues?: boolean | undefined;
}

const KEYS = ['x', 'y', 'z', 'w'];
const VALUES = ['a', 'b', 'c'];
/** Probability that an operation's outcome is unknown (its client then retires). */
const UNKNOWN_PROBABILITY = 0.12;
/** Probability that the history is left as executed (linearizable by construction). */
const UNMUTATED_PROBABILITY = 0.15;
/**
 * Probability that a CAS expects the key absent: with shared values, often enough that CAS from
 * absent is exercised; with distinct values, less, since expecting an earlier value is the case
 * pruning must get right.
 */
const CAS_FROM_ABSENT_SHARED = 0.3;
const CAS_FROM_ABSENT_DISTINCT = 0.2;

type Mutation = 'read' | 'cas' | 'shift' | 'lose' | 'double' | 'reorder';
const MUTATIONS: readonly Mutation[] = [
  'read',
  'read',
  'read',
  'cas',
  'cas',
  'shift',
  'lose',
  'double',
  'reorder',
];

interface Draft {
  readonly clientId: number;
  readonly input: KvInput;
  call: number;
  return: number;
  /** Where the operation takes effect; Infinity when it never does (an unknown outcome). */
  point: number;
  unknown: boolean;
  output: KvOutput | undefined;
}

export function randomKvHistory(seed: number, options: RandomHistoryOptions = {}): KvOperation[] {
  const r = prng(seed);
  const opsMax = options.opsMax ?? 8;
  const clients = r.int(1, (options.clientsMax ?? 3) + 1);
  const keys = KEYS.slice(0, r.int(1, Math.min(options.keysMax ?? 2, KEYS.length) + 1));
  const absent: KvValue = options.absentValue ?? null;
  assert(opsMax >= 1 && clients >= 1, 'random history: empty');

  const values = options.distinctValues === true ? distinctValues() : sharedValues;
  const count = r.int(Math.min(3, opsMax), opsMax + 1);
  const drafts = schedule(r, count, clients, keys, values, options.unknownWrites);
  const mutation = r.chance(UNMUTATED_PROBABILITY) ? undefined : r.pick(MUTATIONS);
  execute(r, drafts, absent, mutation);
  if (mutation === 'read' || mutation === 'cas') mutateOutput(r, drafts, mutation, absent);
  if (mutation === 'shift') shiftInterval(r, drafts);

  return drafts
    .map((d) => ({
      clientId: d.clientId,
      input: d.input,
      output: d.unknown ? undefined : d.output,
      call: d.call,
      return: d.unknown ? Infinity : d.return,
    }))
    .sort((a, b) => a.call - b.call || a.clientId - b.clientId);
}

/** Where written values and the values a CAS expects come from. */
interface Values {
  /** The value a new write writes. */
  written(r: Prng, key: string): string;
  /** The value a CAS expects; null for absent. */
  expected(r: Prng, key: string): KvValue;
}

const sharedValues: Values = {
  written: (r) => r.pick(VALUES),
  expected: (r) => (r.chance(CAS_FROM_ABSENT_SHARED) ? null : r.pick(VALUES)),
};

function distinctValues(): Values {
  const writtenByKey = new Map<string, string[]>();
  let next = 0;
  return {
    written: (_r, key) => {
      const value = `v${next++}`;
      writtenByKey.set(key, [...(writtenByKey.get(key) ?? []), value]);
      return value;
    },
    expected: (r, key) => {
      const written = writtenByKey.get(key) ?? [];
      return written.length === 0 || r.chance(CAS_FROM_ABSENT_DISTINCT) ? null : r.pick(written);
    },
  };
}

function randomInput(r: Prng, keys: readonly string[], values: Values): KvInput {
  const key = r.pick(keys);
  const roll = r.int(0, 100);
  if (roll < 35) return { type: 'get', key };
  if (roll < 60) return { type: 'put', key, value: values.written(r, key) };
  if (roll < 70) return { type: 'append', key, value: values.written(r, key) };
  if (roll < 78) return { type: 'delete', key };
  const expected = values.expected(r, key);
  return { type: 'cas', key, expected, value: values.written(r, key) };
}

/**
 * Sequential clients with small integer intervals; a client retires after an unknown outcome. With
 * `unknownWrites` undefined any operation's outcome is unknown with UNKNOWN_PROBABILITY.
 */
function schedule(
  r: Prng,
  count: number,
  clients: number,
  keys: readonly string[],
  values: Values,
  unknownWrites: number | undefined,
): Draft[] {
  const clock = Array.from({ length: clients }, () => r.int(0, 3));
  const retired = new Set<number>();
  const drafts: Draft[] = [];
  for (let i = 0; i < count && retired.size < clients; i++) {
    let c = r.int(0, clients);
    while (retired.has(c)) c = (c + 1) % clients;
    const call = (clock[c] as number) + r.int(0, 2);
    const ret = call + r.int(0, 4);
    // Without `unknownWrites` the draws come in the order earlier versions made them, so that a
    // seed still names the same history.
    const early = unknownWrites === undefined ? undefined : randomInput(r, keys, values);
    const unknown = r.chance(
      early === undefined ? UNKNOWN_PROBABILITY : early.type === 'get' ? 0 : (unknownWrites ?? 0),
    );
    // The effect lies inside the interval; an unknown one may land later, or never.
    const point = unknown
      ? r.chance(0.5)
        ? Infinity
        : call + r.next() * 8
      : call + r.next() * (ret - call);
    const input = early ?? randomInput(r, keys, values);
    drafts.push({ clientId: c, input, call, return: ret, point, unknown, output: undefined });
    if (unknown) retired.add(c);
    clock[c] = ret + r.int(1, 3);
  }
  return drafts;
}

/** Computes outputs by applying operations in order of their points, planting `lose`/`double`/`reorder`. */
function execute(r: Prng, drafts: Draft[], absent: KvValue, mutation: Mutation | undefined): void {
  const order = drafts.filter((d) => d.point !== Infinity).sort((a, b) => a.point - b.point);
  const writes = order.filter((d) => d.input.type !== 'get');
  const lost = mutation === 'lose' && writes.length > 0 ? r.pick(writes) : undefined;
  const doubled = mutation === 'double' && writes.length > 0 ? r.pick(writes) : undefined;
  if (mutation === 'reorder' && order.length >= 2) {
    // Swap two adjacent effects: an order real time may forbid.
    const i = r.int(0, order.length - 1);
    [order[i], order[i + 1]] = [order[i + 1] as Draft, order[i] as Draft];
  }
  const store = new Map<string, KvValue>();
  const apply = (d: Draft, record: boolean): void => {
    const input = d.input;
    const current = store.get(input.key) ?? absent;
    switch (input.type) {
      case 'get':
        if (record) d.output = { type: 'get', value: current };
        return;
      case 'put':
      case 'append':
      case 'delete':
        if (record) d.output = { type: input.type };
        if (d === lost && record) return;
        store.set(
          input.key,
          input.type === 'put'
            ? input.value
            : input.type === 'append'
              ? (current ?? '') + input.value
              : absent,
        );
        return;
      case 'cas': {
        const hit = (input.expected ?? absent) === current;
        if (record) d.output = { type: 'cas', ok: hit };
        if (hit && !(d === lost && record)) store.set(input.key, input.value);
        return;
      }
    }
  };
  for (const d of order) {
    apply(d, true);
    if (d === doubled) apply(d, false);
  }
}

/** Replaces one get's value or flips one CAS result, if the history has such an operation. */
function mutateOutput(r: Prng, drafts: Draft[], kind: 'read' | 'cas', absent: KvValue): void {
  const targets = drafts.filter(
    (d) => !d.unknown && d.output?.type === (kind === 'read' ? 'get' : 'cas'),
  );
  if (targets.length === 0) return;
  const d = r.pick(targets);
  const out = d.output;
  if (out?.type === 'cas') d.output = { type: 'cas', ok: !out.ok };
  if (out?.type === 'get') {
    const others = [absent, ...VALUES, 'ab', 'ba'].filter((v) => v !== out.value);
    d.output = { type: 'get', value: r.pick(others) };
  }
}

/** Moves one completed operation's whole interval a little earlier or later. */
function shiftInterval(r: Prng, drafts: Draft[]): void {
  const targets = drafts.filter((d) => !d.unknown);
  if (targets.length === 0) return;
  const d = r.pick(targets);
  const delta = r.pick([-3, -2, -1, 1, 2, 3]);
  const call = Math.max(0, d.call + delta);
  d.return = call + (d.return - d.call);
  d.call = call;
}
