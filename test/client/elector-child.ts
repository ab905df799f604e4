// A LeaderElector in its own process, for the kill -9 failover test (recipes-contract.ts).
// Prints one JSON line per callback.
//
//   node elector-child.js ENDPOINTS NAME IDENTITY TTL_SECONDS
import { LeaderElector, connect } from '../../src/client/index.js';

const [endpointsArg, name, identity, ttlArg] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || identity === undefined) {
  throw new Error('usage: elector-child ENDPOINTS NAME IDENTITY TTL_SECONDS');
}
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const client = await connect({ endpoints: endpointsArg.split(',') });
new LeaderElector(client, {
  name,
  identity,
  ttlSeconds: Number(ttlArg),
  onStartedLeading: ({ token }) => print({ type: 'leading', token: token.toString() }),
  onStoppedLeading: () => print({ type: 'stopped' }),
  onNewLeader: (who) => print({ type: 'leader', identity: who }),
}).start();
