// A verdict-preserving rewrite of a kv history's unknown-outcome writes, run before the search.
// A write whose client never learnt its outcome is checked as returning at +∞: it may take effect
// at any point after its call, or never. The search may place it anywhere, and a few hundred of
// them on one key make it exponential. Most can be settled from the rest of the history, as
// etcd's robustness tests settle the puts they can identify (tests/robustness/validate/
// patch_history.go: a put of a unique value that nothing persisted is removed, and one that was
// seen gets the earliest time it was seen as its return time). Here the evidence is the history's
// own reads and CASes, and each rule is proved below.
//
// Terms, for one key. A state is a base (the value of the last put, or of the last CAS that took
// effect; or the absent value, after a delete or at the start) followed by the values appended
// since. A state carries an unknown-outcome write p when it starts with p's value (p a put or a
// CAS) or contains it (p an append). In a linearization L where p takes effect, p's stretch is the
// run of operations after p up to the next put or delete: every state in it carries p, which is
// its base or one of its pieces.
//
// Rule 1 (drop). p is removed when (a) no completed get returned a value that carries p, (b) no CAS
// that succeeded, or that has an unknown outcome and does not already write the opaque value u of
// rule 2, expected one, and (c) no completed CAS that failed returned at or after p's call.
// Rule 2 (opaque). When (a) and (b) hold but (c) does not, and (c') no completed CAS that failed and
// returned at or after p's call expected a value that carries p, p writes the opaque value u
// instead: put(u), or cas(expected → u) for a CAS. u is a character that occurs in no value of the
// history, so no get returns a state that carries it and no CAS expects one; kvModel's
// `opaqueValue` makes appending to u leave u, so an unknown append becomes put(u) as well. The
// rewritten writes are then copies of one operation, which the search tries once at each point
// instead of once per copy (search.ts).
// Rule 3 (bound). When no state without p can carry p (`unmistakable`), a completed get that returned
// a value carrying p, or a completed successful CAS that expected one, observed p. p then gets the
// earliest such return as its return time, if that is not before its call, and the output of a
// write that took effect.
// Rule 4 (expire), in `expireUnknownCases`: an unknown CAS whose expected value can never again be
// the state is dropped, or given the time after which it cannot (Operation.expiresMs).
//
// Proofs. A rule that removes an unknown-outcome operation or constrains one can only turn a
// linearizable history into a non-linearizable one, never the reverse, so for rules 1 and 3 only
// "linearizable before ⇒ linearizable after" needs proof; rule 2 needs both directions.
// Rule 1: take L with p in it (if p is a CAS that did not take effect in L, removing it changes no
// state). In p's stretch, by (a), (b) and (c), there is no completed get, no completed CAS that
// took effect and no completed CAS that failed: one after p in L returned at or after p's call.
// What is left there is appends, whose answer depends on no state, and unknown CASes, which
// either had no effect or wrote u. Remove p and the CASes that had no effect: the states in the
// stretch change (an unknown CAS that wrote u may now take effect or not), but nothing left in it
// depends on them, since a state that is u, or follows one, is seen by nothing, the put or delete
// that ends the stretch sets the same state as before, and real-time order is kept. The rest is a
// linearization without p.
// Rule 2: the two histories differ only in regions, each from a rewritten write that took effect
// to the next put or delete that was not rewritten. Take a linearization of either history and
// keep its order for the other. In a region the state is u in the rewritten history, and in the
// original it either carries a rewritten write q that is in the region (q is the base, or a
// rewritten append is one of the pieces) or is u. A completed get, or a completed CAS that takes
// effect, in a region would see that state, in either history: none does in the rewritten one,
// since u occurs in no value, and none does in the original, by (a) and (b) for q. An unknown
// CAS in a region has no effect in the rewritten history; in the original it has none either,
// except one that writes u, by (b), and after it the original state is u: still in the region.
// Appends depend on nothing, and a completed CAS that failed fails in both: u is expected by no
// CAS, and in the original, by (c') for q, no CAS after q expects a value that carries q. The put
// or delete that ends a region sets the same state in both, and outside regions the states are
// equal. So the order is a linearization of both histories or of neither.
// Rule 3: without p, a state's base is another write's value or the absent value, and by
// `unmistakable` neither the base nor the pieces appended after it can make a state that carries
// p. So in any linearization L, p took effect before each operation O that saw a state carrying
// it. An operation called after O returned comes after O in L, and so after p: L respects p's new
// return time, and p's new output is what it did.
// Together: the rules of a round are decided from the round's input and applied at once. Writes
// bounded by rule 3 took effect; one of them that is a CAS and lies in the stretch or region of a
// write removed or rewritten in the same round expected a value carrying that write, which (b)
// rules out. Rule 1 and rule 2 need no get or CAS in their stretches and regions, and rewritten
// writes are puts, which end a stretch, so removals and rewrites do not disturb each other's
// proofs. Rounds repeat because one round's outcome is the next one's evidence: a bounded CAS is a
// completed observer now, and a dropped CAS, or one that now writes u, observes nothing.

