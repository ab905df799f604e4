// Locks: a few clients take a few locks with short leases (TTL 2–3 s), half through the SDK's Lock
// recipe and half through the etcd Lock service, all on the same lock names (both use etcd's key
// layout, so they queue together), and while holding write to a fenced resource this process owns
// (lock-fence.ts). Each client is a child process (lock-client.ts), so that the workload can
// SIGSTOP a holder's own client, on its own seeded schedule and independently of the nemesis, for
// 0.5–4 s: often longer than its lease, after which it resumes and writes with its old token.
// Judged by lock-check.ts: exclusion in the server's view (no grant while another holder's
// acknowledged lease runs), tokens unique and in grant order, and no stale write accepted.
//
// Times: the children read CLOCK_MONOTONIC (process.hrtime.bigint()), as this process does, and
// performance.now() is that clock from an origin (Node's timeOrigin), so one offset measured here
// puts every child's times on the run's clock.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LeaseRenewal } from '../../check/lease-contract.js';
import type { Prng } from '../../core/base/prng.js';
import { sleep } from '../../launcher/poll.js';
import type { ClockWindows } from '../clock-windows.js';
import type { Timeline } from '../timeline.js';
import { judgeLocks, type ClientPause, type RecordedHold } from './lock-check.js';
import { LocksFence, type FenceKind } from './lock-fence.js';
import {
  monotonicMs,
  type ClientMessage,
  type LockClientConfig,
  type LockClientMode,
  type ParentMessage,
} from './lock-messages.js';
import type { Workload, WorkloadContext, WorkloadResult } from './workload.js';

/** Test-only: `open` makes the fence accept every write, to prove the checker sees stale ones. */
export const LOCKS_FENCE_ENV = 'TENURE_TEST_CHAOS_LOCKS_FENCE';

const clients = 4;
const lockNames = ['a', 'b'] as const;
/** Client c's TTL: 2 s and 3 s, each with both modes. */
const ttlSecondsOf = (c: number): number => 2 + (Math.floor(c / 2) % 2);
const modeOf = (c: number): LockClientMode => (c % 2 === 0 ? 'sdk' : 'service');
/**
 * Between two client pauses, and how long one lasts, in ms: half of them past the client's TTL
 * (then its lease expires while it sleeps), the others within it.
 */
const pauseEveryMs = { min: 1_000, max: 3_000 } as const;
const pauseMsMin = 500;
const pauseMsMax = 4_000;
/** Hang guard for the children to finish their holds and exit once told to stop. */
const stopTimeoutMs = 30_000;
/** Characters of a child's stderr kept, for the note on a child that failed. */
const stderrTailChars = 2_000;

const clientScript = fileURLToPath(new URL('./lock-client.js', import.meta.url));

interface Child {
  readonly client: number;
  readonly mode: LockClientMode;
  readonly ttlSeconds: number;
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
  /** The run's hold id of the hold it is in, if any. */
  holding: number | undefined;
  /** Child hold number → run hold id. */
  readonly holds: Map<number, number>;
  stderr: string;
  exitCode?: number | null;
  signalled?: boolean;
}

interface MutableHold extends Omit<RecordedHold, 'releasedMs'> {
  releasedMs: number;
}

export interface LocksWorkloadOptions {
  /** Test-only; default from LOCKS_FENCE_ENV, else 'memory'. */
  readonly fence?: FenceKind;
}

export class LocksWorkload implements Workload {
  readonly name = 'locks';
  readonly #endpoints: readonly string[];
  readonly #prng: Prng;
  readonly #timeline: Timeline;
  readonly #clocks: ClockWindows;
  readonly #fence: LocksFence;
  readonly #holds: MutableHold[] = [];
  readonly #renewals: LeaseRenewal[] = [];
  readonly #pauses: ClientPause[] = [];
  readonly #children: Child[] = [];
  readonly #notes: string[] = [];
  readonly #stop = new AbortController();
  /** performance.now() − CLOCK_MONOTONIC, in ms. */
  #offsetMs = 0;

