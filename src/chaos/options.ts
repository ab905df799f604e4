// What a chaos run is asked to do: how long, which workloads, which faults, the seed, and where
// its members' logs and the report go. The names here are the ones `--workloads` and `--faults`
// accept, and the ones the report uses.
import { ChaosError } from './errors.js';

export const WORKLOADS = ['register', 'inserts', 'watches', 'leases', 'locks'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

/**
 * Fault classes. Partitions cut directed peer links with iptables (links.ts); the process
 * faults act on a member's PID (nemesis.ts; starvation: faults-starve.ts); clock faults
 * restart a member under libfaketime (faults-clock.ts); disk faults damage its WAL or fail its
 * fsync (faults-disk.ts); member-rejoin removes and adds it (faults-membership.ts).
 */
export const FAULTS = [
  'partition-one',
  'partition-leader',
  'partition-majority',
  'partition-bridge',
  'partition-one-way-in',
  'partition-one-way-out',
  'partition-flapping',
  'partition-leader-starved',
  'pause',
  'starve',
  'kill-one',
  'kill-leader',
  'kill-all',
  'clock-rate',
  'clock-jump',
  'wal-tail',
  'member-rejoin',
  'fsync-fail',
] as const;
export type FaultName = (typeof FAULTS)[number];

export interface ChaosOptions {
  /** How long faults are injected; the run then heals, checks and reports. */
  readonly minutes: number;
  /** Members: 3 or 5. */
  readonly members: number;
  readonly workloads: readonly WorkloadName[];
  readonly faults: readonly FaultName[];
  readonly seed: number;
  /** Where member data, logs, history and report go; default a temporary directory, removed. */
  readonly outDir?: string;
  /** bin/tenure of the members (another checkout's, to attack other code); default ours. */
  readonly tenureBin?: string;
  /** The last stdout line is the JSON summary. */
  readonly json: boolean;
}

export const OPTIONS_DEFAULT = {
  minutes: 5,
  members: 3,
  workloads: WORKLOADS,
  faults: FAULTS,
} as const;

/** A comma-separated list of names, each one of `known`; 'all' (or nothing) means every one. */
export function parseNames<T extends string>(
  flag: string,
  value: string | undefined,
  known: readonly T[],
): T[] {
  if (value === undefined || value === 'all') return [...known];
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw new ChaosError('USAGE', `${flag} names nothing`);
  for (const n of names) {
    if (!(known as readonly string[]).includes(n))
      throw new ChaosError('USAGE', `${flag}: unknown '${n}' (known: ${known.join(', ')})`);
  }
  return [...new Set(names)] as T[];
}