import type { KvInput, KvOutput, KvValue } from './history.js';
import type { Operation } from './model.js';
import { type ObservationKind, type ProbeStats, ValueProbes } from './value-probes.js';

/** A kv operation as the search takes it: a KvOperation, possibly with an expiry time. */
type KvOp = Operation<KvInput, KvOutput>;

export interface UnknownWritePruning {
  /** The rewritten history, in the input's order. */
  readonly history: readonly KvOp[];
  /** Unknown-outcome writes removed (rules 1 and 4). */
  readonly dropped: number;
  /** Unknown-outcome writes that now write the opaque value (rule 2). */
  readonly opaque: number;
  /** Unknown-outcome writes given a return time (rule 3). */
  readonly bounded: number;
  /** Unknown-outcome CASes given an expiry time (rule 4). */
  readonly expiring: number;
  /** The opaque value, for kvModel's `opaqueValue`; undefined when rule 2 was never used. */
  readonly opaqueValue: string | undefined;
}

/**
 * Rounds of rules 1 to 3 before stopping. Each is a pass over the keys with unknown writes; more
 * than two are needed only for chains of unknown CASes each expecting the previous one's value,
 * which are rare, and stopping early is sound.
 */
const ROUNDS_MAX = 8;
/** Where the search for a character absent from the history starts: Unicode's private use area. */
const OPAQUE_FIRST_CODE = 0xe000;
/**
 * Candidates for the opaque character tried before giving up on rule 2 (which is sound): each
 * costs a scan of every value, and a history using this many private-use characters is unusual.
 */
const OPAQUE_CANDIDATES_MAX = 64;

type UnknownWrite = Extract<KvInput, { type: 'put' } | { type: 'cas' } | { type: 'append' }>;

/**
 * Applies the rules above to the unknown-outcome writes (`output === undefined`) of a history; an
 * operation without an output is taken to return at +∞ whatever its `return` says. `absent` is
 * what an absent key reads as, as in kvModel.
 */
export function pruneUnknownWrites(
  history: readonly KvOp[],
  absent: '' | null = null,
): UnknownWritePruning {
  const none = { history, dropped: 0, opaque: 0, bounded: 0, expiring: 0, opaqueValue: undefined };
  if (!history.some((op) => op.output === undefined)) return none;
  const opaqueValue = unusedCharacter(history);
  let ops = history;
  let dropped = 0;
  let opaque = 0;
  let bounded = 0;
  for (let round = 0; round < ROUNDS_MAX; round++) {
    const next = pruneRound(ops, absent, opaqueValue);
    ops = next.history;
    dropped += next.dropped;
    opaque += next.opaque;
    bounded += next.bounded;
    // Only a CAS that was settled changes what the next round sees (observations).
    if (!next.casSettled) break;
  }
  const expiry = expireUnknownCases(ops, absent);
  return {
    history: expiry.history,
    dropped: dropped + expiry.dropped,
    opaque,
    bounded,
    expiring: expiry.expiring,
    opaqueValue: opaque > 0 ? opaqueValue : undefined,
  };
}

