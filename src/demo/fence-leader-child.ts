// The leader of the fence-previous demo (fence-previous.ts), in its own process so that the demo
// can freeze it (SIGSTOP) and its successor can kill it (SIGKILL). Its election value is
// {"pid": N}: what the successor's fencePrevious reads to find the process. While leading it
// appends one line per write to the demo's resource, a log file, every WRITE_INTERVAL_MS, without
// checking its signal: it stands for an effect that can check neither a token nor a key. It
// exits when the demo's IPC channel closes (see below).
//
//   node fence-leader-child.js ENDPOINTS NAME LOG_PATH TTL_SECONDS
import { appendFileSync } from 'node:fs';
import { LeaderElector, connect } from '../client/index.js';

// The demo spawns us with an IPC channel (spawnLeaderChild): when it closes, the demo is gone
// (killed, crashed) and nobody will stop us, so exit rather than lead on for ever. A child the
// demo had frozen with SIGSTOP runs no handler while stopped: it exits once it is continued
// (SIGCONT; the kernel also sends SIGHUP and SIGCONT to the stopped members of a process group
// that the death orphaned) or is killed.
/** Exit status when the demo is gone (as redlock-holder.ts). */
const exitParentGone = 3;
process.on('disconnect', () => process.exit(exitParentGone));

const [endpointsArg, name, logPath, ttlArg] = process.argv.slice(2);
if (endpointsArg === undefined || name === undefined || logPath === undefined) {
  process.stderr.write('usage: fence-leader-child ENDPOINTS NAME LOG_PATH TTL_SECONDS\n');
  process.exit(2);
}
/** Pause between two writes to the resource, in ms. */
const writeIntervalMs = 100;
const print = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};
const client = await connect({ endpoints: endpointsArg.split(',') });
new LeaderElector(client, {
  name,
  identity: JSON.stringify({ pid: process.pid }),
  ttlSeconds: Number(ttlArg),
  onStartedLeading: async ({ token }) => {
    print({ type: 'leading', token: token.toString(), pid: process.pid });
    for (let seq = 1; ; seq++) {
      appendFileSync(logPath, `${JSON.stringify({ pid: process.pid, token: `${token}`, seq })}\n`);
      await new Promise((r) => setTimeout(r, writeIntervalMs));
    }
  },
}).start();
