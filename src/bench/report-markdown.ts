// The markdown report `--out` writes: what ran where (machine, load, versions, command, sizes),
// the table of medians and ratios, where tenure loses, every run's figures, and the charts.
import { markdownRow, markdownRule, markdownTable, type Align } from '../render/markdown-table.js';
import {
  formatRatio,
  formatValue,
  metricRows,
  tenureLoses,
  tenureLosesToEtcd50,
} from './report-rows.js';
import { timingLabel, transportLabel, type BenchResult, type RunRecord } from './result.js';
import { warmupLeaseCount } from './warmup.js';

function runCell(r: RunRecord, metric: 'opsPerSec' | 'p50Ms' | 'p99Ms'): string {
  return r.error === undefined ? formatValue(r[metric]) : 'failed';
}

const runsHeader = [
  'workload',
  'system',
  'round',
  'ops',
  'errors',
  'ops/s',
  'p50 ms',
  'p99 ms',
  'CPU µs/op',
  'peak RSS MiB per member',
];
// round, ops, errors and the figures are numbers; the RSS column lists one per member.
const runsAlign: Align[] = ['left', 'left', ...Array<Align>(7).fill('right'), 'left'];

export function renderMarkdown(result: BenchResult, chartFiles: readonly string[]): string {
  const m = result.machine;
  const withEtcd = result.systems.includes('etcd');
  const withEtcd50 = result.systems.includes('etcd-50/500');
  const col = (k: 'tenure' | 'etcd' | 'etcd-50/500'): string => {
    const t = result.timing[k];
    return k === 'etcd-50/500' || t === undefined ? k : `${k} ${timingLabel(t)}`;
  };
  const resultsHeader = ['workload', 'metric', col('tenure')];
  const resultsAlign: Align[] = ['left', 'left', 'right'];
  if (withEtcd) {
    resultsHeader.push(col('etcd'), 'tenure/etcd');
    resultsAlign.push('right', 'right');
  }
  if (withEtcd50) {
    resultsHeader.push(col('etcd-50/500'), 'tenure/etcd-50/500');
    resultsAlign.push('right', 'right');
  }
  const timings = result.systems.map((sys) => {
    const t = result.timing[sys];
    return `${sys} ${t === undefined ? '–' : timingLabel(t)}`;
  });
  const out: string[] = [
    `# tenure bench${withEtcd || withEtcd50 ? ': tenure vs etcd' : ''}, ` +
      `TLS ${result.tls ? 'on' : 'off'}`,
    '',
    `${transportLabel(result.tls)}.`,
    '',
    `Run ${m.date} with \`${m.command}\`, ${result.rounds} round(s), ` +
      `${Math.round(result.durationS)} s. Systems alternate run by run; figures are medians over ` +
      'the rounds. Ratio = tenure/etcd for every metric: for ops/s above 1 means tenure is ' +
      'faster; for latency, CPU and RSS below 1 means tenure is better.',
    '',
    '## Machine',
    '',
    ...markdownTable(
      ['item', 'value'],
      [
        ['CPU', m.cpuModel],
        ['cores', m.cores],
        ['RAM', `${m.ramGiB} GiB`],
        ['kernel', m.kernel],
        ['Node', m.node],
        ['etcd', m.etcd ?? 'not run'],
        ['transport', transportLabel(result.tls)],
        ['Raft heartbeat/election timeout', timings.join(', ')],
        ['load average (1/5/15 min) at start', m.loadAvgStart.join(' / ')],
        ['load average at end', m.loadAvgEnd.join(' / ')],
      ],
    ),
    '',
    'Clients and the 3 members of the system under test share the cores; ' +
      'server CPU is utime+stime of the 3 members summed, per operation.',
    '',
    '## Results',
    '',
    markdownRow(resultsHeader),
    markdownRule(resultsAlign),
  ];
  const losses: string[] = [];
  for (const w of result.workloads) {
    metricRows(w).forEach((r, i) => {
      const name = i === 0 ? `${w.name} (${w.title})` : '';
      const cells = [name, r.label, formatValue(r.tenure)];
      if (withEtcd) {
        const flag = tenureLoses(r) ? ' ⚠' : '';
        cells.push(formatValue(r.etcd), `${formatRatio(r.ratio)}${flag}`);
        if (flag !== '') losses.push(`- ${w.name}, ${r.label}: ${formatRatio(r.ratio)}`);
      }
      if (withEtcd50) {
        const flag = tenureLosesToEtcd50(r) ? ' ⚠' : '';
        cells.push(formatValue(r.etcd50), `${formatRatio(r.ratioEtcd50)}${flag}`);
        if (flag !== '') {
          losses.push(`- ${w.name}, ${r.label}: ${formatRatio(r.ratioEtcd50)} vs etcd-50/500`);
        }
      }
      out.push(markdownRow(cells));
    });
  }
  if (withEtcd || withEtcd50) {
    out.push('', '## Where tenure loses (by more than 10 %)', '');
    out.push(...(losses.length > 0 ? losses : ['- nowhere']));
  }
  out.push('', '## Every run', '');
  out.push(markdownRow(runsHeader), markdownRule(runsAlign));
  for (const w of result.workloads) {
    for (const sys of result.systems) {
      for (const r of w[sys]?.runs ?? []) {
        const rss = r.peakRssMiB.map((v) => formatValue(v)).join(' / ');
        const samples =
          r.samplesMs !== undefined
            ? ` samples ${r.samplesMs.map((s) => Math.round(s)).join(', ')} ms`
            : '';
        const figures = Object.entries(r.extra ?? {})
          .map(([k, v]) => `${k} ${formatValue(v)}`)
          .join(', ');
        const extra = figures === '' ? samples : `${samples}; ${figures}`;
        const errors = `${r.errors}${r.error === undefined ? '' : ` (${r.error.slice(0, 80)})`}`;
        out.push(
          markdownRow([
            w.name,
            sys,
            r.round,
            r.ops,
            errors,
            runCell(r, 'opsPerSec'),
            runCell(r, 'p50Ms'),
            runCell(r, 'p99Ms'),
            formatValue(r.serverCpuUsPerOp),
            `${rss}${extra}`,
          ]),
        );
      }
    }
  }
  out.push('', '## Peak RSS per member over the whole run (MiB)', '');
  for (const sys of result.systems) {
    const per = result.peakRssPerMemberMiB[sys] ?? [];
    out.push(`- ${sys}: ${per.map((v, i) => `n${i + 1} ${formatValue(v)}`).join(', ')}`);
  }
  const s = result.sizes;
  out.push(
    '',
    '## Workload sizes',
    '',
    `sequential puts ${s.seqPuts}; puts at 64 in flight ${s.throughputPuts}; gets ${s.gets} each ` +
      `(linearizable, serializable) over ${s.getKeySpace} keys; leases ${s.leases} (grant, then ` +
      `keepaliveOnce); lock cycles ${s.lockCycles} (8 clients); watch fan-out ${s.watchers} ` +
      `watchers × ${s.watchPuts} puts; leader failovers ${s.failoverSamples} per round ` +
      `(${s.sdkFailoverSamples} through the SDK); leader pauses ${s.pauseTrials.join('/')} per ` +
      `duration; rolling restarts ${s.rollingRestarts}; lock failovers ` +
      `${s.lockFailoverSamples}; election ` +
      `failovers ${s.electionSamples} per round (TTL ${s.electionTtlSeconds} s); warm-up ` +
      `${s.warmupOps} ops before each workload, and ${s.clusterWarmupOps} puts, as many gets of ` +
      `each kind and ${warmupLeaseCount(s.clusterWarmupOps)} lease grants, ` +
      `keepalives and revokes on each fresh cluster (unmeasured, both systems alike). Closed ` +
      `loops stop at the count or after 10 s.`,
  );
  if (chartFiles.length > 0) {
    out.push('', '## Charts', '');
    for (const f of chartFiles) out.push(`![${f}](${f})`, '');
  }
  return out.join('\n') + '\n';
}
