// One simulated run: real replicas on a virtual clock, a seeded network and seeded disks, faults
// from the schedule, a client workload, invariants checked on every event, and at the end
// linearizability, liveness after healing and convergence. Each replica runs the server's state
// machine, the etcd key space (EtcdMachine), unchanged behind client sessions (SessionMachine).
import { AssertionError } from '../core/base/assert.js';
import { fnvNumber, FNV_OFFSET } from '../core/base/hash.js';
import type { Mutants } from '../core/base/mutants.js';
import { NO_MUTANTS } from '../core/base/mutants.js';
import { prng, type Prng } from '../core/base/prng.js';
import { logIndex, nodeId, type NodeId } from '../core/base/units.js';
import type { Raft } from '../core/raft/raft.js';
import { MESSAGE_TYPE_CODES, type ConfState, type Message } from '../core/raft/types.js';
import { isEtcdError } from '../core/state/etcd-errors.js';
import { EtcdMachine, type EtcdResult } from '../core/state/etcd-machine.js';
import {
  decodeSessionEntry,
  encodeSessionEntry,
  SessionMachine,
  type SessionApplyResult,
} from '../core/state/session-machine.js';
import type { Cancel, Clock, Transport } from '../replica/io.js';
import { Replica } from '../replica/replica.js';
import { CorruptWalError, recover, SNAP_FILE, WAL_FILE } from '../replica/wal.js';
import { RaftLog } from '../core/raft/log.js';
import { checkKv } from '../check/linearizability.js';
import { SimDisk } from './disk.js';
import { EventQueue } from './events.js';
import {
  Invariants,
  InvariantViolation,
  type InvariantName,
  type LogHolder,
} from './invariants.js';
import { deliveryDelays, Partitions } from './network.js';
import type { Fault, PartitionShape, Schedule } from './schedule.js';
import { utf8, type ClientRequest } from './kv-requests.js';
import { Workload, type ClientNet, type Reply } from './workload.js';
import { WellFormedOnly } from './well-formed.js';

export interface RunResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly invariant?: InvariantName;
  readonly message?: string;
  /** Rolling hash of every event run: equal for equal (seed, schedule, code). */
  readonly eventHash: number;
  readonly events: number;
  readonly opsChecked: number;
  readonly virtualMs: number;
  readonly leaderAfterHealMs?: number;
}

export interface RunOptions {
  readonly mutants?: Mutants;
  /** Stop the run at this many events (a runaway guard, not a tuning knob). */
  readonly eventsMax?: number;
}

type NodeState = 'up' | 'down' | 'paused' | 'removed';

interface Held {
  /** Where the event came from: order is kept per source, not across sources. */
  readonly source: number;
  readonly fn: () => void;
}

/** Held-event sources besides peers (whose source is their node id). */
const SOURCE_CLIENT = -1;
const SOURCE_DISK = -2;
const SOURCE_TIMER = -3;

type SimResult = SessionApplyResult<EtcdResult>;

class SimNode {
  state: NodeState = 'up';
  epoch = 0;
  replica: Replica<SimResult> | undefined;
  /** The key space inside `replica`'s state machine, for reads. */
  etcd: EtcdMachine | undefined;
  held: Held[] = [];
  /** While down: the log it would restart with. */
  ghost: LogHolder | undefined;
  heldTick: (() => void) | undefined;
  constructor(
    readonly id: NodeId,
    readonly disk: SimDisk,
    /** How fast this node's clock runs against true time (drift); changed by clock faults. */
    public clockRate: number,
  ) {}

  private localBaseMs = 0;
  private trueBaseMs = 0;

  /** The node's monotonic clock: continuous across rate changes. */
  localNow(trueNowMs: number): number {
    return this.localBaseMs + (trueNowMs - this.trueBaseMs) * this.clockRate;
  }

  setClockRate(trueNowMs: number, rate: number): void {
    this.localBaseMs = this.localNow(trueNowMs);
    this.trueBaseMs = trueNowMs;
    this.clockRate = rate;
  }

