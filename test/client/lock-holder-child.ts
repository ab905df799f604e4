// A lock holder in its own process, for the pause test (recipes-contract.ts): it takes the lock
// with a short TTL, prints its token, then spins in short synchronous bursts. When a burst sees
// the monotonic clock jump (the process was SIGSTOPped and SIGCONTinued), it checks
// `signal.aborted` and `session.valid()` synchronously, first thing, before any timer can run,
// prints them, and tries its fenced release.
//
//   node lock-holder-child.js ENDPOINTS NAME TTL_SECONDS
import { Lock, connect } from '../../src/client/index.js';

const [endpointsArg, name, ttlArg] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || ttlArg === undefined) {
  throw new Error('usage: lock-holder-child ENDPOINTS NAME TTL_SECONDS');
}
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

const client = await connect({ endpoints: endpointsArg.split(',') });
const session = await client.session({ ttlSeconds: Number(ttlArg) });
const grant = await new Lock(client, session, name).acquire();
const signal = grant.signal;
let transitionsBeforeCheck = 0;
session.on('change', () => transitionsBeforeCheck++);
print({ type: 'granted', token: grant.token.toString(), pid: process.pid });

/** A jump of the monotonic clock this large between two spin iterations means we were paused. */
const pauseMsMin = 1_000;
/** Length of one synchronous burst; the event loop runs (keepalives) between bursts. */
const burstMs = 50;
let last = performance.now();

function onResume(pausedMs: number): void {
  // First thing after the pause, synchronously: no timer has had a chance to run in between
  // unless the pause fell between two bursts (reported as transitionsBeforeCheck > 0).
  const timersRanFirst = transitionsBeforeCheck > 0;
  const aborted = signal.aborted;
  const valid = session.valid();
  print({ type: 'resumed', aborted, valid, pausedMs: Math.round(pausedMs), timersRanFirst });
  void grant.release().then(
    (deleted) => print({ type: 'released', deleted }),
    (e: unknown) => print({ type: 'release-failed', error: String(e) }),
  );
}

function spin(): void {
  const end = performance.now() + burstMs;
  for (;;) {
    const now = performance.now();
    if (now - last > pauseMsMin) {
      onResume(now - last);
      return;
    }
    last = now;
    if (now >= end) break;
  }
  setImmediate(spin);
}
spin();
