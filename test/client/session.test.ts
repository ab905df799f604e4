// The Session driver (src/client/session.ts) on a ManualClock and a scripted lease transport: the
// renewal cadence, events and signals for every transition, valid() computed at the call, close().
// A property test drives random schedules of answers, failures and delays.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  LeaseNotFoundError,
  ManualClock,
  Session,
  UnavailableError,
  type CallOptions,
  type SessionTransition,
  type SessionTransport,
} from '../../src/client/index.js';

/** A renewal the test decides the fate of. */
interface Pending {
  readonly sentAtMs: number;
  answer(ttlSeconds: number): void;
  fail(): void;
}

class ScriptedTransport implements SessionTransport {
  readonly pending: Pending[] = [];
  revoked: bigint[] = [];
  constructor(readonly clock: ManualClock) {}

  grant(ttlSeconds: number): Promise<{ id: bigint; ttlSeconds: number }> {
    return Promise.resolve({ id: 42n, ttlSeconds });
  }

  keepAliveOnce(_id: bigint, options: CallOptions): Promise<{ ttlSeconds: number }> {
    return new Promise((resolve, reject) => {
      const p: Pending = {
        sentAtMs: this.clock.nowMs(),
        answer: (ttlSeconds) =>
          ttlSeconds > 0
            ? resolve({ ttlSeconds })
            : reject(new LeaseNotFoundError('LEASE_NOT_FOUND', 'gone')),
        fail: () => reject(new UnavailableError('UNAVAILABLE', 'scripted failure')),
      };
      this.pending.push(p);
      options.signal?.addEventListener('abort', () => {
        this.pending.splice(this.pending.indexOf(p) >>> 0, 1);
        reject(options.signal?.reason as Error);
      });
    });
  }

  revoke(id: bigint): Promise<unknown> {
    this.revoked.push(id);
    return Promise.resolve({});
  }
}

/** Let promise continuations run (the transport settles; the session reacts). */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

async function open(ttlSeconds = 3, gracePeriodMs = 1_500) {
  const clock = new ManualClock(1_000);
  const transport = new ScriptedTransport(clock);
  const session = await Session.create(
    transport,
    { ttlSeconds, driftMarginMs: 100, gracePeriodMs, clock, transport },
    5_000,
  );
  const events: SessionTransition[] = [];
  session.on('change', (t) => events.push(t));
  return { clock, transport, session, events };
}

test('renews every TTL/3 and stays valid while renewals are answered', async () => {
  const { clock, transport, session, events } = await open();
  assert.equal(session.leaseId, 42n);
  assert.deepEqual(session.timing, {
    driftMarginMs: 100,
    renewDeadlineMs: 2_000,
    gracePeriodMs: 1_500,
  });
  for (let i = 0; i < 10; i++) {
    clock.advance(1_000);
    assert.equal(transport.pending.length, 1, 'one renewal in flight');
    clock.advance(50);
    transport.pending.shift()?.answer(3);
    await flush();
    assert.equal(session.valid(), true);
  }
  assert.deepEqual(events, []);
  assert.equal(session.signal.aborted, false);
  await session.close();
  assert.deepEqual(transport.revoked, [42n]);
  assert.equal(session.phase, 'expired');
  assert.equal((await session.closed()).reason, 'closed');
});

test('jeopardy when renewals go unanswered, active again on confirmation, then expired', async () => {
  const { clock, transport, session, events } = await open();
  const firstActive = session.activeSignal();
  clock.advance(1_000); // renewal 1 sent at 2000, never answered
  assert.equal(transport.pending.length, 1);
  clock.advance(999); // t = 2999: still before jeopardyAt = 1000 + 2000
  assert.equal(session.valid(), true);
  assert.equal(session.remainingMs(), 1000 + 3000 - 100 - 2999);
  clock.advance(1); // t = 3000
  assert.equal(session.valid(), false);
  assert.deepEqual(
    events.map((e) => `${e.from}>${e.to}:${e.reason}`),
    ['active>jeopardy:renewal-overdue'],
  );
  assert.equal(session.signal.aborted, true);
  assert.equal(firstActive.aborted, true);
  assert.equal(session.activeSignal().aborted, true, 'not active: an aborted signal');
  // The renewal sent at 2000 timed out at 3000 (TTL/3); the retry goes out at 4000 and is
  // answered at 4200: the lease is confirmed until 4000 + 3000.
  await flush();
  assert.equal(transport.pending.length, 0);
  clock.advance(1_000);
  assert.equal(transport.pending[0]?.sentAtMs, 4_000);
  clock.advance(200);
  transport.pending.shift()?.answer(3);
  await flush();
  assert.equal(session.phase, 'active');
  assert.equal(events.at(-1)?.reason, 'confirmed');
  assert.equal(session.signal.aborted, true, 'session.signal is never reset');
  const second = session.activeSignal();
  assert.equal(second.aborted, false, 'a fresh signal for the new active period');
  // Now nothing answers: jeopardy at 4000 + 2000, expired at 4000 + 2900 + 1500 = 8400.
  for (let i = 0; i < 100; i++) {
    clock.advance(100);
    await flush();
  }
  assert.deepEqual(
    events.map((e) => e.to),
    ['jeopardy', 'active', 'jeopardy', 'expired'],
  );
  assert.equal(events.at(-1)?.reason, 'grace-period-over');
  assert.equal(events.at(-1)?.atMs, 8_400);
  assert.equal(second.aborted, true);
  assert.equal(clock.pendingTimers, 0, 'an expired session holds no timers');
});