  /** Run `fn` now, or on resume if paused; never if down. */
  run(source: number, fn: () => void): void {
    if (this.state === 'up') fn();
    else if (this.state === 'paused' && this.held.length < HELD_MAX) this.held.push({ source, fn });
  }
}

const HELD_MAX = 100_000;

export function runSchedule(schedule: Schedule, opts: RunOptions = {}): RunResult {
  const sim = new Simulation(schedule, opts);
  return sim.run();
}

class Simulation {
  private readonly q = new EventQueue();
  private readonly cfg: Schedule['config'];
  private readonly root: Prng;
  private readonly netPrng: Prng;
  private readonly nemesisPrng: Prng;
  private readonly partitions = new Partitions();
  private readonly nodes = new Map<NodeId, SimNode>();
  private readonly inv = new Invariants();
  private readonly mutants: Mutants;
  private readonly initialConf: ConfState;
  private readonly workload: Workload;
  private hash = FNV_OFFSET;
  private events = 0;
  private nextId: number;
  private removing = new Set<NodeId>();
  /** A runaway guard on events per run (a message storm is a liveness failure, not a hang). */
  private get eventsMax(): number {
    return this.opts.eventsMax ?? 5_000_000;
  }
  /** Commands in the committed log, as "session:seq", for the durability check. */
  private readonly appliedCommands = new Set<string>();
  /** Isolations (their durations) waiting for the next election. */
  private armedIsolations: number[] = [];
  /** Membership faults waiting for the next election. */
  private armed: Extract<Fault, { kind: 'addNode' | 'removeNode' }>[] = [];
  private flapping: Cancel[] = [];
  private leaderAfterHealMs: number | undefined;

  constructor(
    private readonly schedule: Schedule,
    private readonly opts: RunOptions,
  ) {
    this.cfg = schedule.config;
    this.root = prng(schedule.seed);
    this.netPrng = this.root.fork('net');
    this.nemesisPrng = this.root.fork('nemesis');
    this.mutants = opts.mutants ?? NO_MUTANTS;
    const voters = Array.from({ length: this.cfg.nodes }, (_, i) => nodeId(i + 1));
    this.initialConf = { voters, learners: [] };
    this.nextId = this.cfg.nodes + 1;
    const stopAtMs = this.cfg.faultPhaseMs + 1000;
    this.workload = new Workload(this.clientNet(), this.root.fork('workload'), {
      clients: this.cfg.clients,
      readers: this.cfg.readers,
      keys: this.cfg.keys,
      opTimeoutMs: this.cfg.opTimeoutMs,
      attemptTimeoutMs: this.cfg.attemptTimeoutMs,
      stopAtMs,
    });
    this.inv.liveRafts = () => this.liveRafts();
    this.inv.crashedLogs = () => {
      const out: LogHolder[] = [];
      for (const n of this.nodes.values()) if (n.state === 'down' && n.ghost) out.push(n.ghost);
      return out;
    };
    for (const id of voters) this.addNode(id);
  }

  private electionMs(): number {
    return this.cfg.electionTicks * this.cfg.tickMs;
  }

  // ---------------------------------------------------------------- nodes

  private addNode(id: NodeId): SimNode {
    const rate = this.cfg.clockRates[(id - 1) % this.cfg.clockRates.length] ?? 1;
    // The disk delivers completions through the node (held while paused), so it needs the node
    // that it is built before.
    const holder: { node?: SimNode } = {};
    const disk = new SimDisk(
      this.q,
      this.root.fork(`disk-${id}`),
      {
        tornWriteProbability: this.cfg.tornWriteProbability,
        sectorBytes: this.cfg.sectorBytes,
        syncMeanMs: this.cfg.syncMeanMs,
      },
      (fn) => holder.node?.run(SOURCE_DISK, fn),
    );
    const node = new SimNode(id, disk, rate);
    holder.node = node;
    this.nodes.set(id, node);
    this.boot(node);
    return node;
  }

