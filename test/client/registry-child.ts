// A registered service instance in its own process, for the kill -9 test (registry-contract.ts):
// it registers ADDR under SERVICE on a session with TTL_SECONDS, prints one "registered" line and
// then idles (renewing its lease) until it is killed by PID.
//
//   node registry-child.js ENDPOINTS SERVICE ADDR TTL_SECONDS
import { Registry, connect } from '../../src/client/index.js';

const [endpointsArg, service, addr, ttlArg] = process.argv.slice(2);
if (endpointsArg === undefined || service === undefined || addr === undefined) {
  throw new Error('usage: registry-child ENDPOINTS SERVICE ADDR TTL_SECONDS');
}
const client = await connect({ endpoints: endpointsArg.split(',') });
const session = await client.session({ ttlSeconds: Number(ttlArg) });
const reg = await new Registry(client).register(service, addr, {
  session,
  metadata: { pid: process.pid },
});
process.stdout.write(
  `${JSON.stringify({ type: 'registered', key: reg.key, pid: process.pid, ttl: session.ttlSeconds })}\n`,
);
/** Keeps the event loop alive (the session's timers are unref'd); the test kills us. */
const idleIntervalMs = 60_000;
setInterval(() => undefined, idleIntervalMs);