/** One round of rules 1 to 3. */
function pruneRound(
  history: readonly KvOp[],
  absent: '' | null,
  opaqueValue: string | undefined,
): UnknownWritePruning & { readonly casSettled: boolean } {
  const evidenceOf = perKey(history, (ops) => keyEvidence(ops, absent, opaqueValue));
  const out: KvOp[] = [];
  let dropped = 0;
  let opaque = 0;
  let bounded = 0;
  let casSettled = false;
  for (const op of history) {
    const input = op.input;
    const settled =
      op.output !== undefined ||
      input.type === 'get' ||
      input.type === 'delete' ||
      input.value === opaqueValue;
    if (settled) {
      out.push(op);
      continue;
    }
    const fate = decide(evidenceOf(input.key), op.call, input);
    if (input.type === 'cas' && fate !== 'keep') casSettled = true;
    if (fate === 'drop') {
      dropped++;
    } else if (fate === 'opaque' && opaqueValue !== undefined) {
      opaque++;
      out.push({ ...op, input: writingOpaque(input, opaqueValue) });
    } else if (typeof fate === 'number') {
      bounded++;
      out.push({ ...op, output: tookEffect(input), return: fate });
    } else {
      out.push(op);
    }
  }
  return { history: out, dropped, opaque, bounded, expiring: 0, opaqueValue, casSettled };
}

function writingOpaque(input: UnknownWrite, opaqueValue: string): KvInput {
  return input.type === 'cas'
    ? { ...input, value: opaqueValue }
    : { type: 'put', key: input.key, value: opaqueValue };
}

function tookEffect(input: UnknownWrite): KvOutput {
  return input.type === 'cas' ? { type: 'cas', ok: true } : { type: input.type };
}

/** Rule 1, rule 2, rule 3 (the new return time), or none of them. */
function decide(
  e: KeyEvidence,
  callMs: number,
  input: UnknownWrite,
): 'drop' | 'opaque' | 'keep' | number {
  const x = input.value;
  // An empty append changes no state: the search would never place it anyway. Every state
  // starts with an empty put's value, so nothing is known about one.
  if (x === '') return input.type === 'append' ? 'drop' : 'keep';
  const stats = (input.type === 'append' ? e.inside : e.starts).of(x) as ProbeStats;
  if (stats.seenCount === 0 && stats.maybeCount === 0) {
    if (e.failedCasReturnMaxMs < callMs) return 'drop';
    return stats.failedLastReturnMs < callMs ? 'opaque' : 'keep';
  }
  if (stats.seenCount === 0 || !unmistakable(e, input, stats)) return 'keep';
  return stats.seenFirstReturnMs >= callMs ? stats.seenFirstReturnMs : 'keep';
}

/**
 * True when no state without this write can carry it. For a put or CAS of v: v is not empty and
 * no other non-empty value written on the key (by a put, CAS or append, of any outcome) starts
 * with v or is a prefix of v. The first non-empty piece of a state without this write (its base,
 * or the first value appended after an empty base) would have to be one of those. For an append
 * of x, whose first character is c: the same, and no other written value has c anywhere but at its
 * start. An occurrence of x in a concatenation of other values then begins at some value's first
 * character, so that value starts with x or is a prefix of x.
 */
function unmistakable(e: KeyEvidence, input: UnknownWrite, stats: ProbeStats): boolean {
  const x = input.value;
  if (stats.writtenCount !== 1 || hasWrittenPrefix(e.writtenSet, x)) return false;
  if (input.type !== 'append') return true;
  const c = x.charAt(0);
  const own = x.indexOf(c, 1) === -1 ? 0 : 1;
  return (e.innerCharCount.get(c) ?? 0) === own;
}

/** True when some proper, non-empty prefix of `v` is in `written`. */
function hasWrittenPrefix(written: ReadonlySet<string>, v: string): boolean {
  for (let length = 1; length < v.length; length++) {
    if (written.has(v.slice(0, length))) return true;
  }
  return false;
}

