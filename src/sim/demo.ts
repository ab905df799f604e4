// What `tenure up --simulated` runs: a short simulated 3-member cluster of the production member,
// printing what it does — a crash, a partition, clients writing and holding locks — on a virtual
// clock.
import { runSchedule } from './run.js';
import { describeFault, type Schedule } from './schedule.js';

export async function runDemoCluster(): Promise<void> {
  const schedule: Schedule = {
    seed: 42,
    config: {
      nodes: 3,
      tickMs: 10,
      electionTicks: 10,
      heartbeatTicks: 1,
      snapshotEntries: 200,
      clients: 3,
      readers: 1,
      keys: 3,
      links: { delayMinMs: 0.5, delayMeanMs: 1, lossProbability: 0.01, duplicateProbability: 0 },
      clockRates: Array.from({ length: 12 }, () => 1),
      driftClass: 'none',
      leaseClients: 1,
      lockClients: 2,
      electionClients: 1,
      watchers: 1,
      clientDelayMeanMs: 0,
      locks: 1,
      leaseTtlSeconds: 2,
      tornWriteProbability: 0.5,
      syncMeanMs: 0.5,
      faultPhaseMs: 3000,
      opTimeoutMs: 1400,
      attemptTimeoutMs: 100,
      sectorBytes: 64,
      entriesPerAppendMax: 64,
      inflightAppendsMax: 32,
    },
    faults: [
      { kind: 'crash', at: 800, target: 'leader', downMs: 600 },
      { kind: 'partition', at: 1800, shape: 'isolateLeader', durationMs: 700 },
    ],
  };
  console.log('tenure: a simulated 3-member cluster on a virtual clock (no ports).');
  console.log('faults:');
  for (const f of schedule.faults) console.log(`  ${describeFault(f)}`);
  const r = await runSchedule(schedule);
  console.log(
    `${r.ok ? 'all invariants held' : `FAILED ${r.invariant}: ${r.message}`}: ${r.opsChecked} client operations, linearizable; ` +
      `${r.events} events over ${r.virtualMs} ms of virtual time; leader back ${r.leaderAfterHealMs ?? '?'} ms after healing.`,
  );
  console.log(
    'next: `bin/tenure sim --seeds 100` runs 100 random fault schedules; `npm test` runs every suite.',
  );
  if (!r.ok) process.exitCode = 1;
}
