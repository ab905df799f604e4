// `tenure snapshot restore` and `tenure snapshot status`: tenure's counterparts of `etcdctl
// snapshot restore` and `etcdctl snapshot status`, with their flags, for the files `etcdctl
// snapshot save` writes from a tenure member (src/server/backup-file.ts). etcdctl's own restore
// and status read etcd's bbolt files and refuse these; these refuse bbolt files.
//
// Progress goes to stderr on a terminal; --json prints one JSON object on stdout and nothing
// else. Exit codes: 0 done, 1 refused (a damaged file, a used data dir, flags that disagree).
import type { Command } from 'commander';
import { ConfigError, parseInitialCluster } from '../server/config.js';
import {
  restoreSnapshot,
  RestoreError,
  snapshotStatus,
  type ProgressFn,
  type RestorePhase,
  type SnapshotStatus,
} from '../server/restore.js';

const EXIT_REFUSED = 1;

const PHASES: Readonly<Record<RestorePhase, string>> = {
  read: 'reading',
  verify: 'checking sha256',
  decode: 'decoding',
  write: 'writing',
};

/** Bytes as etcdctl prints them (go-humanize, SI units: "25 kB", "1.1 GB"). */
export function humanBytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return u === 0 ? `${n} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** One line redrawn in place on a terminal; nothing elsewhere (and nothing with --json). */
function progressLine(enabled: boolean): { report: ProgressFn; end: () => void } {
  const out = process.stderr;
  if (!enabled || !out.isTTY) return { report: () => undefined, end: () => undefined };
  let shown = false;
  return {
    report: (phase, done, total) => {
      const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
      out.write(`\r\x1b[K${PHASES[phase]} ${humanBytes(done)} / ${humanBytes(total)} (${pct}%)`);
      shown = true;
    },
    end: () => {
      if (shown) out.write('\r\x1b[K');
    },
  };
}

/** etcdctl's `-w table` of snapshot status, and tenure's extra facts under it. */
function statusTable(s: SnapshotStatus): string {
  const cells = [
    s.hash.toString(16),
    String(s.revision),
    String(s.totalKey),
    humanBytes(s.totalSize),
  ];
  const heads = ['HASH', 'REVISION', 'TOTAL KEYS', 'TOTAL SIZE'];
  const widths = heads.map((h, i) => Math.max(h.length, (cells[i] as string).length));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const cell = (x: string, i: number, right: boolean): string => {
    const w = widths[i] as number;
    return ` ${right ? x.padStart(w) : x.padEnd(w)} `;
  };
  const row = (xs: readonly string[], right: boolean): string =>
    `|${xs.map((x, i) => cell(x, i, right)).join('|')}|`;
  return [
    rule,
    row(heads, false),
    rule,
    row(cells, true),
    rule,
    `compact revision ${s.compactRevision}, key space ${humanBytes(s.storeBytes)}, ` +
      `${s.leases} lease(s), auth ${s.authEnabled ? 'enabled' : 'disabled'} ` +
      `(${s.users} user(s), ${s.roles} role(s))`,
    `members when saved: ${s.members.join(', ') || '(none)'}; applied index ${s.appliedIndex}` +
      `; saved ${new Date(s.createdAtMs).toISOString()}`,
    ...(s.alarms.length === 0 ? [] : [`alarms: ${s.alarms.join('; ')}`]),
  ].join('\n');
}

interface RestoreFlags {
  readonly dataDir?: string;
  readonly name: string;
  readonly initialCluster: string;
  readonly initialClusterToken: string;
  readonly initialAdvertisePeerUrls: string;
  readonly json?: boolean;
}

function fail(cmd: string, e: unknown): void {
  if (!(e instanceof RestoreError) && !(e instanceof ConfigError)) throw e;
  process.stderr.write(`tenure snapshot ${cmd}: ${e.message}\n`);
  process.exitCode = EXIT_REFUSED;
}

export function registerSnapshot(program: Command): void {
  const snapshot = program
    .command('snapshot')
    .description('restore or inspect a snapshot saved with `etcdctl snapshot save` from tenure');

  snapshot
    .command('restore')
    .description('make a data directory for a new cluster from a snapshot file')
    .argument('<file>', 'the file `etcdctl snapshot save` wrote')
    .option('--data-dir <dir>', 'the data directory to create (default ./<name>.tenure)')
    .option('--name <name>', "this member's name", 'default')
    .option(
      '--initial-cluster <list>',
      'name=peerURL,... of every member of the new cluster',
      'default=http://127.0.0.1:2380',
    )
    .option('--initial-cluster-token <token>', "the new cluster's token", 'etcd-cluster')
    .option(
      '--initial-advertise-peer-urls <urls>',
      "this member's peer URLs, as --initial-cluster gives them",
      'http://127.0.0.1:2380',
    )
    .option('--json', 'print one JSON object on stdout, no progress')
    .action((file: string, f: RestoreFlags) => {
      const progress = progressLine(f.json !== true);
      const dataDir = f.dataDir ?? `${f.name}.tenure`;
      try {
        const r = restoreSnapshot({
          snapshotPath: file,
          dataDir,
          name: f.name,
          initialCluster: parseInitialCluster(f.initialCluster),
          initialClusterToken: f.initialClusterToken,
          initialAdvertisePeerUrls: f.initialAdvertisePeerUrls
            .split(',')
            .map((u) => u.trim())
            .filter((u) => u !== ''),
          onProgress: progress.report,
        });
        progress.end();
        if (f.json === true) {
          process.stdout.write(`${JSON.stringify({ dataDir, ...r })}\n`);
          return;
        }
        process.stdout.write(
          `restored snapshot ${file} to ${dataDir}: member ${r.memberId} ` +
            `of new cluster ${r.clusterId} (${r.members.map((m) => m.name).join(', ')}), ` +
            `revision ${r.status.revision}, ${r.status.totalKey} keys, ` +
            `${r.status.leases} lease(s), ${r.status.users} user(s)\n`,
        );
      } catch (e) {
        progress.end();
        fail('restore', e);
      }
    });

  snapshot
    .command('status')
    .description("a snapshot file's hash, revision, keys and size (after checking its sha256)")
    .argument('<file>', 'the file `etcdctl snapshot save` wrote')
    .option('--json', 'print one JSON object on stdout, no progress')
    .action((file: string, f: { readonly json?: boolean }) => {
      const progress = progressLine(f.json !== true);
      try {
        const s = snapshotStatus(file, progress.report);
        progress.end();
        process.stdout.write(`${f.json === true ? JSON.stringify(s) : statusTable(s)}\n`);
      } catch (e) {
        progress.end();
        fail('status', e);
      }
    });
}
