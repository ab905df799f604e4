// A lock holder in its own process, on either backend, for the pause and kill -9 tests
// (recipes-contract.ts, lease-contract.ts): it takes the lock with a short TTL, prints its token,
// then spins in short synchronous bursts. Once the test has armed it (an "arm" line on stdin,
// answered by an "armed" line, just before the SIGSTOP), a burst that sees the monotonic clock
// jump by PAUSE_MS_MIN or more (the process was SIGSTOPped and SIGCONTinued) checks
// `signal.aborted` and `session.valid()` synchronously, first thing, before any timer can run,
// prints them, and tries its fenced release. A jump before arming is a stall of a loaded machine,
// not the pause: it is reported as a "stall" line and spinning goes on. The test keeps the process
// stopped for longer than PAUSE_MS_MIN whatever the lock's hand-off took (a CI run once saw a
// pause shorter than the threshold, and no "resumed" line).
//
//   node lease-holder-child.js etcd ENDPOINTS NAME TTL_SECONDS PAUSE_MS_MIN
//   node lease-holder-child.js pg CONNECTION_STRING[#TABLE] NAME TTL_SECONDS PAUSE_MS_MIN
import { Lock, connect, type Session } from '../../src/client/index.js';
import { connectPg } from '../../src/pg/index.js';

const [backend, target, name, ttlArg, pauseArg] = process.argv.slice(2);
if (target === undefined || name === undefined || ttlArg === undefined) {
  throw new Error('usage: lease-holder-child etcd|pg TARGET NAME TTL_SECONDS PAUSE_MS_MIN');
}
/** A jump of the monotonic clock this large between two spin iterations means we were paused. */
const pauseMsMin = Number(pauseArg);
if (!(pauseMsMin > 0)) throw new RangeError('lease-holder-child: PAUSE_MS_MIN must be > 0');
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

interface Held {
  readonly session: Session;
  readonly token: bigint;
  readonly signal: AbortSignal;
  release(): Promise<boolean>;
}

async function hold(): Promise<Held> {
  const ttlSeconds = Number(ttlArg);
  if (backend === 'etcd') {
    const client = await connect({ endpoints: (target ?? '').split(',') });
    const session = await client.session({ ttlSeconds });
    const grant = await new Lock(client, session, name ?? '').acquire();
    return { session, token: grant.token, signal: grant.signal, release: () => grant.release() };
  }
  if (backend === 'pg') {
    const [url, table] = (target ?? '').split('#');
    const pg = await connectPg({
      connectionString: url ?? '',
      poolSize: 2,
      ...(table === undefined ? {} : { table }),
    });
    const session = await pg.session({ ttlSeconds });
    const grant = await pg.lock(session, name ?? '').acquire();
    return { session, token: grant.token, signal: grant.signal, release: () => grant.release() };
  }
  throw new Error(`lease-holder-child: unknown backend ${backend}`);
}

const held = await hold();
const { session, token, signal } = held;
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
print({ type: 'granted', token: token.toString(), pid: process.pid });
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
  void held.release().then(
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
