// The leases workload's verdict: its recorded renewals, losses and revocations judged by the lease
// contract (src/check/lease-contract.ts), each renewal with the clock-drift bound of the time its
// promise spans (clock-windows.ts: the documented 0.5 % unless the nemesis ran a member's clock
// skewed then), and every lease that lost a promise turned into one anomaly: the earliest loss
// that broke it, how early, and the lease's own records around it.
import { checkLeaseContract, ms, type LeaseViolation } from '../../check/lease-contract.js';
import type { Anomaly } from '../anomaly.js';
import type { ClockWindows } from '../clock-windows.js';
import type { Timeline } from '../timeline.js';
import type { LeaseEvents, RecordedLoss, RecordedRenewal } from './lease-events.js';
import type { WorkloadResult } from './workload.js';

/** Leases reported as anomalies at most (the detail counts them all). */
const anomaliesMax = 10;
/** Records quoted per anomaly at most, and how far before the broken renewal they are taken. */
const excerptMax = 20;
const excerptBeforeMs = 10_000;

export interface LeaseVerdictInput {
  readonly name: string;
  readonly events: LeaseEvents;
  readonly clocks: ClockWindows;
  readonly timeline: Timeline;
  readonly ops: number;
  readonly unknown: number;
}

export function judgeLeases(input: LeaseVerdictInput): WorkloadResult {
  const { events, clocks } = input;
  // The promise of a renewal sent at s with TTL t ends by s + t (a drift bound only shortens it):
  // a clock window overlapping [s, s + t] may have shortened it.
  const r = checkLeaseContract(events, {
    driftRatioFor: (x) => clocks.driftRatioDuring(x.sentMs, x.sentMs + x.ttlSeconds * 1000),
  });
  const base = { name: input.name, ops: input.ops, unknown: input.unknown };
  const checked =
    `${r.renewalsChecked} renewals, ${events.losses.length} losses, ` +
    `${events.revocations.length} revokes checked`;
  if (r.ok) return { ...base, verdict: 'ok', detail: checked, anomalies: [] };
  // The checker lists violations by the loss's time: the first per lease is its earliest.
  const firstByLease = new Map<string, LeaseViolation>();
  for (const v of r.violations) if (!firstByLease.has(v.lease)) firstByLease.set(v.lease, v);
  const anomalies = [...firstByLease.values()]
    .slice(0, anomaliesMax)
    .map((v) => anomalyOf(v, input));
  return {
    ...base,
    verdict: 'anomalies',
    detail:
      `${r.violations.length} losses before a promise on ${firstByLease.size} leases ` +
      `(${anomalies.length} reported); ${checked}`,
    anomalies,
  };
}

function anomalyOf(v: LeaseViolation, input: LeaseVerdictInput): Anomaly {
  const t = input.timeline;
  const renewal = v.renewal as RecordedRenewal;
  const loss = v.loss as RecordedLoss;
  return {
    workload: input.name,
    kind: 'lease-contract',
    message:
      `lease ${v.lease}: gone by ${t.at(loss.atMs)} (${loss.evidence}), ${ms(v.earlyByMs)} ` +
      `before the promise of the ${renewal.via} client ${renewal.client} sent at ` +
      `${t.at(renewal.sentMs)} (answered by ${renewal.answeredBy} at ` +
      `${t.at(renewal.answeredMs)}, TTL ${renewal.ttlSeconds} s: until ${t.at(v.promisedUntilMs)})`,
    atMs: loss.atMs,
    excerpt: excerpt(v, input),
  };
}

/** The lease's last renewals, losses and revokes up to the broken promise, in time order. */
function excerpt(v: LeaseViolation, input: LeaseVerdictInput): string[] {
  const t = input.timeline;
  const { events } = input;
  const fromMs = Math.min(v.renewal.sentMs, v.loss.atMs) - excerptBeforeMs;
  const lines: { atMs: number; text: string }[] = [];
  for (const r of events.renewals) {
    if (r.lease !== v.lease || r.sentMs < fromMs) continue;
    const mark = r === v.renewal ? '  <- promise broken' : '';
    lines.push({
      atMs: r.sentMs,
      text:
        `[${t.at(r.sentMs)}, ${t.at(r.answeredMs)}] client ${r.client} ${r.via}: TTL ` +
        `${r.ttlSeconds} s from ${r.answeredBy}${mark}`,
    });
  }
  for (const l of events.losses) {
    if (l.lease !== v.lease || l.atMs < fromMs) continue;
    const mark = l === v.loss ? '  <- loss' : '';
    lines.push({ atMs: l.atMs, text: `[${t.at(l.atMs)}] gone: ${l.evidence}${mark}` });
  }
  for (const r of events.revocations) {
    if (r.lease !== v.lease || r.sentMs < fromMs) continue;
    lines.push({ atMs: r.sentMs, text: `[${t.at(r.sentMs)}] client ${r.client} revoke sent` });
  }
  const toMs = Math.max(v.loss.atMs, v.promisedUntilMs);
  return lines
    .filter((l) => l.atMs <= toMs)
    .sort((a, b) => a.atMs - b.atMs)
    .slice(-excerptMax)
    .map((l) => l.text);
}
