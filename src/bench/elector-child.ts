// A LeaderElector in its own process, killed with SIGKILL while it leads: by the bench's election
// failover workload and by the SDK's conformance suite. Prints one JSON line per callback.
//
//   node elector-child.js ENDPOINTS NAME IDENTITY TTL_SECONDS
import { LeaderElector, connect } from '../client/index.js';

const [endpointsArg, name, identity, ttlArg] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || identity === undefined) {
  process.stderr.write('usage: elector-child ENDPOINTS NAME IDENTITY TTL_SECONDS\n');
  process.exit(2);
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
