// A single-node replica on a real data directory, for the crash test: it writes keys k1, k2, …
// one proposal at a time and prints "ack N" once proposal N is committed (durable: a single voter
// commits only what its own fdatasync has covered). The test kills it with SIGKILL at a random
// moment and checks that every acknowledged key survived.
//
//   node wal-writer.js <data-dir> <round>   (values are "v<N>-<round>", unique per run)
import { nodeId } from '../../src/core/base/units.js';
import { encodeRegisterCommand, RegisterMachine } from '../../src/core/state/registers.js';
import { Replica } from '../../src/replica/replica.js';
import { monotonicClock } from '../../src/server/clock.js';
import { FileDisk } from '../../src/server/file-disk.js';

const [dir, round] = process.argv.slice(2);
if (dir === undefined || round === undefined) {
  process.stderr.write('usage: wal-writer <data-dir> <round>\n');
  process.exit(2);
}
const session = Date.now();
const replica = new Replica(
  {
    id: nodeId(1),
    initialConf: { voters: [nodeId(1)], learners: [] },
    tickMs: 10,
    electionTicks: 5,
    heartbeatTicks: 1,
    snapshotEntries: 200,
    snapshotKeepEntries: 20,
    seed: 1,
  },
  new RegisterMachine(),
  monotonicClock,
  { send: () => undefined },
  new FileDisk(dir),
);
let n = 0;
const next = (): void => {
  if (replica.raft.role !== 'leader') {
    setTimeout(next, 10);
    return;
  }
  n++;
  const i = n;
  const data = encodeRegisterCommand({
    session,
    seq: i,
    op: { type: 'put', key: `k${i}`, value: `v${i}-${round}` },
  });
  replica.propose(data, (o) => {
    if (o.ok) process.stdout.write(`ack ${i}\n`);
    else process.stderr.write(`proposal ${i} failed: ${o.reason}\n`);
    setImmediate(next);
  });
};
process.stdout.write('ready\n');
next();
