// A LeaderElector in its own process, killed with SIGKILL while it leads: by the bench's election
// failover workload and by the SDK's conformance suite. Prints one JSON line per callback.
//
//   node elector-child.js ENDPOINTS NAME IDENTITY TTL_SECONDS [CA_FILE CERT_FILE KEY_FILE]
//
// With the three files (`tenure bench --tls`) it connects to https:// members with the CA and
// the client certificate.
import { LeaderElector, connect } from '../client/index.js';

const [endpointsArg, name, identity, ttlArg, caFile, certFile, keyFile] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || identity === undefined) {
  process.stderr.write(
    'usage: elector-child ENDPOINTS NAME IDENTITY TTL_SECONDS [CA_FILE CERT_FILE KEY_FILE]\n',
  );
  process.exit(2);
}
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const tls =
  caFile === undefined || certFile === undefined || keyFile === undefined
    ? {}
    : { tls: { caFile, certFile, keyFile } };
const client = await connect({ endpoints: endpointsArg.split(','), ...tls });
new LeaderElector(client, {
  name,
  identity,
  ttlSeconds: Number(ttlArg),
  onStartedLeading: ({ token }) => print({ type: 'leading', token: token.toString() }),
  onStoppedLeading: () => print({ type: 'stopped' }),
  onNewLeader: (who) => print({ type: 'leader', identity: who }),
}).start();
