// SWIM membership for application nodes: the pure protocol core (src/core/detect/swim) driven by
// Node timers and a UDP/TCP transport. The runtime reads the monotonic clock, feeds the core,
// sends what it asks, and publishes what it reports — as a typed EventEmitter and as async
// iterators. It decides nothing itself.
//
// The stall trap (the phase order is in the Node.js guide "The Node.js Event Loop"): after the
// event loop was blocked, Node runs expired timers before it reads the sockets, so a timeout would
// fire while its answer waits unread. The core notices the late tick and asks to be called again at
// once; we call it from setImmediate, which Node runs after the poll phase — one round of I/O has
// then been read.

import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { prng } from '../core/base/index.js';
import {
  LevelLadder,
  Swim,
  type Channel,
  type MemberView,
  type Packet,
  type SwimEvent,
} from '../core/detect/index.js';
import {
  resolveConfig,
  type LevelAction,
  type MembershipConfig,
  type MembershipOptions,
} from './config.js';
import { AsyncQueue } from '../core/base/async-queue.js';
import { MembershipError } from './errors.js';
import { UdpTcpTransport } from './transport.js';

/** A member's visible status changed. */
export interface StatusEvent {
  readonly type: 'alive' | 'suspect' | 'dead' | 'left';
  readonly member: MemberView;
  /** Monotonic ms (performance.now() of this process). */
  readonly atMs: number;
  readonly by?: string;
  readonly reason?: 'timeout' | 'evidence' | 'rumor';
}

/** A link to a member stopped (or started again) answering directly, though the member is alive. */
export interface LinkEvent {
  readonly type: 'unreachable' | 'reachable';
  readonly name: string;
  readonly channel: Channel | 'all';
  readonly atMs: number;
}

/** An action bound to a suspicion level engaged or released (config.ladder). */
export interface LevelEvent {
  readonly type: 'level';
  readonly name: string;
  readonly level: number;
  readonly action: LevelAction;
  readonly engaged: boolean;
  readonly byOperator: boolean;
  readonly atMs: number;
}

/** This process was stalled (event loop blocked or stopped) and distrusted its timeouts. */
export interface StallEvent {
  readonly type: 'stall';
  readonly durationMs: number;
  readonly atMs: number;
}

export type MembershipEvent = StatusEvent | LinkEvent | LevelEvent | StallEvent;

export interface MembershipEventMap {
  alive: [StatusEvent];
  suspect: [StatusEvent];
  dead: [StatusEvent];
  left: [StatusEvent];
  unreachable: [LinkEvent];
  reachable: [LinkEvent];
  level: [LevelEvent];
  stall: [StallEvent];
  error: [Error];
}

export interface CallOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export class Membership extends EventEmitter<MembershipEventMap> implements AsyncDisposable {
  readonly config: MembershipConfig;
  private readonly core: Swim;
  private transport!: UdpTcpTransport;
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private levelTimer: NodeJS.Timeout | null = null;
  private readonly ladders = new Map<string, LevelLadder<LevelAction>>();
  private readonly iterators = new Set<AsyncQueue<MembershipEvent>>();
  private state: 'running' | 'closing' | 'closed' = 'running';
  private readonly closedPromise: Promise<void>;
  private resolveClosed!: () => void;

  private constructor(config: MembershipConfig, addr: string, seed: number) {
    super();
    this.config = config;
    this.core = new Swim({
      name: config.name,
      addr,
      epoch: config.epoch ?? Date.now(),
      config: config.swim,
      rng: prng(seed),
      nowMs: performance.now(),
    });
    this.closedPromise = new Promise((r) => (this.resolveClosed = r));
  }

  /** Bind, join through the seeds, and start the protocol. */
  static async start(options: MembershipOptions, call: CallOptions = {}): Promise<Membership> {
    const config = resolveConfig(options);
    call.signal?.throwIfAborted();
    // The transport needs its handlers before the membership exists (it must know its port).
    const ref: { m?: Membership } = {};
    const transport = await UdpTcpTransport.bind(config.host, config.port, {
      onPacket: (p, ch) => ref.m?.onPacket(p, ch),
      onRefused: (addr) => ref.m?.onRefused(addr),
      onError: (e) => ref.m?.emitError(e),
    });
    if (call.signal?.aborted === true) {
      await transport.close();
      throw call.signal.reason;
    }
    // A seed for the protocol's random choices; any value works, it only spreads members apart.
    const seed = (process.pid * 2654435761 + transport.port) >>> 0;
    const m = new Membership(config, transport.address, seed);
    ref.m = m;
    m.transport = transport;
    m.core.join(config.seeds, performance.now());
    m.flush();
    m.levelTimer = setInterval(() => m.updateLevels(), config.levelIntervalMs);
    m.levelTimer.unref();
    return m;
  }

  get name(): string {
    return this.config.name;
  }

  /** "host:port" this member listens on (UDP and TCP). */
  get address(): string {
    return this.transport.address;
  }

  get localHealth(): number {
    return this.core.localHealth;
  }

  get incarnation(): number {
    return this.core.incarnation;
  }

  /** Every member this node knows, with its visible status. */
  members(): MemberView[] {
    return this.core.memberList();
  }

  member(name: string): MemberView | undefined {
    return this.core.member(name);
  }

  /** The suspicion level of a member on the φ scale (0 fine, ≥ 8 suspect, ∞ dead). */
  level(name: string): number {
    return this.core.level(name, performance.now());
  }