  private boot(node: SimNode): void {
    node.state = 'up';
    node.epoch++;
    node.held = [];
    node.heldTick = undefined;
    const epoch = node.epoch;
    const clock = this.nodeClock(node, epoch);
    const transport: Transport = { send: (m) => this.send(m) };
    try {
      const etcd = new EtcdMachine();
      const replica = new Replica<SimResult>(
        {
          id: node.id,
          initialConf: this.initialConf,
          tickMs: this.cfg.tickMs,
          electionTicks: this.cfg.electionTicks,
          heartbeatTicks: this.cfg.heartbeatTicks,
          preVote: true,
          checkQuorum: true,
          snapshotEntries: this.cfg.snapshotEntries,
          snapshotKeepEntries: 10,
          entriesPerAppendMax: this.cfg.entriesPerAppendMax,
          inflightAppendsMax: this.cfg.inflightAppendsMax,
          seed: this.root.fork(`node-${node.id}-${epoch}`).seed,
          mutants: this.mutants,
        },
        new SessionMachine(new WellFormedOnly(etcd), this.mutants),
        clock,
        transport,
        node.disk,
        {
          onStart: (id, raft) => this.inv.onStart(id, raft),
          onApply: (id, e) => {
            this.inv.onApply(id, e);
            if (e.type === 'normal' && e.data.length > 0) {
              const c = decodeSessionEntry(e.data);
              if (c) this.appliedCommands.add(`${c.session}:${c.seq}`);
            }
          },
          onSoftState: (id, s) => {
            const r = this.nodes.get(id)?.replica;
            if (r) this.inv.onSoftState(id, s, r.raft);
            const isolateMs = s.role === 'leader' ? this.armedIsolations.shift() : undefined;
            if (isolateMs !== undefined) this.isolate(id, isolateMs);
            if (s.role === 'leader' && this.armed.length > 0) {
              // Propose right after the election, before the new leader's no-op commits: the
              // moment the single-server change bug needs (thesis §4.1).
              const f = this.armed.shift();
              if (f) this.q.after(0, 14, () => this.membership(f, node));
            }
          },
          onPersistedHardState: (id, hs) => this.inv.onPersistedHardState(id, hs),
          onRestoreSnapshot: (id, s) => this.inv.onRestoreSnapshot(id, s),
        },
      );
      node.replica = replica;
      node.etcd = etcd;
    } catch (e) {
      if (e instanceof InvariantViolation) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      throw new InvariantViolation('wal-recovery', `node ${node.id} failed to restart: ${msg}`);
    }
  }

  private nodeClock(node: SimNode, epoch: number): Clock {
    const q = this.q;
    const alive = (): boolean =>
      node.epoch === epoch && node.state !== 'down' && node.state !== 'removed';
    return {
      nowMs: () => node.localNow(q.now),
      every: (intervalMs, fn) => {
        let cancelled = false;
        const loop = (): void => {
          if (cancelled || !alive()) return;
          if (node.state === 'paused')
            node.heldTick = fn; // timers coalesce while paused
          else fn();
          q.after(intervalMs / node.clockRate, 1, loop);
        };
        q.after(intervalMs / node.clockRate, 1, loop);
        return () => {
          cancelled = true;
        };
      },
      after: (delayMs, fn) => {
        let cancelled = false;
        q.after(delayMs / node.clockRate, 2, () => {
          if (!cancelled && alive()) node.run(SOURCE_TIMER, fn);
        });
        return () => {
          cancelled = true;
        };
      },
    };
  }

