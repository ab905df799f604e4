// Durability of acknowledged writes across whole-cluster crashes: 20 times, writers put keys
// through all three members of a tenure cluster, and in the middle of the load every member is
// killed with SIGKILL at once; after a restart, every write that was acknowledged is there with
// its value. This catches a write acknowledged before it is committed on a majority and any
// loss in WAL recovery and snapshots. It cannot catch a missing fsync (SIGKILL leaves the page
// cache to the kernel): that is the simulator's job (its disks drop unsynced writes on a
// crash; the ackBeforeFsync mutant is caught there) and test/server/file-disk.test.ts's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startCluster } from '../cluster/cluster.js';
import { GrpcKv } from '../cluster/grpc-kv.js';

const ROUNDS = 20;
const WRITERS = 4;
/** Acknowledged writes per round before the crash. */
const ACKS_BEFORE_CRASH = 40;

test(`acknowledged writes survive kill -9 of every member, ${ROUNDS} times`, async (t) => {
  const cluster = await startCluster({
    kind: 'tenure',
    size: 3,
    heartbeatIntervalMs: 50,
    electionTimeoutMs: 500,
  });
  const acked = new Map<string, string>();
  let lost = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const clients = cluster.endpoints.map((e) => new GrpcKv(e));
      let stop = false;
      let roundAcks = 0;
      let reached: () => void = () => {};
      const enough = new Promise<void>((r) => (reached = r));
      const writer = async (w: number): Promise<void> => {
        for (let seq = 0; !stop; seq++) {
          const key = `r${round}/w${w}/${seq}`;
          const value = `${round}.${w}.${seq}`;
          const c = clients[(w + seq) % clients.length] as GrpcKv;
          try {
            await c.put(key, value, 2000);
            // An answer that arrives while the crash is under way was still sent: it counts.
            acked.set(key, value);
            if (++roundAcks >= ACKS_BEFORE_CRASH) reached();
          } catch {
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
      await enough;
      // Crash while writes are in flight: every member at once.
      await Promise.all(cluster.endpoints.map((_, i) => cluster.kill(i, 'SIGKILL')));
      stop = true;
      await Promise.all(writers);
      for (const c of clients) c.close();
      for (let i = 0; i < cluster.size; i++) await cluster.restart(i);
      await cluster.waitReady(30_000);

      const reader = new GrpcKv(cluster.endpoints[round % cluster.size] as string);
      let found = new Map<string, string>();
      for (let attempt = 0; ; attempt++) {
        try {
          found = new Map((await reader.range('r')).map((kv) => [kv.key, kv.value]));
          break;
        } catch (e) {
          if (attempt > 50) throw e;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      reader.close();
      for (const [k, v] of acked) if (found.get(k) !== v) lost += 1;
      assert.equal(lost, 0, `round ${round}: ${lost} acknowledged writes missing`);
      t.diagnostic(`round ${round}: ${acked.size} acknowledged writes so far, all present`);
    }
  } finally {
    await cluster.stop();
  }
  assert.ok(acked.size >= ROUNDS * ACKS_BEFORE_CRASH);
});
