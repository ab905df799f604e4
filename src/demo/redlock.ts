// `tenure demo redlock`: Redlock's three failures with real Redis servers, then tenure refusing
// the same faults (redlock-scenarios.ts, redlock-tenure.ts). Everything it starts — five
// redis-server processes, client A's child process, a 3-member tenure cluster — lives under one
// temporary directory and is stopped by PID in a finally.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type Cluster } from '../launcher/cluster.js';
import { RedisNodes, requireRedisServer } from './redis-nodes.js';
import { loadRedlock } from './redlock-lib.js';
import {
  clockJump,
  pausedHolder,
  restart,
  type RedlockContext,
  type RedlockCounts,
} from './redlock-scenarios.js';
import {
  clockJumpEnv,
  tenureClockJump,
  tenurePausedHolder,
  tenureRestart,
  type TenureContext,
  type TenureCounts,
} from './redlock-tenure.js';
import type { Timeline } from './timeline.js';
import { buildWallClockShim } from './wall-clock-shim.js';

// Named limits.
/** Redis servers: Redlock's usual deployment (antirez's description uses N = 5). */
const redisNodesCount = 5;
/** A hang guard for the tenure cluster's first election. */
const clusterReadyTimeoutMs = 30_000;

export interface RedlockReport {
  readonly redlock: {
    readonly pausedHolder: RedlockCounts;
    readonly clockJump: RedlockCounts;
    readonly restart: RedlockCounts;
  };
  readonly tenure: {
    readonly pausedHolder: TenureCounts;
    readonly clockJump: TenureCounts;
    readonly restart: TenureCounts;
  };
}

/** The demo's claim: each Redlock scenario failed, and tenure never overlapped and fenced. */
export function redlockDemoHolds(r: RedlockReport): boolean {
  const red = r.redlock;
  const ten = r.tenure;
  return (
    red.pausedHolder.staleWritesLanded > 0 &&
    red.clockJump.overlaps > 0 &&
    red.restart.overlaps > 0 &&
    ten.pausedHolder.staleWritesRejected > 0 &&
    [ten.pausedHolder, ten.clockJump, ten.restart].every(
      (s) => s.overlaps === 0 && s.staleWritesLanded === 0,
    )
  );
}

export async function runRedlockDemo(t: Timeline, signal?: AbortSignal): Promise<RedlockReport> {
  requireRedisServer();
  const lib = await loadRedlock();
  const run = randomBytes(3).toString('hex');
  const dir = await mkdtemp(join(tmpdir(), 'tenure-demo-redlock-'));
  let nodes: RedisNodes | undefined;
  let cluster: Cluster | undefined;
  try {
    const shim = buildWallClockShim(dir);
    nodes = await RedisNodes.start(redisNodesCount, dir, shim, signal);
    t.event(
      'redis',
      `5 redis-server on ports ${nodes.ports.join(', ')}, pids ${nodes.pids.join(', ')}`,
    );
    const red: RedlockContext = { lib, nodes, timeline: t, run, ...(signal ? { signal } : {}) };
    t.heading('== Redlock 1. A holder paused past its TTL');
    const rp = await pausedHolder(red);
    t.heading('== Redlock 2. A node whose wall clock jumps forward');
    const rc = await clockJump(red);
    t.heading('== Redlock 3. A node restarted without fsync');
    const rr = await restart(red);
    t.event('redis', `stopping pids ${nodes.pids.join(', ')}`);
    await nodes.stop();

    const clock = clockJumpEnv(dir);
    cluster = await startCluster({
      kind: 'tenure',
      size: 3,
      tmpRoot: dir,
      logs: 'file',
      tracked: false,
      env: clock.env,
      readyTimeoutMs: clusterReadyTimeoutMs,
      ...(signal ? { signal } : {}),
    });
    t.event(
      'cluster',
      `3 tenure members under libfaketime (wall clock only), pids ${cluster.pids.join(', ')}`,
    );
    const ten: TenureContext = {
      cluster,
      clock,
      dir,
      timeline: t,
      run,
      ...(signal ? { signal } : {}),
    };
    t.heading('== tenure 1. A holder paused past its lease, writing through a fence');
    const tp = await tenurePausedHolder(ten);
    t.heading('== tenure 2. Every member’s wall clock jumps forward');
    const tc = await tenureClockJump(ten);
    t.heading('== tenure 3. Two of three members killed -9 and restarted');
    const tr = await tenureRestart(ten);
    return {
      redlock: { pausedHolder: rp, clockJump: rc, restart: rr },
      tenure: { pausedHolder: tp, clockJump: tc, restart: tr },
    };
  } finally {
    if (cluster !== undefined) {
      t.event('cluster', `stopping pids ${cluster.pids.filter((p) => p !== undefined).join(', ')}`);
      await cluster.stop();
    }
    if (nodes !== undefined) await nodes.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