test('a resumed process sees the loss at the first query, before any timer runs', async () => {
  const { clock, session } = await open();
  // A pause (SIGSTOP, a long GC) moves the monotonic clock while no timer runs: emulate it by
  // jumping nowMs() without advance().
  const originalNow = clock.nowMs.bind(clock);
  clock.nowMs = () => originalNow() + 60_000;
  assert.equal(session.valid(), false);
  assert.equal(session.phase, 'expired');
  assert.equal(session.signal.aborted, true);
});

test('a lease-not-found answer expires the session at once', async () => {
  const { clock, transport, session, events } = await open();
  clock.advance(1_000);
  transport.pending.shift()?.answer(0);
  await flush();
  assert.equal(session.phase, 'expired');
  assert.equal(events.at(-1)?.reason, 'lease-lost');
  await session.close();
  assert.deepEqual(transport.revoked, [], 'a lost lease is not revoked again');
});

test('property: signal aborted iff a jeopardy/expired event fired; valid() implies a live lease', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.record({
          advanceMs: fc.integer({ min: 0, max: 2_500 }),
          fate: fc.constantFrom('answer', 'answer', 'answer', 'fail', 'hold', 'lost'),
        }),
        { maxLength: 40 },
      ),
      async (steps) => {
        const ttl = 3;
        const { clock, transport, session, events } = await open(ttl, 1_000);
        // Granted at 1000: the server holds the lease at least until sentAt + TTL.
        let serverHoldsUntil = 1_000 + ttl * 1000;
        for (const s of steps) {
          for (let left = s.advanceMs; left > 0; left -= 100) {
            clock.advance(Math.min(100, left));
            await flush();
          }
          const p = transport.pending[0];
          if (p !== undefined && s.fate !== 'hold') {
            transport.pending.shift();
            if (s.fate === 'answer') {
              serverHoldsUntil = Math.max(serverHoldsUntil, p.sentAtMs + ttl * 1000);
              p.answer(ttl);
            } else if (s.fate === 'lost') p.answer(0);
            else p.fail();
            await flush();
          }
          const lapsed = events.some((e) => e.to !== 'active');
          assert.equal(session.signal.aborted, lapsed);
          if (session.valid()) assert.ok(clock.nowMs() < serverHoldsUntil - 100);
          assert.equal(session.activeSignal().aborted, session.phase !== 'active');
          if (events.some((e) => e.to === 'expired')) assert.equal(session.phase, 'expired');
        }
        await session.close();
      },
    ),
    { numRuns: 300 },
  );
});

test('abandon(): no renewal is sent any more, no revoke; jeopardy then expiry on time', async () => {
  const { clock, transport, session, events } = await open();
  clock.advance(1_000); // the first renewal (TTL/3)
  assert.equal(transport.pending.length, 1);
  transport.pending.shift()?.answer(3);
  await flush();
  session.abandon();
  assert.equal(session.abandoned, true);
  // Nothing new may be taken on it from now on, though the lease is still certainly held.
  assert.equal(session.valid(), false);
  assert.equal(session.signal.aborted, true);
  assert.equal(session.activeSignal().aborted, true);
  assert.throws(() => session.assertValid(), { name: 'SessionJeopardyError' });
  clock.advance(10_000);
  await flush();
  assert.equal(transport.pending.length, 0, 'no renewal sent after abandon()');
  assert.deepEqual(transport.revoked, [], 'abandon() does not revoke');
  assert.deepEqual(
    events.map((e) => e.to),
    ['jeopardy', 'expired'],
  );
  assert.equal(session.valid(), false);
});

test('close() after abandon() leaves the lease to expire: no revoke', async () => {
  const { clock, transport, session } = await open();
  clock.advance(1_000);
  transport.pending.shift()?.answer(3);
  await flush();
  session.abandon();
  await session.close();
  assert.deepEqual(transport.revoked, [], 'an abandoned session is not revoked by close()');
  assert.equal(session.phase, 'expired');
});
