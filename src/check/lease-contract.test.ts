// The lease-contract checker accepts legal histories (edge cases included) and rejects planted
// violations, naming the lease, renewal and loss; on a large history generated from a sequential
// lease server it accepts the history as generated and catches each kind of planted mutation.

import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { prng, type Prng } from '../core/base/index.js';
import {
  checkLeaseContract,
  DRIFT_RATIO_DEFAULT,
  type LeaseHistory,
  type LeaseLoss,
  leasePromisedUntilMs,
  type LeaseRenewal,
  type LeaseRevocation,
} from './lease-contract.js';

const renewal = (
  lease: string,
  sentMs: number,
  answeredMs: number,
  ttlSeconds: number,
  client = 1,
): LeaseRenewal => ({ lease, client, sentMs, answeredMs, ttlSeconds });
const loss = (lease: string, atMs: number, evidence = 'read saw its key absent'): LeaseLoss => ({
  lease,
  atMs,
  evidence,
});
const revoke = (lease: string, sentMs: number, client = 1): LeaseRevocation => ({
  lease,
  client,
  sentMs,
});
const history = (
  renewals: LeaseRenewal[],
  losses: LeaseLoss[] = [],
  revocations: LeaseRevocation[] = [],
): LeaseHistory => ({ renewals, losses, revocations });

/** The promise of a 10 s renewal sent at 1000 with the default 0.5 % drift bound. */
const PROMISE_MS = 1000 + 10_000 / 1.005;

void describe('leasePromisedUntilMs', () => {
  void it('is the send time plus the TTL shortened by the drift bound', () => {
    assert.equal(leasePromisedUntilMs(renewal('7', 1000, 1050, 10)), PROMISE_MS);
    assert.equal(leasePromisedUntilMs(renewal('7', 1000, 1050, 10), 0), 11_000);
  });

  void it('promises nothing for a TTL of 0 or less', () => {
    assert.equal(leasePromisedUntilMs(renewal('7', 1000, 1050, 0)), -Infinity);
    assert.equal(leasePromisedUntilMs(renewal('7', 1000, 1050, -1)), -Infinity);
  });
});

void describe('checkLeaseContract accepts', () => {
  const legal: [string, LeaseHistory][] = [
    ['an empty history', history([])],
    [
      'a loss exactly at the promise',
      history([renewal('7', 1000, 1050, 10)], [loss('7', PROMISE_MS)]),
    ],
    ['a loss after the promise', history([renewal('7', 1000, 1050, 10)], [loss('7', 11_500)])],
    [
      'a TTL 0 answer, which promises nothing',
      history([renewal('7', 1000, 1010, 0)], [loss('7', 1001)]),
    ],
    [
      "the client's own revoke, sent before the loss",
      history([renewal('7', 1000, 1050, 10)], [loss('7', 2000)], [revoke('7', 1990)]),
    ],
    [
      'a revoke sent at the instant of the loss',
      history([renewal('7', 1000, 1050, 10)], [loss('7', 2000)], [revoke('7', 2000, 2)]),
    ],
    [
      'a lease renewed many times, lost after the last promise',
      history(
        Array.from({ length: 50 }, (_, i) => renewal('7', 1000 * i, 1000 * i + 20, 3)),
        [loss('7', 49_000 + 3000)],
      ),
    ],
    ['a loss of another lease', history([renewal('7', 1000, 1050, 10)], [loss('8', 1500)])],
  ];
  for (const [name, h] of legal) {
    void it(name, () => {
      const result = checkLeaseContract(h);
      assert.deepEqual(result.violations, []);
      assert.equal(result.ok, true);
      assert.equal(result.renewalsChecked, h.renewals.length);
    });
  }
});

