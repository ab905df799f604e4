// A process that closes its client while a lock grant, a leader elector, an election observer, a
// lease keepalive handle and a watcher are all still open, and never stops them. Closing the
// client must end every one of them: the process then exits by itself. For recipes-contract.ts,
// which fails if this process is still running long after its last line (a KeyGuard that retried
// forever on a closed client once kept a test process alive for 15 minutes).
//
//   node closed-client-child.js ENDPOINTS NAME
import {
  ClientClosedError,
  Election,
  LeaderElector,
  Lock,
  connect,
} from '../../src/client/index.js';
import { until } from '../support/poll.js';

const [endpointsArg, name] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined) {
  throw new Error('usage: closed-client-child ENDPOINTS NAME');
}
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const nameOf = (e: unknown): string => (e instanceof Error ? e.name : String(e));

const client = await connect({ endpoints: endpointsArg.split(',') });
// The lock's session belongs to another client, so closing `client` does not revoke it first:
// the grant's key guard and the keepalive handle must notice the close itself.
const other = await connect({ endpoints: endpointsArg.split(',') });
const session = await other.session({ ttlSeconds: 10 });
const grant = await new Lock(client, session, `${name}/lock`).acquire();
let leading = false;
const elector = new LeaderElector(client, {
  name: `${name}/elector`,
  identity: 'closed-client-child',
  ttlSeconds: 10,
  onStartedLeading: () => {
    leading = true;
  },
}).start();
const observer = new Election(client, `${name}/elector`).observe();
const keepAlive = client.lease.keepAlive(session.leaseId);
const watcher = client.watch(`${name}/watched`);
await watcher.ready();
// Bounded: the parent fails the test on a child that never prints 'open'.
await until('the elector to lead', () => leading, 30_000);
print({ type: 'open' });

await client.close();
// The grant must be lost by now or soon: a closed client cannot confirm it any more.
if (!grant.signal.aborted) {
  await new Promise((r) => grant.signal.addEventListener('abort', r, { once: true }));
}
print({ type: 'grant', aborted: grant.signal.aborted, reason: nameOf(grant.signal.reason) });
await elector.closed();
print({ type: 'elector', ended: true });
let observed = 0;
for await (const _ of observer) observed++;
print({ type: 'observer', ended: true, observed });
print({ type: 'keepalive', error: nameOf(await keepAlive.closed()) });
try {
  for await (const _ of watcher) {
    // No events: nothing writes the watched key.
  }
  print({ type: 'watcher', error: null });
} catch (e) {
  print({ type: 'watcher', error: nameOf(e) });
}
const late = client.watch(`${name}/late`);
try {
  for await (const _ of late) {
    // A watch made after close gets nothing.
  }
  print({ type: 'late-watch', error: null });
} catch (e) {
  print({ type: 'late-watch', error: nameOf(e), typed: e instanceof ClientClosedError });
}
await other.close();
print({ type: 'done' });
// No process.exit: the test checks that nothing left running keeps this process alive.
