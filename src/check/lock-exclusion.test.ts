// The lock-exclusion checker accepts legal histories (edge cases included) and rejects each
// planted violation with the right kind; on a large history generated from a sequential lock
// service it accepts the history as generated and catches each kind of planted mutation.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { prng, type Prng } from '../core/base/index.js';
import type { LeaseRenewal } from './lease-contract.js';
import { checkLockExclusion, type LockHold, type LockViolationKind } from './lock-exclusion.js';

const hold = (fields: Partial<LockHold> & Pick<LockHold, 'token'>): LockHold => ({
  lock: 'L',
  client: 1,
  lease: '100',
  requestedMs: 0,
  acquiredMs: 0,
  releasedMs: Infinity,
  effects: [],
  ...fields,
});
const keepalive = (lease: string, sentMs: number, ttlSeconds = 10): LeaseRenewal => ({
  lease,
  client: 1,
  sentMs,
  answeredMs: sentMs + 5,
  ttlSeconds,
});

const kinds = (holds: LockHold[], renewals: LeaseRenewal[] = []): LockViolationKind[] =>
  checkLockExclusion(holds, renewals).violations.map((v) => v.kind);

void describe('checkLockExclusion accepts', () => {
  void it('an empty history', () => {
    assert.deepEqual(checkLockExclusion([], []), { ok: true, violations: [], holdsChecked: 0 });
  });

  void it('holds in turn, the first released while its lease still ran', () => {
    const holds = [
      hold({ client: 1, lease: 'a', token: 10, acquiredMs: 0, releasedMs: 100, effects: [10, 90] }),
      hold({
        client: 2,
        lease: 'b',
        token: 12,
        requestedMs: 50,
        acquiredMs: 101,
        releasedMs: 200,
        effects: [110],
      }),
    ];
    assert.deepEqual(kinds(holds, [keepalive('a', 0), keepalive('b', 40)]), []);
  });

  void it('the same client re-acquiring with the same lease and a new token', () => {
    const holds = [
      hold({ token: 5, acquiredMs: 0, releasedMs: 100, effects: [50] }),
      hold({ token: 9, requestedMs: 100, acquiredMs: 100, releasedMs: 200, effects: [150] }),
    ];
    assert.deepEqual(kinds(holds, [keepalive('100', 0)]), []);
  });

  void it("a second grant after the first holder's acknowledged lease ran out", () => {
    // TTL 1 s sent at 0: promised until 1000 / 1.005 ≈ 995 ms; the holder never released.
    const holds = [
      hold({ client: 1, lease: 'a', token: 1, acquiredMs: 10 }),
      hold({ client: 2, lease: 'b', token: 2, requestedMs: 20, acquiredMs: 996 }),
    ];
    assert.deepEqual(kinds(holds, [keepalive('a', 0, 1)]), []);
  });

  void it('concurrent requests granted in either order, and equal effect times', () => {
    const holds = [
      hold({ client: 1, token: 7, requestedMs: 0, acquiredMs: 5, releasedMs: 10, effects: [9] }),
      hold({ client: 2, token: 6, requestedMs: 1, acquiredMs: 11, releasedMs: 20, effects: [9] }),
    ];
    // Both were requested before either was granted, so neither token order breaks real-time
    // order; and an effect at the same instant as the next holder's first is not after it.
    assert.deepEqual(kinds(holds, [keepalive('100', -10)]), []);
  });

  void it('holds of different locks that overlap', () => {
    const holds = [
      hold({ lock: 'L', client: 1, lease: 'a', token: 1 }),
      hold({ lock: 'M', client: 2, lease: 'b', token: 2 }),
    ];
    assert.deepEqual(kinds(holds, [keepalive('a', 0), keepalive('b', 0)]), []);
  });
});

