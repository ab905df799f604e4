// A crash in the simulator is a kill -9: the crashed member's peer port refuses the others'
// redials, and each member linked to it is told so (SimNetwork.crashed), which lets a follower
// of a crashed leader campaign at once (issue 19). A pause (SIGSTOP) leaves the process and its
// sockets alive and gives no such evidence; nor do schedules recorded before the evidence existed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeId } from '../../src/core/base/units.js';
import { Raft } from '../../src/core/raft/raft.js';
import { Replica } from '../../src/replica/replica.js';
import { generateSchedule, runSchedule, type Fault, type Schedule } from '../../src/sim/index.js';

interface Seen {
  /** (member, peer) for every piece of evidence delivered. */
  readonly reports: [NodeId, NodeId][];
  /** Pre-votes started on evidence. */
  campaigns: number;
}

/** Run `schedule`, recording the evidence its members were given and the campaigns it started. */
async function observe(schedule: Schedule): Promise<Seen & { ok: boolean; message?: string }> {
  const seen: Seen = { reports: [], campaigns: 0 };
  const report = Object.getOwnPropertyDescriptor(Replica.prototype, 'peerUnreachable');
  const campaign = Object.getOwnPropertyDescriptor(Raft.prototype, 'campaignOnEvidence');
  assert.ok(report && campaign);
  const reportFn = report.value as (this: Replica<unknown>, peer: NodeId) => void;
  const campaignFn = campaign.value as (this: Raft) => void;
  Replica.prototype.peerUnreachable = function (this: Replica<unknown>, peer: NodeId): void {
    seen.reports.push([this.id, peer]);
    reportFn.call(this, peer);
  };
  Raft.prototype.campaignOnEvidence = function (this: Raft): void {
    const before = this.role;
    campaignFn.call(this);
    if (before === 'follower' && this.role !== 'follower') seen.campaigns++;
  };
  try {
    const r = await runSchedule(schedule);
    return { ...seen, ok: r.ok, ...(r.message === undefined ? {} : { message: r.message }) };
  } finally {
    Object.defineProperty(Replica.prototype, 'peerUnreachable', report);
    Object.defineProperty(Raft.prototype, 'campaignOnEvidence', campaign);
  }
}

/** Seed 7's workload on three members with only `faults`, evidence on unless said otherwise. */
function withFaults(faults: Fault[], evidence = true): Schedule {
  const base = generateSchedule(7);
  const config = { ...base.config, nodes: 3 as const };
  const { crashEvidenceMeanMs: _drop, ...without } = config;
  return {
    ...base,
    config: evidence ? { ...config, crashEvidenceMeanMs: 2 } : without,
    faults,
  };
}

test('a crashed leader is reported unreachable by its followers, who campaign at once', async () => {
  const r = await observe(
    withFaults([{ kind: 'crash', at: 1000, target: 'leader', downMs: 3000 }]),
  );
  assert.equal(r.ok, true, r.message);
  assert.ok(r.reports.length >= 2, `two survivors told, got ${JSON.stringify(r.reports)}`);
  const crashed = new Set(r.reports.map(([, peer]) => peer));
  assert.equal(crashed.size, 1, 'only the crashed member is reported');
  assert.ok(r.campaigns >= 1, 'an evidence campaign started');
});

test('a paused leader gives no evidence: it is judged by the election timeout', async () => {
  const r = await observe(
    withFaults([{ kind: 'pause', at: 1000, target: 'leader', durationMs: 3000 }]),
  );
  assert.equal(r.ok, true, r.message);
  assert.deepEqual(r.reports, []);
  assert.equal(r.campaigns, 0);
});

test('a schedule without crash evidence (recorded before it existed) replays without it', async () => {
  const r = await observe(
    withFaults([{ kind: 'crash', at: 1000, target: 'leader', downMs: 3000 }], false),
  );
  assert.equal(r.ok, true, r.message);
  assert.deepEqual(r.reports, []);
});