void describe('checkLeaseContract rejects', () => {
  void it('a loss 1 ms before the promise, naming lease, renewal, loss and how early', () => {
    const r = renewal('7587', 1000, 1050, 10, 3);
    const result = checkLeaseContract(history([r], [loss('7587', PROMISE_MS - 1, 'revision 52')]));
    assert.equal(result.ok, false);
    assert.equal(result.violations.length, 1);
    const v = result.violations[0];
    assert.equal(v?.lease, '7587');
    assert.equal(v?.renewal, r);
    assert.ok(Math.abs((v?.earlyByMs ?? 0) - 1) < 1e-6);
    assert.match(v?.message ?? '', /lease 7587: lost by .* \(revision 52\), 1 ms early/);
    assert.match(v?.message ?? '', /client 3 sent at 1000 ms \(answered at 1050 ms, TTL 10 s\)/);
  });

  void it('a loss before the latest of many renewals ran out', () => {
    const renewals = Array.from({ length: 20 }, (_, i) => renewal('7', 1000 * i, 1000 * i + 5, 3));
    const result = checkLeaseContract(history(renewals, [loss('7', 19_500)]));
    assert.equal(result.violations.length, 1);
    assert.equal(result.violations[0]?.renewal, renewals[19]);
  });

  void it('a loss before a revoke was sent', () => {
    const h = history([renewal('7', 1000, 1050, 10)], [loss('7', 2000)], [revoke('7', 2001)]);
    assert.equal(checkLeaseContract(h).violations.length, 1);
  });

  void it('a renewal acknowledged after the lease was already gone', () => {
    const result = checkLeaseContract(history([renewal('7', 3000, 3010, 5)], [loss('7', 2000)]));
    assert.equal(result.violations.length, 1);
    assert.match(result.violations[0]?.message ?? '', /sent after the loss/);
  });

  void it('a loss the default drift bound flags but a looser one allows', () => {
    const h = history([renewal('7', 0, 10, 10)], [loss('7', 9_920)]);
    assert.equal(checkLeaseContract(h).ok, false);
    assert.equal(checkLeaseContract(h, { driftRatio: 0.01 }).ok, true);
  });

  void it('each renewal by its own drift bound when one is given per renewal', () => {
    // Lease 7's renewal overlapped a ×2 clock (judged at d = 1: 5 s of a 10 s TTL); lease 8's
    // did not, and keeps the default bound however loose the fixed one is.
    const skewed = renewal('7', 0, 10, 10);
    const h = history([skewed, renewal('8', 0, 10, 10)], [loss('7', 6_000), loss('8', 6_000)]);
    const result = checkLeaseContract(h, {
      driftRatio: 5,
      driftRatioFor: (r) => (r === skewed ? 1 : DRIFT_RATIO_DEFAULT),
    });
    assert.deepEqual(
      result.violations.map((v) => v.lease),
      ['8'],
    );
    assert.match(result.violations[0]?.message ?? '', /drift bound of 0.5 %/);
    const tight = checkLeaseContract(h, { driftRatioFor: () => DRIFT_RATIO_DEFAULT });
    assert.deepEqual(
      tight.violations.map((v) => v.lease),
      ['7', '8'],
    );
  });
});

// A sequential lease server: each lease is granted, kept alive every third of its TTL (the server
// applying each keepalive somewhere between send and answer and resetting the countdown), and
// then either revoked by its client or left to expire, the loss being observed a little later.
// One clock, true time: every promise the checker derives is met.
const LEASES = 120;
const RENEWALS_MIN = 2_000;

interface Generated {
  readonly history: LeaseHistory;
  /** Leases that expired (not revoked), with the renewal the expiry followed. */
  readonly expired: readonly { lease: string; last: LeaseRenewal; loss: LeaseLoss }[];
  readonly revoked: readonly { lease: string; revocation: LeaseRevocation; loss: LeaseLoss }[];
}

