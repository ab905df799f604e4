// `tenure up`'s cluster: members started by the launcher (src/launcher) on etcd's local-cluster
// ports (clients 2379, 22379, 32379; peers 2380, 22380, 32380), data and logs under one
// directory, and a state file naming the PIDs so that `tenure down` (or a later `up`) finds them
// after this process is gone. With `tls`, everything is on https:// (cluster-tls.ts).
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startCluster, type Cluster } from '../launcher/cluster.js';
import { LaunchError } from '../launcher/errors.js';
import { pidExists, stopPid } from '../launcher/processes.js';
import { clusterTls, type ClusterTlsFiles } from './cluster-tls.js';

export interface LocalMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  readonly logFile: string;
  pid: number;
}

export interface LocalClusterState {
  readonly dir: string;
  readonly members: LocalMember[];
  /** The certificates of a cluster started with `--tls`. */
  readonly tls?: ClusterTlsFiles;
}

export const DEFAULT_CLIENT_PORTS = [2379, 22379, 32379] as const;
export const DEFAULT_PEER_PORTS = [2380, 22380, 32380] as const;
const STATE_FILE = 'cluster.json';
/** `tenure down`: how long members may take to stop after SIGTERM before SIGKILL. */
const stopGraceMsDefault = 10_000;

/**
 * Whether `pid` is still one of our members: alive and running `tenure start` (a PID recorded
 * long ago may belong to another program by now, which must never be signalled).
 */
export function isAlive(pid: number): boolean {
  if (!pidExists(pid)) return false;
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('tenure') && cmd.includes('start');
  } catch {
    return true; // no /proc: trust the signal check
  }
}

export function readState(dir: string): LocalClusterState | undefined {
  const p = join(resolve(dir), STATE_FILE);
  if (!existsSync(p)) return undefined;
  return JSON.parse(readFileSync(p, 'utf8')) as LocalClusterState;
}

export interface LocalClusterOptions {
  readonly dir: string;
  readonly clientPorts: readonly number[];
  readonly peerPorts: readonly number[];
  /** Members outlive this process (`--detach`). */
  readonly detached: boolean;
  /**
   * https:// client and peer URLs, clients must present a certificate: a throwaway CA and its
   * certificates in DIR/tls (cluster-tls.ts).
   */
  readonly tls?: boolean;
}

/**
 * Start every member as a child process and record them in the state file; the caller waits
 * for readiness (`cluster.waitReady`). Refuses, with a LaunchError, a data directory whose
 * cluster still runs and a port in use.
 */
export async function startLocalCluster(
  options: LocalClusterOptions,
): Promise<{ cluster: Cluster; state: LocalClusterState }> {
  const dir = resolve(options.dir);
  const running = readState(dir);
  if (running?.members.some((m) => m.pid > 0 && isAlive(m.pid)))
    throw new LaunchError(
      'ALREADY_RUNNING',
      `a cluster from ${dir} is already running (pids ${running.members.map((m) => m.pid).join(', ')}); stop it with: bin/tenure down`,
    );
  const tls = await clusterTls(dir, options.clientPorts.length, options.tls === true);
  const cluster = await startCluster({
    kind: 'tenure',
    size: options.clientPorts.length,
    dir,
    ports: { client: options.clientPorts, peer: options.peerPorts },
    token: 'tenure-local',
    logs: 'file',
    detached: options.detached,
    // Its members either outlive this process on purpose or are stopped by up's own Ctrl-C
    // handler, by the PIDs in the state file.
    tracked: false,
    readyTimeoutMs: 0,
    ...(tls === undefined ? {} : { tls: tls.launch }),
  });
  const state: LocalClusterState = {
    dir,
    members: cluster.names.map((name, i) => ({
      name,
      clientUrl: cluster.endpoints[i] ?? '',
      peerUrl: cluster.peerUrls[i] ?? '',
      dataDir: cluster.dataDirs[i] ?? '',
      logFile: cluster.logFiles[i] ?? '',
      pid: cluster.pids[i] ?? 0,
    })),
    ...(tls === undefined ? {} : { tls: tls.files }),
  };
  writeFileSync(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  return { cluster, state };
}

/**
 * SIGTERM every member, SIGKILL whoever is still there after `graceMs`; forget the state. By the
 * recorded PIDs, so that `tenure down` stops what a detached `up` left running.
 */
export async function stopCluster(
  state: LocalClusterState,
  graceMs = stopGraceMsDefault,
): Promise<string[]> {
  const lines: string[] = [];
  await Promise.all(
    state.members.map(async (m) => {
      if (m.pid <= 0 || !isAlive(m.pid)) return;
      lines.push(`${m.name}: SIGTERM sent to pid ${m.pid}`);
      if (await stopPid(m.pid, isAlive, graceMs))
        lines.push(`${m.name}: did not stop within ${graceMs} ms; SIGKILL sent`);
    }),
  );
  rmSync(join(state.dir, STATE_FILE), { force: true });
  return lines;
}