  /** The operator's word: engage an action for a member regardless of its level. */
  engage(name: string, action: LevelAction): void {
    for (const c of this.ladder(name).engageByOperator(action, performance.now())) {
      this.publish({ type: 'level', name, ...c });
    }
  }

  /** Every event from now on, until the membership closes or the signal aborts. */
  events(call: { signal?: AbortSignal } = {}): AsyncIterableIterator<MembershipEvent> {
    const onAbort = () => q.end();
    const q: AsyncQueue<MembershipEvent> = new AsyncQueue({
      max: this.config.eventQueueMax,
      onEnd: () => {
        this.iterators.delete(q);
        call.signal?.removeEventListener('abort', onAbort);
      },
    });
    if (this.state !== 'running' || call.signal?.aborted === true) {
      q.end();
      return q;
    }
    this.iterators.add(q);
    call.signal?.addEventListener('abort', onAbort, { once: true });
    return q;
  }

  /** Leave gracefully: announce `left`, linger so it spreads, then close. */
  async leave(call: CallOptions = {}): Promise<void> {
    if (this.state !== 'running') return;
    call.signal?.throwIfAborted();
    this.core.leave(performance.now());
    this.flush();
    const linger = Math.min(this.config.leaveLingerMs, call.timeoutMs ?? Infinity);
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(done, linger);
      const onAbort = () => {
        clearTimeout(t);
        call.signal?.removeEventListener('abort', onAbort);
        const reason: unknown = call.signal?.reason;
        reject(reason instanceof Error ? reason : new MembershipError('ABORTED', 'leave aborted'));
      };
      function done() {
        call.signal?.removeEventListener('abort', onAbort);
        resolve();
      }
      call.signal?.addEventListener('abort', onAbort, { once: true });
    });
    await this.close();
  }

  /** Stop without announcing anything (others will detect it). */
  async close(): Promise<void> {
    if (this.state !== 'running') return this.closedPromise;
    this.state = 'closing';
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.immediate !== null) clearImmediate(this.immediate);
    if (this.levelTimer !== null) clearInterval(this.levelTimer);
    for (const q of [...this.iterators]) q.end();
    await this.transport.close();
    this.state = 'closed';
    this.resolveClosed();
  }

  /** Resolves once the membership has closed. */
  closed(): Promise<void> {
    return this.closedPromise;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ---------------------------------------------------------------------------------------------

  private onPacket(p: Packet, channel: Channel): void {
    if (this.state !== 'running') return;
    this.core.receive(p, channel, performance.now());
    this.flush();
  }

  private onRefused(addr: string): void {
    if (this.state !== 'running') return;
    this.core.refused(addr, performance.now());
    this.flush();
  }

  private tick = (): void => {
    this.timer = null;
    this.immediate = null;
    if (this.state !== 'running') return;
    this.core.tick(performance.now());
    this.flush();
  };

  /** Send what the core asks, publish what it reports, and wake it when it wants. */
  private flush(): void {
    for (const s of this.core.takeOutbox()) {
      try {
        this.transport.send(s);
      } catch (e) {
        this.emitError(e as Error);
      }
    }
    for (const e of this.core.takeEvents()) this.publishCore(e);
    this.schedule();
  }

  private schedule(): void {
    if (this.state !== 'running') return;
    const due = this.core.nextDeadlineMs();
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!Number.isFinite(due)) return;
    const wait = due - performance.now();
    if (wait <= 0) {
      // After the poll phase: the packets that queued while we were busy are read first.
      if (this.immediate === null) this.immediate = setImmediate(this.tick);
      return;
    }
    this.timer = setTimeout(this.tick, Math.ceil(wait));
  }

  private publishCore(e: SwimEvent): void {
    if (e.type === 'stall') {
      this.publish({ type: 'stall', durationMs: e.durationMs, atMs: e.atMs });
      return;
    }
    if (e.type === 'unreachable' || e.type === 'reachable') {
      this.publish({ type: e.type, name: e.name, channel: e.channel, atMs: e.atMs });
      return;
    }
    const member = this.core.member(e.name);
    if (member === undefined || !('by' in e || 'addr' in e)) return;
    this.publish({
      type: e.type,
      member,
      atMs: e.atMs,
      ...(e.by === undefined ? {} : { by: e.by }),
      ...(e.reason === undefined ? {} : { reason: e.reason }),
    });
    this.updateLevel(e.name, e.atMs);
  }

  private ladder(name: string): LevelLadder<LevelAction> {
    let l = this.ladders.get(name);
    if (l === undefined) {
      l = new LevelLadder(this.config.ladder);
      this.ladders.set(name, l);
    }
    return l;
  }

  private updateLevels(): void {
    if (this.state !== 'running') return;
    const now = performance.now();
    for (const m of this.core.memberList()) this.updateLevel(m.name, now);
  }

  private updateLevel(name: string, now: number): void {
    const level = this.core.level(name, now);
    for (const c of this.ladder(name).update(level, now)) {
      this.publish({ type: 'level', name, ...c });
    }
  }

  private publish(e: MembershipEvent): void {
    for (const q of this.iterators) q.push(e);
    switch (e.type) {
      case 'alive':
      case 'suspect':
      case 'dead':
      case 'left':
        this.emit(e.type, e);
        break;
      case 'unreachable':
      case 'reachable':
        this.emit(e.type, e);
        break;
      case 'level':
        this.emit('level', e);
        break;
      case 'stall':
        this.emit('stall', e);
        break;
    }
  }

  private emitError(e: Error): void {
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }
}

export { MembershipError };
