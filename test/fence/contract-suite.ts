// The fence contract suite (every fence adapter passes the same tests). A
// subject wraps one adapter behind a tiny resource — a per-scope append-only log — so the suite
// can observe effects and their order the same way everywhere:
//
//   fenceContract('memory', async () => memorySubject());
//
// Tokens come from the subject (`issue`), in increasing order per scope, as a lock service would
// hand them out; for the etcd adapter that really is a new holder key. The suite checks:
// equal and higher tokens are accepted, a lower one is refused with both tokens and leaves no
// effect, scopes are independent, concurrent writers with interleaved tokens never land a lower
// token's write after a higher one, and durable subjects keep their marks across a reopen.
import assert from 'node:assert/strict';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { prng, type Prng } from '../../src/core/base/index.js';
import { InvalidTokenError, StaleTokenError } from '../../src/fence/index.js';

export interface ContractSubject {
  /** A fresh token for `scope`, higher than every token issued before (for any scope). */
  issue(scope: string): Promise<bigint>;
  /** Fenced write whose effect appends `value` to the scope's log; StaleTokenError if refused. */
  append(scope: string, token: bigint, value: string): Promise<void>;
  /** The scope's log, in the order the resource applied the appends. */
  log(scope: string): Promise<readonly string[]>;
  /** The scope's high-water mark as the adapter reports it. */
  current(scope: string): Promise<bigint | undefined>;
  /** A new subject over the same durable state (a restart), for durable adapters. */
  reopen?(): Promise<ContractSubject>;
  close(): Promise<void>;
}

export interface ContractOptions {
  /**
   * The mark rises only by accepted writes (true for every adapter that stores its own mark).
   * False for the etcd adapter, whose mark is the present holder's token, raised by granting.
   */
  readonly markFollowsWrites?: boolean;
  /**
   * The adapter keeps its marks on disk (its subject has `reopen`): the reopen test runs. Named
   * at registration so that a non-durable subject registers no test instead of one that passes
   * without checking anything.
   */
  readonly durable?: boolean;
  /** Concurrent writers in the interleaving test. Default 8. */
  readonly writers?: number;
  readonly seed?: number;
}

/** Thrown-value checker: a StaleTokenError presenting `presented` and naming a different mark. */
function isStale(presented: bigint, current?: bigint): (e: unknown) => boolean {
  return (e) => {
    assert.ok(e instanceof StaleTokenError, `expected StaleTokenError, got ${String(e)}`);
    assert.equal(e.code, 'FENCE_STALE_TOKEN');
    assert.equal(e.presented, presented);
    if (current !== undefined) assert.equal(e.current, current);
    else assert.notEqual(e.current, presented);
    return true;
  };
}

const tokenOf = (value: string): bigint => BigInt(value.split(':')[0] ?? '');

