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

/**
 * Seed 7's workload on three members with only `faults`, evidence on unless said otherwise, and
 * silence judged by the election timeout alone unless a pause tolerance is given.
 */
function withFaults(faults: Fault[], evidence = true, pauseToleranceMs = 0): Schedule {
  const base = generateSchedule(7);
  const {
    crashEvidenceMeanMs: _drop,
    pauseToleranceMs: _p,
    leaderDetector: _d,
    ...without
  } = { ...base.config, nodes: 3 as const };
  const config = pauseToleranceMs > 0 ? { ...without, pauseToleranceMs } : without;
  return {
    ...base,
    config: evidence ? { ...config, crashEvidenceMeanMs: 2 } : config,
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

/** Run `schedule`, counting the terms that began (any member's first message of a new term). */
async function termsBegun(schedule: Schedule): Promise<{ ok: boolean; terms: number }> {
  const step = Object.getOwnPropertyDescriptor(Raft.prototype, 'step');
  assert.ok(step);
  const stepFn = step.value as (this: Raft, m: Parameters<Raft['step']>[0]) => void;
  const terms = new Set<number>();
  Raft.prototype.step = function (this: Raft, m): void {
    stepFn.call(this, m);
    terms.add(this.term);
  };
  try {
    const r = await runSchedule(schedule);
    return { ok: r.ok, terms: terms.size };
  } finally {
    Object.defineProperty(Raft.prototype, 'step', step);
  }
}

test('with a pause tolerance, a shorter pause of the leader causes no election', async () => {
  const base = generateSchedule(7);
  const electionMs = base.config.electionTicks * base.config.tickMs;
  const pause = (durationMs: number): Fault[] => [
    { kind: 'pause', at: 1000, target: 'leader', durationMs },
  ];
  const tolerated = await termsBegun(withFaults(pause(1.3 * electionMs), true, 1.5 * electionMs));
  const calm = await termsBegun(withFaults([], true, 1.5 * electionMs));
  assert.ok(tolerated.ok && calm.ok);
  assert.equal(tolerated.terms, calm.terms, 'the pause added no term');
  // Without the tolerance the same pause outlasts the election timeout: a new term.
  const judged = await termsBegun(withFaults(pause(1.3 * electionMs), true, 0));
  assert.ok(judged.ok);
  assert.ok(judged.terms > calm.terms, `terms ${judged.terms} vs ${calm.terms} without a pause`);
  // And one longer than the tolerance is judged by the detector: a new term.
  const long = await termsBegun(withFaults(pause(4 * electionMs), true, 1.5 * electionMs));
  assert.ok(long.ok);
  assert.ok(long.terms > calm.terms, 'a pause past the tolerance elects');
});