/** What the rest of one key's history says about its unknown writes. */
interface KeyEvidence {
  /** Unknown puts' and CASes' values: what starts with them. */
  readonly starts: ValueProbes;
  /** Unknown appends' values: what contains them (fed every suffix that starts as one does). */
  readonly inside: ValueProbes;
  /** Every non-empty value written on the key. */
  readonly writtenSet: ReadonlySet<string>;
  /** For each first character of an unknown append: the written values having it past index 0. */
  readonly innerCharCount: ReadonlyMap<string, number>;
  /** The latest return of a completed CAS that failed, -∞ if none. */
  readonly failedCasReturnMaxMs: number;
}

function keyEvidence(
  ops: readonly KvOp[],
  absent: '' | null,
  opaqueValue: string | undefined,
): KeyEvidence {
  const unknown = ops.filter((op) => op.output === undefined);
  const valuesOf = (type: 'append' | 'put' | 'cas'): string[] =>
    unknown.flatMap((op) =>
      op.input.type === type && op.input.value !== opaqueValue ? [op.input.value] : [],
    );
  const starts = new ValueProbes([...valuesOf('put'), ...valuesOf('cas')]);
  const appended = valuesOf('append').filter((v) => v !== '');
  const inside = new ValueProbes(appended);
  const appendStarts = new Set(appended.map((v) => v.charAt(0)));
  const writtenSet = new Set<string>();
  const innerCharCount = new Map<string, number>();
  let failedCasReturnMaxMs = -Infinity;
  // Only a string can carry a write; with absent = null, a read of an absent key saw no value.
  const asState = (v: KvValue): string | null => v ?? absent;
  const observe = (value: string | null, kind: ObservationKind, returnMs: number): void => {
    if (value === null) return;
    starts.observe(value, kind, returnMs);
    if (appendStarts.size === 0) return;
    for (let i = 0; i < value.length; i++) {
      if (appendStarts.has(value.charAt(i))) inside.observe(value.slice(i), kind, returnMs);
    }
  };
  for (const op of ops) {
    const { input, output } = op;
    if (input.type !== 'get' && input.type !== 'delete' && input.value !== '') {
      const w = input.value;
      writtenSet.add(w);
      starts.write(w, op);
      inside.write(w, op);
      for (const c of appendStarts) {
        if (w.indexOf(c, 1) !== -1) innerCharCount.set(c, (innerCharCount.get(c) ?? 0) + 1);
      }
    }
    if (output?.type === 'get') observe(asState(output.value), 'seen', op.return);
    if (input.type !== 'cas') continue;
    const ok = output?.type === 'cas' ? output.ok : undefined;
    if (ok === false) failedCasReturnMaxMs = Math.max(failedCasReturnMaxMs, op.return);
    // An unknown CAS that writes u can make no state seen, whatever it matched (rule 1's (b)).
    if (ok === undefined && input.value === opaqueValue) continue;
    const kind = ok === undefined ? 'maybe' : ok ? 'seen' : 'failed';
    observe(asState(input.expected), kind, op.return);
  }
  return { starts, inside, writtenSet, innerCharCount, failedCasReturnMaxMs };
}

/**
 * Rule 4. Say an unknown CAS expects e. If no non-empty written value is comparable with e under
 * "starts with" (as in `unmistakable`), no state is ever e, because its first non-empty piece
 * would be such a value: the CAS never takes effect and is dropped. If exactly one write W's
 * value is, a state equal to e has W's value as its first piece, so W took effect since the last
 * put, delete or successful CAS. If W completed, a completed put, delete or successful CAS B
 * called after W returned comes after W in every linearization and ends W's effect for good. So
 * the CAS can take effect only before the earliest such B returns: that is its expiry time, and
 * the search stops trying it once an operation called after that time, which must come after B,
 * is linearized.
 */
