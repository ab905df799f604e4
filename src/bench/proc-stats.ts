// CPU time and peak memory of server processes, read from /proc (Linux only).
//
// CPU: utime + stime (fields 14 and 15 of /proc/<pid>/stat, in clock ticks; `getconf CLK_TCK`
// gives ticks per second). Sampled before and after a workload for each member and summed, so
// the figure is the servers' CPU per operation whatever the client costs.
// Memory: VmHWM of /proc/<pid>/status, the process's peak resident set.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecondCached: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`; 100 on Linux when getconf is missing). */
export function ticksPerSecond(): number {
  if (ticksPerSecondCached === undefined) {
    let n = Number.NaN;
    try {
      n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    } catch {
      // Fall through to Linux's fixed USER_HZ.
    }
    ticksPerSecondCached = Number.isInteger(n) && n > 0 ? n : 100;
  }
  return ticksPerSecondCached;
}

/**
 * utime + stime of `pid` in ticks, or undefined if it is gone. The command name (field 2) may
 * contain spaces and parentheses, so fields are counted after its closing parenthesis.
 */
export function cpuTicks(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state), so field n is rest[n - 3].
  const utime = Number(rest[14 - 3]);
  const stime = Number(rest[15 - 3]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : undefined;
}

/** Peak resident set (VmHWM) of `pid` in MiB, or undefined if it is gone. */
export function peakRssMiB(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const m = /^VmHWM:\s+(\d+)\s+kB$/m.exec(text);
  return m?.[1] === undefined ? undefined : Number(m[1]) / 1024;
}

/** A CPU reading of several processes, to be compared with a later one. */
export interface CpuSnapshot {
  readonly ticks: ReadonlyMap<number, number>;
}

export function snapshotCpu(pids: ReadonlyArray<number | undefined>): CpuSnapshot {
  const ticks = new Map<number, number>();
  for (const pid of pids) {
    if (pid === undefined) continue;
    const t = cpuTicks(pid);
    if (t !== undefined) ticks.set(pid, t);
  }
  return { ticks };
}

/**
 * CPU µs spent between two snapshots by the processes present in both, or undefined if a process
 * of the first is missing from the second (it died: its CPU time is lost, so no honest sum).
 */
export function cpuMicrosBetween(before: CpuSnapshot, after: CpuSnapshot): number | undefined {
  let ticks = 0;
  for (const [pid, t0] of before.ticks) {
    const t1 = after.ticks.get(pid);
    if (t1 === undefined) return undefined;
    ticks += t1 - t0;
  }
  return (ticks * 1e6) / ticksPerSecond();
}