  private upNodes(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.state === 'up' || n.state === 'paused');
  }

  private leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.nodes.values()) {
      if (n.state !== 'up' || !n.replica) continue;
      const r = n.replica.raft;
      if (r.role === 'leader' && (!best || r.term > (best.replica as Replica<SimResult>).raft.term))
        best = n;
    }
    return best;
  }

  // ---------------------------------------------------------------- network

  private send(m: Message): void {
    if (this.partitions.isBlocked(m.from, m.to)) return;
    for (const d of deliveryDelays(this.cfg.links, this.netPrng)) {
      const tag = msgTag(m);
      this.q.after(d, tag, () => {
        if (this.partitions.isBlocked(m.from, m.to)) return;
        const dest = this.nodes.get(m.to);
        if (!dest) return;
        dest.run(m.from, () => dest.replica?.receive(m));
      });
    }
  }

  private clientNet(): ClientNet {
    const q = this.q;
    return {
      now: () => q.now,
      after: (delayMs, fn) => q.after(delayMs, 3, fn),
      nodes: () =>
        this.upNodes()
          .map((n) => n.id)
          .filter((id) => !this.removing.has(id)),
      request: (
        id: NodeId,
        session: number,
        seq: number,
        request: ClientRequest,
        reply: (r: Reply) => void,
      ) => {
        const there = 0.1 + this.netPrng.exp(0.5);
        q.after(there, 4, () => {
          const node = this.nodes.get(id);
          if (!node) return;
          const epoch = node.epoch;
          node.run(SOURCE_CLIENT, () => {
            const rep = node.replica;
            const etcd = node.etcd;
            if (!rep || !etcd || node.epoch !== epoch) return;
            const back = (r: Reply): void =>
              q.after(0.1 + this.netPrng.exp(0.5), 5, () => reply(r));
            this.serve(rep, etcd, session, seq, request, back);
          });
        });
      },
    };
  }

  private serve(
    rep: Replica<SimResult>,
    etcd: EtcdMachine,
    session: number,
    seq: number,
    request: ClientRequest,
    reply: (r: Reply) => void,
  ): void {
    if (request.type === 'range') {
      rep.read((o) => {
        if (!o.ok) {
          reply({ ok: false, leader: o.leader });
          return;
        }
        // The applied state has reached the read index: a Range of it is linearizable (§6.4).
        const response = etcd.range({ key: utf8(request.key) });
        if (isEtcdError(response))
          throw new InvariantViolation('node-assertion', `range refused: ${response.message}`);
        reply({ ok: true, result: { type: 'range', response } });
      });
      return;
    }
    const data = encodeSessionEntry({ session, seq, command: request.data });
    rep.propose(data, (o) => {
      if (!o.ok || o.result === undefined)
        reply({ ok: false, leader: o.ok ? rep.raft.leader : o.leader });
      else reply({ ok: true, result: { type: 'command', result: o.result.result } });
    });
  }

  // ---------------------------------------------------------------- faults

  private target(
    t: 'leader' | 'random',
    filter: (n: SimNode) => boolean = () => true,
  ): SimNode | undefined {
    const live = [...this.nodes.values()].filter((n) => n.state === 'up' && filter(n));
    if (live.length === 0) return undefined;
    if (t === 'leader') {
      const l = this.leader();
      if (l && filter(l)) return l;
    }
    return this.nemesisPrng.pick(live);
  }

  private apply(f: Fault): void {
    switch (f.kind) {
      case 'crash': {
        const n = this.target(f.target);
        if (!n) return;
        this.crash(n);
        this.q.after(f.downMs, 6, () => {
          if (n.state === 'down') this.boot(n);
        });
        return;
      }
      case 'pause': {
        const n = this.target(f.target);
        if (!n) return;
        n.state = 'paused';
        this.q.after(f.durationMs, 6, () => this.resume(n));
        return;
      }
      case 'partition':
        if (f.onElection) this.armedIsolations.push(f.durationMs);
        else this.partition(f.shape, f.durationMs, f.slowClockFactor);
        return;
      case 'addNode':
      case 'removeNode':
        if (f.onElection) this.armed.push(f);
        else this.membership(f, this.leader());
        return;
      case 'transferLeader': {
        const l = this.leader();
        if (!l?.replica) return;
        const others = l.replica.raft.conf().voters.filter((v) => v !== l.id);
        if (others.length > 0) l.replica.transferLeader(this.nemesisPrng.pick(others));
        return;
      }
    }
  }

  private membership(
    f: Extract<Fault, { kind: 'addNode' | 'removeNode' }>,
    l: SimNode | undefined,
  ): void {
    if (!l?.replica || l.state !== 'up' || l.replica.raft.role !== 'leader') return;
    const conf = l.replica.raft.conf();
    let proposed = false;
    if (f.kind === 'addNode') {
      if (this.nextId > 12 || conf.voters.length >= 5) return;
      const id = nodeId(this.nextId);
      if (l.replica.proposeConfChange({ type: 'addVoter', nodeId: id }) !== undefined) {
        this.nextId++;
        this.addNode(id);
        proposed = true;
      }
    } else {
      if (conf.voters.length <= 3) return;
      const n = this.target(f.target, (x) => conf.voters.includes(x.id));
      if (!n) return;
      if (l.replica.proposeConfChange({ type: 'removeNode', nodeId: n.id }) !== undefined) {
        this.removing.add(n.id);
        proposed = true;
      }
    }
    if (proposed && f.then === 'isolate') {
      this.isolate(l.id, f.thenMs ?? 0);
    } else if (proposed && f.then === 'split') {
      this.q.after(this.nemesisPrng.next() * 5, 6, () =>
        this.partition('configSplit', f.thenMs ?? 0),
      );
    }
  }

  /** Cut `id` off from every other node for `durationMs`; messages in flight are lost too. */
  private isolate(id: NodeId, durationMs: number): void {
    const ids = [...this.nodes.keys()];
    for (const o of ids) if (o !== id) this.partitions.blockBoth(id, o);
    this.q.after(durationMs, 6, () => {
      for (const o of ids) {
        if (o === id) continue;
        this.partitions.unblock(id, o);
        this.partitions.unblock(o, id);
      }
    });
  }

  private crash(n: SimNode): void {
    n.replica?.stop();
    n.replica = undefined;
    n.etcd = undefined;
    n.state = 'down';
    n.epoch++;
    n.held = [];
    n.heldTick = undefined;
    n.disk.crash();
    n.ghost = this.durableLog(n);
  }

  /** The log `n` would restart with, for the commit-safety check; undefined if unreadable. */
  private durableLog(n: SimNode): LogHolder | undefined {
    try {
      const rec = recover(n.disk.read(WAL_FILE), n.disk.read(SNAP_FILE), { mutants: this.mutants });
      return {
        id: n.id,
        log: new RaftLog(rec.snapshot, rec.entries, rec.hardState?.commit ?? logIndex(0)),
      };
    } catch {
      return undefined; // recovery will fail loudly when the node restarts
    }
  }

  private resume(n: SimNode): void {
    if (n.state !== 'paused') return;
    n.state = 'up';
    const held = n.held;
    n.held = [];
    const tick = n.heldTick;
    n.heldTick = undefined;
    if (tick) tick();
    // A resumed process drains its sockets in no particular order across connections, but in
    // order within one: interleave the sources at random, keeping each source's order.
    const queues = new Map<number, (() => void)[]>();
    for (const h of held) {
      let qq = queues.get(h.source);
      if (!qq) queues.set(h.source, (qq = []));
      qq.push(h.fn);
    }
    const sources = [...queues.values()];
    while (sources.length > 0 && n.state === 'up') {
      const i = this.nemesisPrng.int(0, sources.length);
      const src = sources[i] as (() => void)[];
      (src.shift() as () => void)();
      if (src.length === 0) sources.splice(i, 1);
    }
  }

  private partition(shape: PartitionShape, durationMs: number, slowClockFactor?: number): void {
    const ids = this.upNodes().map((n) => n.id);
    const p = this.nemesisPrng;
    const shuffled = ids
      .map((x) => ({ x, k: p.next() }))
      .sort((a, b) => a.k - b.k)
      .map((o) => o.x);
    const cut = (a: NodeId, b: NodeId): void => this.partitions.blockBoth(a, b);
    switch (shape) {
      case 'isolateOne':
      case 'isolateLeader': {
        const victim = shape === 'isolateLeader' ? (this.leader()?.id ?? shuffled[0]) : shuffled[0];
        if (victim === undefined) return;
        for (const o of ids) if (o !== victim) cut(victim, o);
        const v = this.nodes.get(victim);
        if (v && slowClockFactor !== undefined) {
          // A cut-off node whose clock also runs slow (steal time, a starved VM) believes in its
          // leadership longest: its CheckQuorum timeout is the last to fire.
          const normal = v.clockRate;
          v.setClockRate(this.q.now, normal * slowClockFactor);
          this.q.after(durationMs, 6, () => v.setClockRate(this.q.now, normal));
        }
        break;
      }
      case 'majorityMinority': {
        const k = Math.floor(ids.length / 2);
        const minority = shuffled.slice(0, k);
        const majority = shuffled.slice(k);
        for (const a of minority) for (const b of majority) cut(a, b);
        break;
      }
      case 'majoritiesRing': {
        // Each node reaches only its ring neighbours: everyone sees a majority of 3 (of 5), no two
        // the same majority (Jepsen's majorities-ring).
        const n = shuffled.length;
        for (let i = 0; i < n; i++) {
          for (let j = i + 1; j < n; j++) {
            const d = Math.min(j - i, n - (j - i));
            if (d > 1) cut(shuffled[i] as NodeId, shuffled[j] as NodeId);
          }
        }
        break;
      }
      case 'bridge': {
        // Two halves that only the bridge node (shuffled[0]) connects.
        const rest = shuffled.slice(1);
        const half = Math.ceil(rest.length / 2);
        for (const a of rest.slice(0, half)) for (const b of rest.slice(half)) cut(a, b);
        break;
      }
      case 'oneWay': {
        // The victim can send but not receive (or the reverse): an asymmetric cut.
        const victim = shuffled[0];
        if (victim === undefined) return;
        const inbound = p.chance(0.5);
        for (const o of ids) {
          if (o === victim) continue;
          if (inbound) this.partitions.block(o, victim);
          else this.partitions.block(victim, o);
        }
        break;
      }
      case 'configSplit': {
        // Split along the replication frontier of configuration changes: nodes still on the
        // leader's last committed configuration on one side, nodes holding a pending change on
        // the other.
        const raft = this.leader()?.replica?.raft;
        if (!raft) return;
        const key = (c: ConfState): string => `${c.voters.join(',')}|${c.learners.join(',')}`;
        const committed = key(raft.confAtIndex(raft.log.committed));
        const behind = ids.filter((id) => {
          const r = this.nodes.get(id)?.replica?.raft;
          return r === undefined || key(r.conf()) === committed;
        });
        const ahead = ids.filter((id) => !behind.includes(id));
        for (const a of ahead) for (const b of behind) cut(a, b);
        break;
      }
      case 'randomLinks': {
        // Each directed link fails on its own (VOPR's uniform partition, asymmetric).
        for (const a of ids)
          for (const b of ids) if (a !== b && p.chance(0.3)) this.partitions.block(a, b);
        break;
      }
      case 'flapping': {
        const [a, b] = shuffled;
        if (a === undefined || b === undefined) return;
        const period = p.int(20, 300);
        let on = false;
        let stopped = false;
        const flip = (): void => {
          if (stopped) return;
          on = !on;
          if (on) cut(a, b);
          else {
            this.partitions.unblock(a, b);
            this.partitions.unblock(b, a);
          }
          this.q.after(period, 8, flip);
        };
        flip();
        this.flapping.push(() => {
          stopped = true;
        });
        this.q.after(durationMs, 6, () => {
          stopped = true;
          this.partitions.unblock(a, b);
          this.partitions.unblock(b, a);
        });
        return;
      }
    }
    this.q.after(durationMs, 6, () => this.partitions.heal());
  }

  private heal(): void {
    // Faults waiting for an election are disarmed: after healing nothing more goes wrong.
    this.armed = [];
    this.armedIsolations = [];
    for (const stop of this.flapping) stop();
    this.flapping = [];
    this.partitions.heal();
    for (const n of this.nodes.values()) {
      if (n.state === 'paused') this.resume(n);
      if (n.state === 'down') this.boot(n);
    }
  }

  /** Stop nodes whose removal has committed: they are no longer part of the cluster. */
  private reapRemoved(): void {
    const l = this.leader();
    if (!l?.replica || this.removing.size === 0) return;
    const raft = l.replica.raft;
    const committedConf = raft.confAtIndex(raft.log.committed);
    for (const id of [...this.removing]) {
      if (committedConf.voters.includes(id) || committedConf.learners.includes(id)) continue;
      const n = this.nodes.get(id);
      if (n && n.state !== 'removed') {
        n.replica?.stop();
        n.replica = undefined;
        n.etcd = undefined;
        n.state = 'removed';
        this.inv.forget(id);
      }
      this.removing.delete(id);
    }
  }

  private liveRafts(): Raft[] {
    const out: Raft[] = [];
    for (const n of this.nodes.values())
      if ((n.state === 'up' || n.state === 'paused') && n.replica) out.push(n.replica.raft);
    return out;
  }

  // ---------------------------------------------------------------- run

  run(): RunResult {
    const cfg = this.cfg;
    const healAt = cfg.faultPhaseMs;
    const electionMs = this.electionMs();
    const leaderDeadline = healAt + 10 * electionMs;
    const finalDeadline = leaderDeadline + 20 * electionMs;
    let finalReads = 0;
    let finalDone = 0;
    let finalFailed = 0;
    let result: Omit<RunResult, 'seed' | 'eventHash' | 'events' | 'opsChecked' | 'virtualMs'> = {
      ok: true,
    };
    try {
      for (const f of this.schedule.faults)
        if (f.at < healAt) this.q.at(f.at, 9, () => this.apply(f));
      this.workload.start();
      const sweep = (): void => {
        this.inv.checkLogMatching(this.liveRafts());
        this.inv.checkCommitMonotonic(this.liveRafts());
        this.reapRemoved();
        if (this.q.now < finalDeadline) this.q.after(100, 10, sweep);
      };
      this.q.after(100, 10, sweep);
      this.q.at(healAt, 11, () => this.heal());
      const watchLeader = (): void => {
        const l = this.leader();
        const raft = l?.replica?.raft;
        if (raft && this.followers(raft) > raft.conf().voters.length / 2) {
          this.leaderAfterHealMs = this.q.now - healAt;
          return;
        }
        if (this.q.now >= leaderDeadline) {
          throw new InvariantViolation(
            'liveness',
            `no leader followed by a majority within 10 election timeouts after healing`,
          );
        }
        this.q.after(5, 12, watchLeader);
      };
      this.q.at(healAt, 12, watchLeader);
      // After the leader deadline, fresh clients read every key; each must finish in 20 timeouts.
      this.q.at(leaderDeadline, 13, () => {
        for (let k = 0; k < cfg.keys; k++) {
          const client = this.workload.newClient();
          finalReads++;
          this.workload.run(client, this.workload.getOp(k), 20 * electionMs - 50, (ok) => {
            if (ok) finalDone++;
            else finalFailed++;
          });
        }
      });
      const eventsMax = this.eventsMax;
      for (;;) {
        const ev = this.q.pop();
        if (!ev) break;
        if (ev.at > finalDeadline + electionMs) break;
        this.hash = fnvNumber(fnvNumber(this.hash, Math.round(ev.at * 1000)), ev.tag);
        this.events++;
        ev.fn();
        if (this.events >= eventsMax)
          throw new InvariantViolation('liveness', `run exceeded ${eventsMax} events`);
        if (finalReads > 0 && finalDone + finalFailed === finalReads && this.workload.idle) break;
      }
      if (finalFailed > 0 || finalDone < finalReads) {
        throw new InvariantViolation(
          'liveness',
          `${finalReads - finalDone} of ${finalReads} final reads did not finish within 20 election timeouts after the leader deadline`,
        );
      }
      this.quiesce();
      this.inv.checkLogMatching(this.liveRafts());
      // Durability: every write acknowledged to a client was committed (some node applied it);
      // state-machine and commit safety, checked throughout, keep it at its index for good.
      for (const w of this.workload.acked) {
        if (!this.appliedCommands.has(w)) {
          throw new InvariantViolation(
            'durability',
            `acknowledged write ${w} is not in the committed log`,
          );
        }
      }
      this.checkConvergence();
      const lin = checkKv(this.workload.history, { timeoutMs: 20_000 });
      if (lin.verdict === 'illegal') {
        throw new InvariantViolation(
          'linearizability',
          `history of ${this.workload.history.length} ops is not linearizable${lin.illegalKey !== undefined ? ` (key ${lin.illegalKey})` : ''}${lin.detail ? `: ${lin.detail}` : ''}`,
        );
      }
    } catch (e) {
      result = classify(e);
    }
    return {
      seed: this.schedule.seed,
      ...result,
      eventHash: this.hash,
      events: this.events,
      opsChecked: this.workload.history.length,
      virtualMs: Math.round(this.q.now),
      ...(this.leaderAfterHealMs !== undefined
        ? { leaderAfterHealMs: this.leaderAfterHealMs }
        : {}),
    };
  }

  /**
   * Let replication finish so every live member catches up with the leader. A follower may be far
   * behind (one entry per append, lossy links), so this waits up to 100 election timeouts,
   * checking every 10 ms of virtual time.
   */
  private quiesce(): void {
    const until = this.q.now + 100 * this.electionMs();
    let nextCheck = this.q.now;
    for (;;) {
      const t = this.q.peekTime();
      if (t === undefined || t > until) break;
      if (t >= nextCheck) {
        if (this.caughtUp()) break;
        nextCheck = t + 10;
      }
      const ev = this.q.pop();
      if (!ev) break;
      this.hash = fnvNumber(fnvNumber(this.hash, Math.round(ev.at * 1000)), ev.tag);
      this.events++;
      ev.fn();
      if (this.events >= this.eventsMax) {
        throw new InvariantViolation(
          'liveness',
          `run exceeded ${this.eventsMax} events while catching up`,
        );
      }
    }
  }

  /** Voters (the leader included) that are up and know `raft` as their leader in its term. */
  private followers(raft: Raft): number {
    let n = 0;
    for (const id of raft.conf().voters) {
      const r = this.nodes.get(id)?.replica?.raft;
      if (r && this.nodes.get(id)?.state === 'up' && r.term === raft.term && r.leader === raft.id)
        n++;
    }
    return n;
  }

  private caughtUp(): boolean {
    const raft = this.leader()?.replica?.raft;
    if (!raft) return false;
    const conf = raft.conf();
    for (const id of [...conf.voters, ...conf.learners]) {
      const n = this.nodes.get(id);
      if (n?.replica && n.state === 'up' && n.replica.raft.log.applied < raft.log.committed)
        return false;
    }
    return true;
  }

  /** Live members of the final configuration have applied the same log and hold the same state. */
  private checkConvergence(): void {
    const l = this.leader();
    if (!l?.replica) throw new InvariantViolation('liveness', 'no leader at the end of the run');
    const conf = l.replica.raft.conf();
    const members = [...conf.voters, ...conf.learners];
    const target = l.replica.raft.log.committed;
    for (const id of members) {
      const n = this.nodes.get(id);
      if (!n?.replica || n.state !== 'up') continue;
      const r = n.replica.raft;
      if (r.log.applied < target) {
        const pr = l.replica.raft.progressView().get(id);
        throw new InvariantViolation(
          'liveness',
          `node ${id} applied only ${r.log.applied} of ${target} after quiescing (${r.describe()}; leader ${l.replica.raft.describe()} sees match=${pr?.match} next=${pr?.next} ${pr?.state})`,
        );
      }
    }
    const digests = new Map<number, number>();
    for (const id of members) {
      const n = this.nodes.get(id);
      if (!n?.replica || n.state !== 'up') continue;
      const applied = n.replica.raft.log.applied;
      const d = n.replica.stateMachine.digest();
      const prev = digests.get(applied);
      if (prev !== undefined && prev !== d)
        throw new InvariantViolation(
          'convergence',
          `nodes at applied index ${applied} hold different states`,
        );
      digests.set(applied, d);
    }
  }
}

function classify(e: unknown): { ok: false; invariant: InvariantName; message: string } {
  if (e instanceof InvariantViolation)
    return { ok: false, invariant: e.invariant, message: e.message };
  if (e instanceof CorruptWalError)
    return { ok: false, invariant: 'wal-recovery', message: e.message };
  if (e instanceof AssertionError)
    return { ok: false, invariant: 'node-assertion', message: e.message };
  const msg = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return { ok: false, invariant: 'node-assertion', message: msg };
}

function msgTag(m: Message): number {
  return (
    100 + MESSAGE_TYPE_CODES[m.type] * 1_000_000 + m.from * 10_000 + m.to * 100 + (m.term % 100)
  );
}
