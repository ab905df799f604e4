// A description of the machine and software a bench ran on, for the report: results from a
// noisy 2-core VM mean little without it.
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { etcdVersion } from '../launcher/member-command.js';

export interface Machine {
  readonly cpuModel: string;
  readonly cores: number;
  readonly ramGiB: number;
  readonly kernel: string;
  readonly node: string;
  /** `etcd --version`, or null when etcd was not part of the run. */
  readonly etcd: string | null;
  /** ISO 8601 start time. */
  readonly date: string;
  readonly command: string;
  /** 1, 5 and 15 minute load averages at the start and at the end of the run. */
  readonly loadAvgStart: readonly number[];
  loadAvgEnd: readonly number[];
}

function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1] !== undefined) return m[1].trim();
  } catch {
    // Not Linux: fall back to what Node reports.
  }
  return cpus()[0]?.model ?? 'unknown';
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

export function describeMachine(command: string, withEtcd: boolean): Machine {
  return {
    cpuModel: cpuModel(),
    cores: cpus().length,
    ramGiB: round2(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
    etcd: withEtcd ? etcdVersion() : null,
    date: new Date().toISOString(),
    command,
    loadAvgStart: loadavg().map(round2),
    loadAvgEnd: [],
  };
}

export function finishMachine(m: Machine): void {
  m.loadAvgEnd = loadavg().map(round2);
}
