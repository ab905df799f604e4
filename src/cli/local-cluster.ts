// A local cluster of `tenure start` child processes, as `tenure up` runs it: etcd's local-cluster
// ports (clients 2379, 22379, 32379; peers 2380, 22380, 32380), data and logs under one
// directory, and a state file naming the PIDs so that `tenure down` (or a later `up`) finds them.
import { MEMBER_NODE_ARGS, newMemberFlags } from '../launcher/member-command.js';
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
}

export const DEFAULT_CLIENT_PORTS = [2379, 22379, 32379] as const;
export const DEFAULT_PEER_PORTS = [2380, 22380, 32380] as const;
const STATE_FILE = 'cluster.json';

export class LocalClusterError extends Error {
  override readonly name = 'LocalClusterError';
  readonly code = 'LOCAL_CLUSTER';
}

const binPath = fileURLToPath(new URL('../../../bin/tenure', import.meta.url));

/**
 * Whether `pid` is still one of our members: alive and running `tenure start` (a PID recorded
 * long ago may belong to another program by now, which must never be signalled).
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('tenure') && cmd.includes('start');
  } catch {
    return true; // no /proc: trust the signal check
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.once('error', () => res(false));
    s.listen(port, '127.0.0.1', () => s.close(() => res(true)));
  });
}

export function readState(dir: string): LocalClusterState | undefined {
  const p = join(dir, STATE_FILE);
  if (!existsSync(p)) return undefined;
  return JSON.parse(readFileSync(p, 'utf8')) as LocalClusterState;
}

export function planCluster(
  dir: string,
  clientPorts: readonly number[],
  peerPorts: readonly number[],
): LocalClusterState {
  const abs = resolve(dir);
  const members = clientPorts.map((cp, i) => {
    const name = `n${i + 1}`;
    return {
      name,
      clientUrl: `http://127.0.0.1:${cp}`,
      peerUrl: `http://127.0.0.1:${peerPorts[i] as number}`,
      dataDir: join(abs, name),
      logFile: join(abs, `${name}.log`),
      pid: 0,
    };
  });
  return { dir: abs, members };
}

/** Start every member as a child process; `detached` ones outlive this process. */
export async function startCluster(
  state: LocalClusterState,
  detached: boolean,
): Promise<LocalClusterState> {
  const running = readState(state.dir);
  if (running?.members.some((m) => m.pid > 0 && isAlive(m.pid)))
    throw new LocalClusterError(
      `a cluster from ${state.dir} is already running (pids ${running.members.map((m) => m.pid).join(', ')}); stop it with: bin/tenure down`,
    );
  for (const m of state.members) {
    for (const url of [m.clientUrl, m.peerUrl]) {
      const port = Number(new URL(url).port);
      if (!(await portFree(port)))
        throw new LocalClusterError(
          `port ${port} on 127.0.0.1 is in use (is an etcd or another tenure running?); free it or pass other ports`,
        );
    }
  }
  mkdirSync(state.dir, { recursive: true });
  const initialCluster = state.members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  for (const m of state.members) {
    const out = openSync(m.logFile, 'a');
    const child = spawn(
      process.execPath,
      [...MEMBER_NODE_ARGS, binPath, 'start', ...newMemberFlags(m, initialCluster, 'tenure-local')],
      { stdio: ['ignore', out, out], detached },
    );
    closeSync(out);
    if (child.pid === undefined) throw new LocalClusterError(`could not start ${m.name}`);
    m.pid = child.pid;
    if (detached) child.unref();
  }
  writeFileSync(join(state.dir, STATE_FILE), JSON.stringify(state, null, 2));
  return state;
}

/** Poll each member's /health until every one sees a leader, or fail with its log's tail. */
export async function waitHealthy(
  state: LocalClusterState,
  timeoutMs: number,
  onProgress?: (healthy: number) => void,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    let healthy = 0;
    for (const m of state.members) {
      if (!isAlive(m.pid))
        throw new LocalClusterError(`${m.name} exited during start:\n${tail(m.logFile)}`);
      try {
        const r = await fetch(`${m.clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
        const body = (await r.json()) as { health?: string };
        if (r.ok && body.health === 'true') healthy += 1;
      } catch {
        // not listening yet
      }
    }
    onProgress?.(healthy);
    if (healthy === state.members.length) return;
    if (performance.now() > deadline) {
      const logs = state.members.map((m) => `--- ${m.name}\n${tail(m.logFile)}`).join('\n');
      throw new LocalClusterError(
        `the cluster was not healthy within ${timeoutMs} ms (${healthy}/${state.members.length} members):\n${logs}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function tail(file: string): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
}

/** SIGTERM every member, SIGKILL whoever is still there after `graceMs`; forget the state. */
export async function stopCluster(state: LocalClusterState, graceMs = 10_000): Promise<string[]> {
  const lines: string[] = [];
  for (const m of state.members) {
    if (m.pid > 0 && isAlive(m.pid)) {
      process.kill(m.pid, 'SIGTERM');
      lines.push(`${m.name}: SIGTERM sent to pid ${m.pid}`);
    }
  }
  const deadline = performance.now() + graceMs;
  while (state.members.some((m) => m.pid > 0 && isAlive(m.pid)) && performance.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  for (const m of state.members) {
    if (m.pid > 0 && isAlive(m.pid)) {
      process.kill(m.pid, 'SIGKILL');
      lines.push(`${m.name}: did not stop within ${graceMs} ms; SIGKILL sent`);
    }
  }
  rmSync(join(state.dir, STATE_FILE), { force: true });
  return lines;
}
