// The markdown report `--out` writes: what ran where (machine, load, versions, command, sizes),
// the table of medians and ratios, where tenure loses, every run's figures, and the charts.
import { markdownRow, markdownRule, markdownTable, type Align } from '../render/markdown-table.js';
import { formatRatio, formatValue, metricRows, tenureLoses } from './report-rows.js';
import { transportLabel, type BenchResult, type RunRecord } from './result.js';
import { warmupLeaseCount } from './warmup.js';

function runCell(r: RunRecord, metric: 'opsPerSec' | 'p50Ms' | 'p99Ms'): string {
  return r.error === undefined ? formatValue(r[metric]) : 'failed';
}

const resultsHeader = ['workload', 'metric', 'tenure', 'etcd', 'tenure/etcd'];
const resultsAlign: Align[] = ['left', 'left', 'right', 'right', 'right'];
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
  // Without etcd the results table stops at tenure's column.
  const columns = withEtcd ? resultsHeader.length : 3;
  const out: string[] = [
    `# tenure bench${withEtcd ? ': tenure vs etcd' : ''}, TLS ${result.tls ? 'on' : 'off'}`,
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
    markdownRow(resultsHeader.slice(0, columns)),
    markdownRule(resultsAlign.slice(0, columns)),
  ];
  const losses: string[] = [];
  for (const w of result.workloads) {
    metricRows(w).forEach((r, i) => {
      const name = i === 0 ? `${w.name} (${w.title})` : '';
      const flag = tenureLoses(r) ? ' ⚠' : '';
      const cells = [name, r.label, formatValue(r.tenure), formatValue(r.etcd)];
      out.push(markdownRow([...cells, `${formatRatio(r.ratio)}${flag}`].slice(0, columns)));
      if (tenureLoses(r)) losses.push(`- ${w.name}, ${r.label}: ${formatRatio(r.ratio)}`);
    });
  }
  if (withEtcd) {
    out.push('', '## Where tenure loses (by more than 10 %)', '');
    out.push(...(losses.length > 0 ? losses : ['- nowhere']));
  }
  out.push('', '## Every run', '');
  out.push(markdownRow(runsHeader), markdownRule(runsAlign));
  for (const w of result.workloads) {
    for (const sys of result.systems) {
      for (const r of w[sys]?.runs ?? []) {
        const rss = r.peakRssMiB.map((v) => formatValue(v)).join(' / ');
        const extra =
          r.samplesMs !== undefined
            ? ` samples ${r.samplesMs.map((s) => Math.round(s)).join(', ')} ms`
            : '';
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
      `watchers × ${s.watchPuts} puts; leader failovers ${s.failoverSamples} per round; election ` +
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