function generate(r: Prng): Generated {
  const renewals: LeaseRenewal[] = [];
  const losses: LeaseLoss[] = [];
  const revocations: LeaseRevocation[] = [];
  const expired: Generated['expired'][number][] = [];
  const revoked: Generated['revoked'][number][] = [];
  for (let i = 0; i < LEASES; i++) {
    const lease = String(7_000_000 + i);
    const client = r.int(1, 20);
    const ttlSeconds = r.pick([2, 5, 10]);
    let sentMs = r.int(0, 60_000);
    let expiresMs = 0;
    let last: LeaseRenewal | undefined;
    const keepalives = r.int(5, 30);
    for (let k = 0; k < keepalives; k++) {
      const answeredMs = sentMs + r.int(1, 50);
      const appliedMs = sentMs + r.next() * (answeredMs - sentMs);
      last = { lease, client, sentMs, answeredMs, ttlSeconds };
      renewals.push(last);
      expiresMs = appliedMs + ttlSeconds * 1000;
      sentMs += Math.floor((ttlSeconds * 1000) / 3);
    }
    if (last === undefined) continue;
    if (r.chance(0.3)) {
      const revocation = { lease, client, sentMs: last.answeredMs + r.int(0, 200) };
      const lost = { lease, atMs: revocation.sentMs + r.int(0, 20), evidence: 'revoke applied' };
      revocations.push(revocation);
      losses.push(lost);
      revoked.push({ lease, revocation, loss: lost });
    } else {
      const lost = { lease, atMs: expiresMs + r.int(0, 100), evidence: 'expired' };
      losses.push(lost);
      expired.push({ lease, last, loss: lost });
      // A keepalive after the loss is answered "gone", which promises nothing.
      renewals.push({
        lease,
        client,
        sentMs: lost.atMs + 1,
        answeredMs: lost.atMs + 5,
        ttlSeconds: 0,
      });
    }
  }
  return { history: { renewals, losses, revocations }, expired, revoked };
}

type Mutation = 'early-loss' | 'longer-ttl' | 'forgotten-revoke';
const MUTATIONS: readonly Mutation[] = ['early-loss', 'longer-ttl', 'forgotten-revoke'];

/** Plants one violation; returns the history and the lease the violation must name. */
function mutate(
  g: Generated,
  r: Prng,
  mutation: Mutation,
): { history: LeaseHistory; lease: string } {
  const h = g.history;
  if (mutation === 'forgotten-revoke') {
    const target = r.pick(g.revoked);
    const revocations = h.revocations.filter((x) => x !== target.revocation);
    return { history: { ...h, revocations }, lease: target.lease };
  }
  const target = r.pick(g.expired);
  if (mutation === 'early-loss') {
    const atMs = leasePromisedUntilMs(target.last) - 1;
    const losses = h.losses.map((l) => (l === target.loss ? { ...l, atMs } : l));
    return { history: { ...h, losses }, lease: target.lease };
  }
  const ttlSeconds = Math.ceil((target.loss.atMs - target.last.sentMs) / 1000) + 1;
  const renewals = h.renewals.map((x) => (x === target.last ? { ...x, ttlSeconds } : x));
  return { history: { ...h, renewals }, lease: target.lease };
}

void describe('checkLeaseContract on a generated history', () => {
  const SEEDS = 20;

  void it(`accepts it as generated (at least ${RENEWALS_MIN} renewals)`, () => {
    for (let seed = 0; seed < SEEDS; seed++) {
      const g = generate(prng(seed));
      assert.ok(g.history.renewals.length >= RENEWALS_MIN, `${g.history.renewals.length}`);
      const result = checkLeaseContract(g.history);
      assert.deepEqual(
        result.violations.map((v) => v.message),
        [],
        `seed ${seed}`,
      );
    }
  });

  void it('rejects it with one planted mutation of each kind', () => {
    for (let seed = 0; seed < SEEDS; seed++) {
      const r = prng(1000 + seed);
      const g = generate(prng(seed));
      const mutation = MUTATIONS[seed % MUTATIONS.length] as Mutation;
      const { history: mutated, lease } = mutate(g, r, mutation);
      const result = checkLeaseContract(mutated);
      assert.equal(result.ok, false, `seed ${seed}: ${mutation} not caught`);
      assert.ok(
        result.violations.some((v) => v.lease === lease),
        `seed ${seed}: ${mutation} of lease ${lease} reported as ${result.violations.map((v) => v.message).join('; ')}`,
      );
    }
  });
});