  constructor(ctx: WorkloadContext, options: LocksWorkloadOptions = {}) {
    this.#endpoints = ctx.endpoints;
    this.#prng = ctx.prng;
    this.#timeline = ctx.timeline;
    this.#clocks = ctx.clocks;
    const env = process.env[LOCKS_FENCE_ENV];
    this.#fence = new LocksFence(options.fence ?? (env === 'open' ? 'open' : 'memory'));
  }

  get opsSoFar(): number {
    return this.#holds.length + this.#fence.log.length;
  }

  async run(signal: AbortSignal): Promise<void> {
    this.#offsetMs = performance.now() - monotonicMs();
    if (this.#fence.kind === 'open')
      this.#timeline.add('note', `locks: the fence is OPEN (${LOCKS_FENCE_ENV}, test-only)`);
    for (let c = 0; c < clients; c++) this.#children.push(this.#start(c));
    const pausing = this.#pauseHolders();
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    this.#stop.abort();
    // Every paused child is running again before any is told to stop.
    await pausing;
    await this.#stopChildren();
  }

  #start(c: number): Child {
    const config: LockClientConfig = {
      client: c,
      mode: modeOf(c),
      endpoints: this.#endpoints,
      locks: lockNames,
      ttlSeconds: ttlSecondsOf(c),
      seed: Math.floor(this.#prng.fork(`client-${c}`).next() * 2 ** 31),
    };
    const proc = spawn(process.execPath, [clientScript, JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: process.env,
    });
    const child: Child = {
      client: c,
      mode: config.mode,
      ttlSeconds: config.ttlSeconds,
      process: proc,
      exited: new Promise((resolve) => proc.once('exit', (code) => resolve(code))),
      holding: undefined,
      holds: new Map(),
      stderr: '',
    };
    proc.stderr?.setEncoding('utf8');
    proc.stderr?.on('data', (s: string) => {
      child.stderr = (child.stderr + s).slice(-stderrTailChars);
    });
    proc.on('message', (m: ClientMessage) => this.#onMessage(child, m));
    void child.exited.then((code) => {
      child.exitCode = code;
      if (code !== 0 && child.signalled !== true) {
        const text = `locks: client ${c} exited with ${code}: ${child.stderr.trim().slice(-300)}`;
        this.#notes.push(text);
        this.#timeline.add('note', text);
      }
    });
    return child;
  }

  #runMs(childMs: number): number {
    return childMs + this.#offsetMs;
  }

  #onMessage(child: Child, m: ClientMessage): void {
    switch (m.type) {
      case 'renewal':
        this.#renewals.push({
          lease: m.lease,
          client: child.client,
          sentMs: this.#runMs(m.sentMs),
          answeredMs: this.#runMs(m.answeredMs),
          ttlSeconds: m.ttlSeconds,
        });
        return;
      case 'hold': {
        const id = this.#holds.length;
        child.holds.set(m.hold, id);
        child.holding = id;
        this.#holds.push({
          hold: id,
          lock: m.lock,
          client: child.client,
          lease: m.lease,
          token: Number(m.token),
          requestedMs: this.#runMs(m.requestedMs),
          acquiredMs: this.#runMs(m.acquiredMs),
          releasedMs: Infinity,
        });
        return;
      }
      case 'released': {
        const id = child.holds.get(m.hold);
        const h = id === undefined ? undefined : this.#holds[id];
        if (h !== undefined) h.releasedMs = Math.max(h.acquiredMs, this.#runMs(m.releasedMs));
        if (child.holding === id) child.holding = undefined;
        return;
      }
      case 'write': {
        const id = child.holds.get(m.hold) ?? -1;
        void this.#fence.write(m.lock, id, child.client, BigInt(m.token)).then((accepted) => {
          const reply: ParentMessage = { type: 'written', seq: m.seq, accepted };
          if (child.process.connected) child.process.send(reply);
        });
        return;
      }
      case 'note':
        this.#timeline.add('note', `locks: client ${child.client}: ${m.text}`);
        return;
      case 'done':
        return;
    }
  }

  /** SIGSTOP a client that holds a lock, now and then, until the run stops. */
  async #pauseHolders(): Promise<void> {
    const p = this.#prng.fork('pauses');
    const between = (r: { min: number; max: number }): number => r.min + p.next() * (r.max - r.min);
    const stop = this.#stop.signal;
    while (!stop.aborted) {
      await sleep(between(pauseEveryMs), stop).catch(() => undefined);
      if (stop.aborted) return;
      const holders = this.#children.filter(
        (c) => c.holding !== undefined && c.exitCode === undefined,
      );
      if (holders.length === 0) continue;
      const child = p.pick(holders);
      const ttlMs = child.ttlSeconds * 1000;
      const ms = p.chance(0.5)
        ? between({ min: ttlMs + 200, max: pauseMsMax })
        : between({ min: pauseMsMin, max: ttlMs });
      const hold = this.#holds[child.holding as number];
      const pid = child.process.pid as number;
      const fromMs = performance.now();
      this.#timeline.add(
        'client-pause',
        `locks: SIGSTOP client ${child.client} (${child.mode}, TTL ${child.ttlSeconds} s, ` +
          `holding ${hold?.lock} token ${hold?.token}) for ${ms.toFixed(0)} ms`,
      );
      try {
        process.kill(pid, 'SIGSTOP');
        await sleep(ms);
      } finally {
        if (child.exitCode === undefined) process.kill(pid, 'SIGCONT');
        const toMs = performance.now();
        this.#pauses.push({
          client: child.client,
          fromMs,
          toMs,
          beyondTtl: toMs - fromMs > child.ttlSeconds * 1000,
        });
        this.#timeline.add('client-resume', `locks: SIGCONT client ${child.client}`);
      }
    }
  }

  async #stopChildren(): Promise<void> {
    for (const c of this.#children)
      if (c.process.connected) c.process.send({ type: 'stop' } satisfies ParentMessage);
    await Promise.all(
      this.#children.map(async (c) => {
        const guard = sleep(stopTimeoutMs).then(() => 'late' as const);
        if ((await Promise.race([c.exited.then(() => 'exited' as const), guard])) === 'exited')
          return;
        c.signalled = true;
        this.#notes.push(`locks: client ${c.client} did not stop within ${stopTimeoutMs} ms`);
        if (c.process.pid !== undefined && c.exitCode === undefined)
          process.kill(c.process.pid, 'SIGKILL');
        await c.exited;
      }),
    );
  }

  check(): WorkloadResult {
    const t = this.#timeline;
    const fence = this.#fence.log;
    const v = judgeLocks(
      { holds: this.#holds, renewals: this.#renewals, fence, pauses: this.#pauses },
      {
        driftRatioDuring: (fromMs, toMs) => this.#clocks.driftRatioDuring(fromMs, toMs),
        at: (ms) => t.at(ms),
        endMs: performance.now(),
        originMs: t.startMs,
      },
    );
    const accepted = fence.filter((w) => w.accepted).length;
    const modes = (m: LockClientMode): number =>
      this.#holds.filter((h) => modeOf(h.client) === m).length;
    const beyond = this.#pauses.filter((p) => p.beyondTtl).length;
    const detail =
      `${this.#holds.length} holds (${modes('sdk')} SDK, ${modes('service')} Lock service) ` +
      `on ${lockNames.length} locks; fence (${this.#fence.kind}): ${accepted} writes accepted, ` +
      `${fence.length - accepted} stale refused, ${v.uncertainEffects} accepted past their ` +
      `lease; ${this.#pauses.length} client pauses (${beyond} beyond the TTL)` +
      (this.#notes.length > 0 ? `; ${this.#notes.join('; ')}` : '');
    const base = { name: this.name, ops: this.opsSoFar, unknown: 0, detail };
    if (v.anomalies.length > 0) return { ...base, verdict: 'anomalies', anomalies: v.anomalies };
    // No hold at all would be a workload that tested nothing, not a pass.
    if (this.#holds.length === 0) return { ...base, verdict: 'undecided', anomalies: [] };
    return { ...base, verdict: 'ok', anomalies: [] };
  }
}
