// A Lock holder in its own process, killed with SIGKILL while it holds: by the bench's
// lock-failover workload. Prints one JSON line once it holds the lock, then keeps the session
// renewed until killed.
//
//   node lock-holder-child.js ENDPOINTS NAME TTL_SECONDS [CA_FILE CERT_FILE KEY_FILE]
//
// With the three files (`tenure bench --tls`) it connects to https:// members with the CA and
// the client certificate.
import { Lock, connect } from '../client/index.js';

const [endpointsArg, name, ttlArg, caFile, certFile, keyFile] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || ttlArg === undefined) {
  process.stderr.write(
    'usage: lock-holder-child ENDPOINTS NAME TTL_SECONDS [CA_FILE CERT_FILE KEY_FILE]\n',
  );
  process.exit(2);
}
const tls =
  caFile === undefined || certFile === undefined || keyFile === undefined
    ? {}
    : { tls: { caFile, certFile, keyFile } };
const client = await connect({ endpoints: endpointsArg.split(','), ...tls });
const session = await client.session({ ttlSeconds: Number(ttlArg) });
const grant = await new Lock(client, session, name).acquire();
process.stdout.write(`${JSON.stringify({ type: 'held', token: grant.token.toString() })}\n`);
// The session's keepalives hold the lock; nothing else to do until the SIGKILL.
setInterval(() => undefined, 60_000);