void describe('checkLockExclusion rejects', () => {
  void it("a second holder granted while the first holder's acknowledged lease ran", () => {
    const holds = [
      hold({ client: 1, lease: 'a', token: 10, acquiredMs: 0 }),
      hold({ client: 2, lease: 'b', token: 11, requestedMs: 5, acquiredMs: 5_000 }),
    ];
    const result = checkLockExclusion(holds, [keepalive('a', 0), keepalive('a', 3_000)]);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['lease-overlap'],
    );
    assert.match(
      result.violations[0]?.message ?? '',
      /lock L: client 2 \(token 11.*granted at 5000 ms while the acknowledged lease a of client 1/,
    );
  });

  void it('a token granted twice', () => {
    const holds = [
      hold({ client: 1, token: 3, acquiredMs: 0, releasedMs: 10 }),
      hold({ client: 2, token: 3, requestedMs: 20, acquiredMs: 20, releasedMs: 30 }),
    ];
    assert.deepEqual(kinds(holds), ['duplicate-token']);
  });

  void it('tokens out of real-time grant order', () => {
    const holds = [
      hold({ client: 1, token: 9, acquiredMs: 0, releasedMs: 10 }),
      hold({ client: 2, token: 4, requestedMs: 20, acquiredMs: 20, releasedMs: 30 }),
    ];
    const result = checkLockExclusion(holds, []);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['token-order'],
    );
    assert.match(result.violations[0]?.message ?? '', /before client 2 .* was requested at 20 ms/);
  });

  void it("a stale holder's effect after the next holder's first effect", () => {
    const holds = [
      hold({ client: 1, token: 1, acquiredMs: 0, releasedMs: 10, effects: [5, 25, 26] }),
      hold({ client: 2, token: 2, requestedMs: 11, acquiredMs: 11, releasedMs: 40, effects: [20] }),
    ];
    // Its lease is certain throughout: only the order of the effects is wrong.
    const result = checkLockExclusion(holds, [keepalive('100', -10)]);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['stale-effect'],
    );
    assert.match(result.violations[0]?.message ?? '', /acted at 25 ms, 26 ms, after client 2/);
  });

  void it('an effect at or past the certain end of its lease', () => {
    // TTL 1 s sent at 0: certain until 1000 / 1.005 ≈ 995.02 ms.
    const renewals = [keepalive('a', 0, 1)];
    const holds = [hold({ lease: 'a', token: 3, acquiredMs: 6, effects: [6, 995, 996] })];
    const result = checkLockExclusion(holds, renewals);
    assert.deepEqual(
      result.violations.map((v) => v.kind),
      ['uncertain-effect'],
    );
    assert.match(result.violations[0]?.message ?? '', /acted at 996 ms, when no renewal/);
  });

  void it('an effect before any renewal of its lease was answered', () => {
    // The grant is answered at 5: an effect at 4 relied on nothing yet.
    const holds = [hold({ lease: 'a', token: 3, acquiredMs: 4, effects: [4] })];
    assert.deepEqual(kinds(holds, [keepalive('a', 0)]), ['uncertain-effect']);
  });

  void it('an effect certain only by a renewal answered after it', () => {
    const renewals = [keepalive('a', 0, 1), keepalive('a', 900, 1)];
    // Answered at 905, it makes effects at 996 and 1000 certain (until 1895); answered only at
    // 1001, it makes neither.
    const holds = [hold({ lease: 'a', token: 3, acquiredMs: 6, effects: [996, 1000] })];
    assert.deepEqual(kinds(holds, renewals), []);
    const early = [keepalive('a', 0, 1), { ...keepalive('a', 900, 1), answeredMs: 1001 }];
    assert.deepEqual(kinds(holds, early), ['uncertain-effect']);
  });
});

// A sequential lock service: requests for each lock are queued in order of their keys' create
// revisions (the tokens), each waiter is granted once the previous holder released, and acts only
// while it holds. Every client keeps one lease alive for the whole history (keepalive every
// second, TTL 5 s), so a holder's lease runs past its release and only the release protects the
// next grant.
const LOCKS = ['alpha', 'beta', 'gamma'];
const HOLDS_MIN = 2_000;
const CLIENTS = 12;
const KEEPALIVE_EVERY_MS = 1000;
const TTL_SECONDS = 5;

