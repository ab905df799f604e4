// One chaos run, inside the namespaces (namespace.ts): start the members, start the workloads,
// let the nemesis inject fault after fault until the deadline, heal, let the workloads finish,
// judge every history with its checker and report. Exit code: 0 no anomaly, 1 anomalies.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { prng } from '../core/base/prng.js';
import { sleep } from '../launcher/poll.js';
import { removeDir } from '../launcher/processes.js';
import type { Anomaly } from './anomaly.js';
import { checkAgreement } from './agreement.js';
import { ClockWindows } from './clock-windows.js';
import { ChaosError } from './errors.js';
import { restoreAll } from './links.js';
import { startMembers } from './members.js';
import { prepareNamespace } from './namespace.js';
import { awaitRecovery, cycle, injectFault, type NemesisContext } from './nemesis.js';
import type { ChaosOptions } from './options.js';
import { renderAnomaly, reportAnomalies, summarize, writeReport } from './report.js';
import { Timeline, type TimelineEntry } from './timeline.js';
import { InsertsWorkload } from './workloads/inserts.js';
import { LeasesWorkload } from './workloads/leases.js';
import { LocksWorkload } from './workloads/locks.js';
import { RegisterWorkload } from './workloads/register.js';
import { WatchesWorkload } from './workloads/watches.js';
import type { Workload, WorkloadContext } from './workloads/workload.js';

/** Workloads run alone this long before the first fault and after the last heal. */
const quietMs = 2_000;

export interface ChaosIo {
  readonly out: (line: string) => void;
  readonly progress: (line: string) => void;
  /** The summary as one JSON line (with --json: stdout's last line). */
  readonly json: (line: string) => void;
}

function workloadsFor(o: ChaosOptions, base: Omit<WorkloadContext, 'prng'>): Workload[] {
  const seeded = prng(o.seed).fork('workloads');
  return o.workloads.map((w) => {
    const ctx: WorkloadContext = { ...base, prng: seeded.fork(w) };
    switch (w) {
      case 'register':
        return new RegisterWorkload(ctx);
      case 'inserts':
        return new InsertsWorkload(ctx);
      case 'watches':
        return new WatchesWorkload(ctx);
      case 'leases':
        return new LeasesWorkload(ctx);
      case 'locks':
        return new LocksWorkload(ctx);
    }
  });
}

export async function runChaos(o: ChaosOptions, io: ChaosIo): Promise<number> {
  prepareNamespace();
  const dir =
    o.outDir === undefined ? mkdtempSync(join(tmpdir(), 'tenure-chaos-')) : resolve(o.outDir);
  mkdirSync(dir, { recursive: true });
  const stopAll = new AbortController();
  let workloads: Workload[] = [];
  const opsNow = (): number => workloads.reduce((n, w) => n + w.opsSoFar, 0);
  const t = new Timeline((e: TimelineEntry) =>
    io.progress(`[${t.at(e.atMs).padStart(9)}] ${e.kind.padEnd(22)} ${e.text} (ops ${opsNow()})`),
  );
  const members = await startMembers(o.members, dir, o.tenureBin, stopAll.signal).catch(
    (e: unknown) => {
      throw new ChaosError(
        'SETUP',
        `the members did not start: ${e instanceof Error ? e.message : String(e)}`,
      );
    },
  );
  const anomalies: Anomaly[] = [];
  const steps: string[] = [];
  try {
    t.add('note', `${o.members} members ready in ${dir}; seed ${o.seed}`);
    const clocks = new ClockWindows();
    workloads = workloadsFor(o, {
      endpoints: members.cluster.endpoints,
      timeline: t,
      clocks,
      members,
    });
    const stopWorkloads = new AbortController();
    const running = workloads.map((w) => w.run(stopWorkloads.signal));
    const ctx: NemesisContext = {
      members,
      prng: prng(o.seed).fork('nemesis'),
      timeline: t,
      clocks,
      signal: stopAll.signal,
      anomaly: (a) => {
        anomalies.push(a);
        t.add('anomaly', `${a.workload} ${a.kind}: ${a.message}`);
      },
    };
    await sleep(quietMs);
    const deadline = t.startMs + o.minutes * 60_000;
    // A cluster that did not recover makes every later step meaningless (and 60 s long).
    const broken = (): boolean => anomalies.some((a) => a.kind === 'no-recovery');
    for (let round = 0; (round === 0 || performance.now() < deadline) && !broken(); round++) {
      for (const fault of cycle(ctx.prng, o.faults)) {
        if ((round > 0 && performance.now() >= deadline) || broken()) break;
        steps.push(fault);
        await injectFault(ctx, fault);
        await awaitRecovery(ctx);
        await sleep(500 + ctx.prng.next() * 1_500);
      }
    }
    restoreAll();
    if (!broken()) await awaitRecovery(ctx);
    await sleep(quietMs);
    t.add('note', 'nemesis done; workloads stopping');
    stopWorkloads.abort();
    await Promise.all(running);
    let agreement = 'not checked: the cluster did not recover';
    if (!broken()) {
      t.add('note', "comparing the members' states");
      const a = await checkAgreement(members.cluster.endpoints, members.names, stopAll.signal);
      agreement = a.detail;
      if (a.anomaly !== undefined) ctx.anomaly(a.anomaly);
    }
    t.add('note', 'checking histories');
    const results = workloads.map((w) => w.check());
    for (const r of results) anomalies.push(...r.anomalies);
    const reported = reportAnomalies(anomalies, t, members.cluster.logFiles, members.names);
    const minutes = (performance.now() - t.startMs) / 60_000;
    const summary = summarize(minutes, o, steps, results, anomalies, agreement);
    reported.forEach((a, i) => io.out(renderAnomaly(a, i + 1)));
    for (const r of results)
      io.out(
        `${r.name}: ${r.ops} ops (${r.unknown} unknown): ${r.verdict}${r.detail ? ` (${r.detail})` : ''}`,
      );
    io.out(`agreement: ${agreement}`);
    io.out(
      `${summary.steps} nemesis steps, ${summary.ops} ops, ${summary.anomalies} anomalies in ` +
        `${summary.minutes} min (seed ${o.seed})`,
    );
    writeReport(dir, summary, reported, t);
    if (anomalies.length > 0 || o.outDir !== undefined) io.out(`report and member logs: ${dir}`);
    if (o.json) io.json(JSON.stringify(summary));
    return anomalies.length > 0 ? 1 : 0;
  } finally {
    stopAll.abort();
    restoreAll();
    await members.cluster.stop();
    // A temporary directory goes, unless it holds the logs an anomaly points at.
    if (o.outDir === undefined && anomalies.length === 0) removeDir(dir);
  }
}
