// A benchmark for the checker on a large linearizable history, as the simulator will produce:
// clients issue operations back to back with overlapping intervals, each operation takes effect at
// a random point inside its interval, and a few outcomes are unknown. The targets are 10,000
// operations over 16 keys and 8 clients in under 5 s on one core, and a verdict (not "unknown")
// for 20,000 operations with 10 % of writes of unknown outcome (`unknownWrites`).

import { assert, prng, type Prng } from '../core/base/index.js';
import type { KvInput, KvOperation, KvOutput, KvValue } from './history.js';
import { checkKv, type KvCheckResult } from './linearizability.js';
import type { Verdict } from './model.js';

export interface LinearizableHistoryOptions {
  /** Operations in the history. Default 10,000. */
  readonly ops?: number | undefined;
  /** Distinct keys. Default 16. */
  readonly keys?: number | undefined;
  /** Concurrent clients. Default 8. */
  readonly clients?: number | undefined;
  readonly seed?: number | undefined;
  /**
   * Probability that an operation's outcome is unknown (half of those still take effect, some of
   * them late). The client is then retired and replaced by a fresh client id, as Jepsen does.
   * Default 0.002.
   */
  readonly unknownRate?: number | undefined;
  /**
   * Probability that a write's (put, append, delete, CAS) outcome is unknown, on top of
   * `unknownRate`; reads are not affected. A fault harness that times out writes produces this
   * shape. Default 0.
   */
  readonly unknownWrites?: number | undefined;
  /** Mean operation latency in time units. Default 1. */
  readonly latencyMean?: number | undefined;
  /** Mean pause between a client's operations, in the same units. Default 0.1. */
  readonly thinkMean?: number | undefined;
}

interface Draft {
  readonly clientId: number;
  readonly input: KvInput;
  readonly call: number;
  readonly return: number;
  readonly point: number;
  readonly unknown: boolean;
  output?: KvOutput;
}

/** The last values written per key that a CAS picks its `expected` from. */
const CAS_EXPECTED_RECENT = 3;

/** A history that is linearizable by construction: outputs come from applying ops in point order. */
export function linearizableKvHistory(options: LinearizableHistoryOptions = {}): KvOperation[] {
  const count = options.ops ?? 10_000;
  const keyCount = options.keys ?? 16;
  const clientCount = options.clients ?? 8;
  const unknownRate = options.unknownRate ?? 0.002;
  const unknownWrites = options.unknownWrites ?? 0;
  const latencyMean = options.latencyMean ?? 1;
  const thinkMean = options.thinkMean ?? 0.1;
  assert(count >= 0 && keyCount >= 1 && clientCount >= 1, 'bench: bad history shape');
  const r = prng(options.seed ?? 1);
  const workload = r.fork('workload');
  const timing = r.fork('timing');
  const keys = Array.from({ length: keyCount }, (_, i) => `k${i}`);
  const recent = new Map<string, string[]>();

  // Each client slot has a clock and a client id; the slot furthest behind in time goes next, so
  // drafts come out in call order.
  const slots = Array.from({ length: clientCount }, (_, i) => ({ id: i, time: 0 }));
  let nextClientId = clientCount;
  const drafts: Draft[] = [];
  for (let seq = 0; seq < count; seq++) {
    const slot = slots.reduce((a, b) => (b.time < a.time ? b : a));
    const call = slot.time + timing.exp(thinkMean);
    const latency = timing.exp(latencyMean);
    // The input comes from its own stream, so drawing it first leaves the timing draws, and so
    // the histories of earlier versions with unknownWrites = 0, unchanged.
    const input = randomInput(workload, keys, recent, `v${slot.id}.${seq}`);
    const unknown =
      timing.chance(unknownRate) || (input.type !== 'get' && timing.chance(unknownWrites));
    const point = unknown
      ? timing.chance(0.5)
        ? Infinity
        : call + timing.exp(latencyMean * 5)
      : call + timing.next() * latency;
    drafts.push({
      clientId: slot.id,
      input,
      call,
      return: unknown ? Infinity : call + latency,
      point,
      unknown,
    });
    slot.time = call + latency;
    if (unknown) slot.id = nextClientId++;
  }
  execute(drafts);
  return drafts.map((d) => ({
    clientId: d.clientId,
    input: d.input,
    output: d.unknown ? undefined : d.output,
    call: d.call,
    return: d.return,
  }));
}

function randomInput(
  r: Prng,
  keys: readonly string[],
  recent: Map<string, string[]>,
  value: string,
): KvInput {
  const key = r.pick(keys);
  const roll = r.int(0, 100);
  if (roll < 40) return { type: 'get', key };
  const written = recent.get(key) ?? [];
  if (roll < 85) {
    written.push(value);
    if (written.length > CAS_EXPECTED_RECENT) written.shift();
    recent.set(key, written);
  }
  if (roll < 60) return { type: 'put', key, value };
  if (roll < 75) return { type: 'append', key, value };
  if (roll < 85) {
    const expected = written.length > 1 ? r.pick(written.slice(0, -1)) : null;
    return { type: 'cas', key, expected, value };
  }
  return { type: 'delete', key };
}

function execute(drafts: Draft[]): void {
  const store = new Map<string, KvValue>();
  const order = drafts.filter((d) => d.point !== Infinity).sort((a, b) => a.point - b.point);
  for (const d of order) {
    const input = d.input;
    const current = store.get(input.key) ?? null;
    switch (input.type) {
      case 'get':
        d.output = { type: 'get', value: current };
        break;
      case 'put':
        store.set(input.key, input.value);
        d.output = { type: 'put' };
        break;
      case 'append':
        store.set(input.key, (current ?? '') + input.value);
        d.output = { type: 'append' };
        break;
      case 'delete':
        store.delete(input.key);
        d.output = { type: 'delete' };
        break;
      case 'cas': {
        const ok = current === input.expected;
        if (ok) store.set(input.key, input.value);
        d.output = { type: 'cas', ok };
        break;
      }
    }
  }
}

export interface BenchOptions extends LinearizableHistoryOptions {
  /** Check budget; past it the verdict is 'unknown'. Default 60,000 ms. */
  readonly timeoutMs?: number | undefined;
  readonly now?: (() => number) | undefined;
  /** As in KvCheckOptions: prune unknown-outcome writes before the search. Default true. */
  readonly pruneUnknownWrites?: boolean | undefined;
}

export interface BenchReport {
  readonly ops: number;
  readonly keys: number;
  readonly clients: number;
  readonly seed: number;
  /** Operations whose outcome is unknown. */
  readonly unknownOps: number;
  readonly verdict: Verdict;
  readonly partitions: number;
  readonly generateMs: number;
  readonly checkMs: number;
  /** What pruning did to unknown-outcome writes before the search (absent when switched off). */
  readonly pruned?: KvCheckResult['pruned'];
}

export function runBench(options: BenchOptions = {}): BenchReport {
  const now = options.now ?? (() => performance.now());
  const t0 = now();
  const history = linearizableKvHistory(options);
  const t1 = now();
  const result = checkKv(history, {
    timeoutMs: options.timeoutMs ?? 60_000,
    now,
    pruneUnknownWrites: options.pruneUnknownWrites,
  });
  const t2 = now();
  return {
    ops: history.length,
    keys: options.keys ?? 16,
    clients: options.clients ?? 8,
    seed: options.seed ?? 1,
    unknownOps: history.filter((op) => op.output === undefined).length,
    verdict: result.verdict,
    partitions: result.partitions,
    generateMs: t1 - t0,
    checkMs: t2 - t1,
    ...(result.pruned === undefined ? {} : { pruned: result.pruned }),
  };
}