export function fenceContract(
  name: string,
  factory: () => Promise<ContractSubject>,
  options: ContractOptions = {},
): void {
  const markFollowsWrites = options.markFollowsWrites ?? true;
  describe(`fence contract: ${name}`, () => {
    let subject: ContractSubject;
    let n = 0;
    /** A scope unique to one test, so tests share a subject without sharing marks. */
    const fresh = (label: string): string => `${label}-${++n}`;

    before(async () => {
      subject = await factory();
    });
    after(async () => {
      await subject.close();
    });

    test('accepts the first token, the same token again, and a higher one', async () => {
      const s = fresh('accept');
      const t1 = await subject.issue(s);
      await subject.append(s, t1, `${t1}:a`);
      await subject.append(s, t1, `${t1}:b`);
      const t2 = await subject.issue(s);
      assert.ok(t2 > t1);
      await subject.append(s, t2, `${t2}:c`);
      assert.deepEqual(await subject.log(s), [`${t1}:a`, `${t1}:b`, `${t2}:c`]);
      assert.equal(await subject.current(s), t2);
    });

    test('refuses a lower token with both tokens, and the refused write has no effect', async () => {
      const s = fresh('refuse');
      const t1 = await subject.issue(s);
      await subject.append(s, t1, `${t1}:first`);
      const t2 = await subject.issue(s);
      await subject.append(s, t2, `${t2}:second`);
      await assert.rejects(subject.append(s, t1, `${t1}:zombie`), isStale(t1, t2));
      assert.deepEqual(await subject.log(s), [`${t1}:first`, `${t2}:second`]);
      assert.equal(await subject.current(s), t2);
    });

    test('scopes are independent', async () => {
      const a = fresh('scope-a');
      const b = fresh('scope-b');
      const tb = await subject.issue(b);
      const ta = await subject.issue(a);
      assert.ok(ta > tb);
      await subject.append(a, ta, `${ta}:a`);
      await subject.append(b, tb, `${tb}:b`);
      assert.deepEqual(await subject.log(a), [`${ta}:a`]);
      assert.deepEqual(await subject.log(b), [`${tb}:b`]);
    });

    test('rejects a token that is not a non-negative bigint', async () => {
      const s = fresh('invalid');
      await assert.rejects(subject.append(s, -1n, '-1:x'), InvalidTokenError);
      assert.deepEqual(await subject.log(s), []);
    });

    test('concurrent writers with interleaved tokens never land a lower token after a higher', async () => {
      const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
      const rng: Prng = prng(seed).fork(name);
      const s = fresh('race');
      const writers = options.writers ?? 8;
      const rounds = 4;
      const issued: bigint[] = [await subject.issue(s)];
      const accepted: bigint[] = [];
      let refused = 0;
      const issuer = (async () => {
        for (let r = 1; r < rounds; r++) {
          for (let y = rng.int(0, 20); y > 0; y--) await yieldTurn();
          issued.push(await subject.issue(s));
        }
      })();
      const writer = async (w: number, wr: Prng): Promise<void> => {
        for (let i = 0; i < rounds; i++) {
          for (let y = wr.int(0, 10); y > 0; y--) await yieldTurn();
          // Mostly the newest token, sometimes an older one: a zombie still writing.
          const token = wr.chance(0.6) ? (issued.at(-1) ?? 0n) : wr.pick(issued);
          try {
            await subject.append(s, token, `${token}:w${w}:${i}`);
            accepted.push(token);
          } catch (e) {
            isStale(token)(e);
            refused++;
          }
        }
      };
      await Promise.all([
        issuer,
        ...Array.from({ length: writers }, (_, w) => writer(w, rng.fork(`w${w}`))),
      ]);
      const log = await subject.log(s);
      const why = `seed ${seed}: log ${log.join(' ')}`;
      assert.equal(log.length, accepted.length, why);
      assert.equal(log.length + refused, writers * rounds, why);
      for (let i = 1; i < log.length; i++) {
        assert.ok(tokenOf(log[i] ?? '') >= tokenOf(log[i - 1] ?? ''), why);
      }
      const maxAccepted = accepted.reduce((m, t) => (t > m ? t : m), 0n);
      const mark = (await subject.current(s)) ?? 0n;
      if (markFollowsWrites) assert.equal(mark, maxAccepted, why);
      else assert.ok(mark >= maxAccepted, why);
      if (log.length > 0) assert.equal(tokenOf(log.at(-1) ?? ''), maxAccepted, why);
    });

    if (options.durable === true)
      test('a durable mark survives a reopen', async () => {
        assert.ok(subject.reopen !== undefined, `${name} is durable but its subject cannot reopen`);
        const s = fresh('durable');
        const t1 = await subject.issue(s);
        const t2 = await subject.issue(s);
        await subject.append(s, t2, `${t2}:before`);
        const again = await subject.reopen();
        try {
          assert.equal(await again.current(s), t2);
          await assert.rejects(again.append(s, t1, `${t1}:zombie`), isStale(t1, t2));
          await again.append(s, t2, `${t2}:after`);
          assert.deepEqual(await again.log(s), [`${t2}:before`, `${t2}:after`]);
        } finally {
          await again.close();
        }
      });
  });
}

/** A counter that issues increasing tokens (what a lock service's revisions look like). */
export function tokenCounter(start = 100n): (scope: string) => Promise<bigint> {
  let next = start;
  return () => Promise.resolve((next += 1n + BigInt(Math.floor(Math.random() * 3))));
}