function generate(r: Prng): { holds: LockHold[]; renewals: LeaseRenewal[] } {
  const holds: LockHold[] = [];
  let revision = 1;
  let endMs = 0;
  const perLock = Math.ceil(HOLDS_MIN / LOCKS.length);
  for (const lock of LOCKS) {
    let freeMs = 0;
    let requestMs = 0;
    for (let i = 0; i < perLock; i++) {
      requestMs += r.int(0, 40);
      const client = r.int(0, CLIENTS);
      const acquiredMs = Math.max(requestMs, freeMs) + r.int(1, 5);
      const releasedMs = acquiredMs + r.int(1, 60);
      const effects = Array.from({ length: r.int(0, 4) }, () => r.int(acquiredMs, releasedMs));
      holds.push({
        lock,
        client,
        lease: `lease-${client}`,
        token: revision++,
        requestedMs: requestMs,
        acquiredMs,
        releasedMs,
        effects: effects.sort((a, b) => a - b),
      });
      freeMs = releasedMs;
      endMs = Math.max(endMs, releasedMs);
    }
    // Later locks' requests are created later: revisions grow with time across locks too.
    revision += 1;
  }
  const renewals: LeaseRenewal[] = [];
  for (let client = 0; client < CLIENTS; client++) {
    for (let t = 0; t <= endMs + KEEPALIVE_EVERY_MS; t += KEEPALIVE_EVERY_MS) {
      renewals.push({
        lease: `lease-${client}`,
        client,
        sentMs: t,
        answeredMs: t + 3,
        ttlSeconds: TTL_SECONDS,
      });
    }
  }
  return { holds, renewals };
}

type Mutation = LockViolationKind;
const MUTATIONS: readonly Mutation[] = [
  'duplicate-token',
  'token-order',
  'lease-overlap',
  'stale-effect',
];

/** Plants one violation of the given kind between a hold and the next hold of its lock. */
function mutate(holds: LockHold[], r: Prng, kind: Mutation): LockHold[] {
  const out = [...holds];
  // A hold and its successor on the same lock, with room for the mutation.
  let i = r.int(0, out.length - 1);
  while ((out[i] as LockHold).lock !== (out[i + 1] as LockHold).lock)
    i = (i + 1) % (out.length - 1);
  const a = out[i] as LockHold;
  const b = out[i + 1] as LockHold;
  switch (kind) {
    case 'duplicate-token':
      out[i + 1] = { ...b, token: a.token };
      break;
    case 'token-order': {
      // The next hold, requested after a was granted, gets a token below a's.
      const requestedMs = Math.max(b.requestedMs, a.acquiredMs + 1);
      const acquiredMs = Math.max(b.acquiredMs, requestedMs);
      out[i + 1] = { ...b, token: a.token - 0.5, requestedMs, acquiredMs };
      break;
    }
    case 'lease-overlap': {
      const grantedMs = (a.acquiredMs + a.releasedMs) / 2;
      out[i + 1] = {
        ...b,
        requestedMs: Math.min(b.requestedMs, grantedMs),
        acquiredMs: grantedMs,
        effects: [],
      };
      break;
    }
    case 'stale-effect': {
      const firstMs = b.effects[0] ?? b.acquiredMs;
      out[i + 1] = { ...b, effects: [firstMs, ...b.effects.slice(1)] };
      out[i] = { ...a, effects: [...a.effects, firstMs + 1] };
      break;
    }
  }
  return out;
}

void describe('checkLockExclusion on a generated history', () => {
  const SEEDS = 12;

  void it(`accepts it as generated (at least ${HOLDS_MIN} holds)`, () => {
    for (let seed = 0; seed < SEEDS; seed++) {
      const { holds, renewals } = generate(prng(seed));
      assert.ok(holds.length >= HOLDS_MIN);
      const result = checkLockExclusion(holds, renewals);
      assert.deepEqual(
        result.violations.map((v) => v.message),
        [],
        `seed ${seed}`,
      );
    }
  });

  void it('rejects it with one planted mutation of each kind, reported as that kind', () => {
    for (let seed = 0; seed < SEEDS; seed++) {
      const { holds, renewals } = generate(prng(seed));
      const kind = MUTATIONS[seed % MUTATIONS.length] as Mutation;
      const result = checkLockExclusion(mutate(holds, prng(500 + seed), kind), renewals);
      assert.ok(
        result.violations.some((v) => v.kind === kind),
        `seed ${seed}: ${kind} reported as ${result.violations.map((v) => v.kind).join(', ')}`,
      );
    }
  });
});
