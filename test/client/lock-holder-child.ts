// A lock holder in its own process, for the pause test (recipes-contract.ts): it takes the lock
// with a short TTL, prints its token, then spins in short synchronous bursts. Once the test has
// armed it (an "arm" line on stdin, answered by an "armed" line, just before the SIGSTOP), a burst
// that sees the monotonic clock jump by PAUSE_MS_MIN or more (the process was SIGSTOPped and
// SIGCONTinued) checks `signal.aborted` and `session.valid()` synchronously, first thing, before
// any timer can run, prints them, and tries its fenced release. A jump before arming is a stall of
// a loaded machine, not the pause: it is reported as a "stall" line and spinning goes on. The test
// keeps the process stopped for longer than PAUSE_MS_MIN whatever the lock's hand-off took (a CI
// run once saw a pause shorter than the threshold, and no "resumed" line).
//
//   node lock-holder-child.js ENDPOINTS NAME TTL_SECONDS PAUSE_MS_MIN
import { Lock, connect } from '../../src/client/index.js';

const [endpointsArg, name, ttlArg, pauseArg] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || ttlArg === undefined) {
  throw new Error('usage: lock-holder-child ENDPOINTS NAME TTL_SECONDS PAUSE_MS_MIN');
}
/** A jump of the monotonic clock this large between two spin iterations means we were paused. */
const pauseMsMin = Number(pauseArg);
if (!(pauseMsMin > 0)) throw new RangeError('lock-holder-child: PAUSE_MS_MIN must be > 0');
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

const client = await connect({ endpoints: endpointsArg.split(',') });
const session = await client.session({ ttlSeconds: Number(ttlArg) });
const grant = await new Lock(client, session, name).acquire();
const signal = grant.signal;
let transitionsBeforeCheck = 0;
session.on('change', () => transitionsBeforeCheck++);
let armed = false;
// Diagnostics for the test's failure message: when the loss was noticed, relative to arming.
signal.addEventListener('abort', () => print({ type: 'lost', armed }));
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  if (!armed && chunk.split('\n').includes('arm')) {
    armed = true;
    print({ type: 'armed' });
  }
});
print({ type: 'granted', token: grant.token.toString(), pid: process.pid });
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
    if (now - last >= pauseMsMin) {
      if (armed) {
        onResume(now - last);
        return;
      }
      print({ type: 'stall', ms: Math.round(now - last) });
    }
    last = now;
    if (now >= end) break;
  }
  setImmediate(spin);
}
spin();