function expireUnknownCases(
  history: readonly KvOp[],
  absent: '' | null,
): { history: KvOp[]; dropped: number; expiring: number } {
  const evidenceOf = perKey(history, (ops) => casEvidence(ops, absent));
  const out: KvOp[] = [];
  let dropped = 0;
  let expiring = 0;
  for (const op of history) {
    const input = op.input;
    const expected = input.type === 'cas' ? (input.expected ?? absent) : null;
    if (op.output !== undefined || expected === null || expected === '') {
      out.push(op);
      continue;
    }
    const e = evidenceOf(input.key);
    const stats = e.expected.of(expected) as ProbeStats;
    const alone = !hasWrittenPrefix(e.writtenSet, expected);
    if (alone && stats.writtenCount === 0) {
      dropped++;
      continue;
    }
    const writer = alone && stats.writtenCount === 1 ? (stats.writer as KvOp) : undefined;
    const expiresMs =
      writer !== undefined && writer !== op && writer.return !== Infinity
        ? e.firstOverwriteReturnMs(writer.return)
        : Infinity;
    if (expiresMs === Infinity) {
      out.push(op);
    } else {
      expiring++;
      out.push({ ...op, expiresMs });
    }
  }
  return { history: out, dropped, expiring };
}

interface CasEvidence {
  /** The expected values of the key's unknown CASes: the written values starting with them. */
  readonly expected: ValueProbes;
  readonly writtenSet: ReadonlySet<string>;
  /** The earliest return of a completed put, delete or successful CAS called after `afterMs`. */
  firstOverwriteReturnMs(afterMs: number): number;
}

function casEvidence(ops: readonly KvOp[], absent: '' | null): CasEvidence {
  const expected = new ValueProbes(
    ops.flatMap((op) =>
      op.input.type === 'cas' && op.output === undefined ? [op.input.expected ?? absent ?? ''] : [],
    ),
  );
  const writtenSet = new Set<string>();
  for (const op of ops) {
    if (op.input.type === 'get' || op.input.type === 'delete' || op.input.value === '') continue;
    writtenSet.add(op.input.value);
    expected.write(op.input.value, op);
  }
  const overwrites = ops
    .filter(
      (op) =>
        op.output !== undefined &&
        (op.input.type === 'put' ||
          op.input.type === 'delete' ||
          (op.output.type === 'cas' && op.output.ok)),
    )
    .sort((a, b) => a.call - b.call);
  // The minimum return over overwrites[i..], for each i.
  const returnMinFrom = new Float64Array(overwrites.length + 1).fill(Infinity);
  for (let i = overwrites.length - 1; i >= 0; i--) {
    returnMinFrom[i] = Math.min(returnMinFrom[i + 1] as number, (overwrites[i] as KvOp).return);
  }
  const calls = overwrites.map((op) => op.call);
  return {
    expected,
    writtenSet,
    firstOverwriteReturnMs: (afterMs) => returnMinFrom[firstAbove(calls, afterMs)] as number,
  };
}

/** The index of the first number in ascending `sorted` that is greater than `bound`. */
function firstAbove(sorted: readonly number[], bound: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) > bound) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Evidence about each key, built from the key's operations the first time a key is asked for:
 * only keys with unknown-outcome writes cost anything.
 */
function perKey<E>(
  history: readonly KvOp[],
  build: (ops: readonly KvOp[]) => E,
): (key: string) => E {
  const byKey = new Map<string, KvOp[]>();
  for (const op of history) {
    const list = byKey.get(op.input.key);
    if (list === undefined) byKey.set(op.input.key, [op]);
    else list.push(op);
  }
  const built = new Map<string, E>();
  return (key) => {
    let e = built.get(key);
    if (e === undefined) {
      e = build(byKey.get(key) ?? []);
      built.set(key, e);
    }
    return e;
  };
}

/** A character (one UTF-16 code unit) that occurs in no value of the history, if there is one. */
function unusedCharacter(history: readonly KvOp[]): string | undefined {
  const values: string[] = [];
  for (const op of history) {
    const { input, output } = op;
    if (input.type === 'put' || input.type === 'append') values.push(input.value);
    if (input.type === 'cas') values.push(input.value, input.expected ?? '');
    if (output?.type === 'get' && output.value !== null) values.push(output.value);
  }
  // Almost always the first candidate is free, and one native scan per candidate is cheap.
  for (let k = 0; k < OPAQUE_CANDIDATES_MAX; k++) {
    const c = String.fromCharCode(OPAQUE_FIRST_CODE + k);
    if (!values.some((v) => v.includes(c))) return c;
  }
  return undefined;
}
