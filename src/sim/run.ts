// One simulated run: the production member (src/replica/member) on a virtual clock, a seeded
// network and seeded disks, faults from the schedule, clients that use the members' real client
// API (api-channel.ts) the way etcd clients do, invariants checked on every event, and at the end
// linearizability, the lease contract, lock exclusion, liveness after healing and convergence.
//
// The member's code is asynchronous (promises), so after every event the loop lets every promise
// continuation run before the next event: virtual time stands still while they do, and their
// order is fixed by the code, so a seed replays exactly.
import { AssertionError } from '../core/base/assert.js';
import { fnvNumber, FNV_OFFSET } from '../core/base/hash.js';
import type { Mutants } from '../core/base/mutants.js';
import { NO_MUTANTS } from '../core/base/mutants.js';
import { prng, type Prng } from '../core/base/prng.js';
import { logIndex, nodeId, type NodeId } from '../core/base/units.js';
import { RaftLog } from '../core/raft/log.js';
import type { Raft } from '../core/raft/raft.js';
import { MESSAGE_TYPE_CODES, type ConfState, type Message } from '../core/raft/types.js';
import type { Clock, Transport } from '../replica/io.js';
import { Member } from '../replica/member/member.js';
import type { InitialMember, MemberLog } from '../replica/member/member-config.js';
import { wellFormedEntry } from '../replica/member/server-machine.js';
import {
  CorruptWalError,
  recover,
  SNAP_FILE,
  unsyncedEntriesFrom,
  WAL_FILE,
} from '../replica/wal.js';
import { AvailabilityWatch } from './availability.js';
import { DurableLogs } from './durable-logs.js';
import { DEFAULT_ETCD_LIMITS } from '../core/state/etcd-limits.js';
import { DEFAULT_CLIENT_API_CONFIG } from '../server/api/api-config.js';
import { ApiChannel, MemberApi } from './api-channel.js';
import { SimDisk } from './disk.js';
import { EventQueue } from './events.js';
import { EventReference } from './event-reference.js';
import { KeyspaceCheck } from './keyspace-check.js';
import { KeyspaceWorkload } from './keyspace-workload.js';
import {
  Invariants,
  InvariantViolation,
  type InvariantName,
  type LogHolder,
} from './invariants.js';
import { KvWorkload } from './kv-workload.js';
import type { LeaseRecord } from './lease-session.js';
import { LeaseWorkload } from './lease-workload.js';
import { LockWorkload } from './lock-workload.js';
import {
  checkDurability,
  checkLeaseKeys,
  checkLeases,
  checkLinearizability,
  checkLocks,
  checkWatches,
  UnlockArrivals,
  WriteDeadlines,
} from './run-checks.js';
import { WatchWorkload } from './watch-workload.js';
import { deliveryDelays, Partitions } from './network.js';
import { planPartition } from './partition-shapes.js';
import { PeerLinks } from './peer-links.js';
import { type Fault, type PartitionShape, type Schedule, type Starvation } from './schedule.js';
import type { ClientEnv } from './sim-client.js';
import { SimNode, type Stamp } from './sim-node.js';

export interface RunResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly invariant?: InvariantName;
  readonly message?: string;
  /** Rolling hash of every event run: equal for equal (seed, schedule, code). */
  readonly eventHash: number;
  readonly events: number;
  /** Operations in the linearizability history. */
  readonly opsChecked: number;
  /** Lease renewals and lock holds the authority checkers judged (0 when clocks were wild). */
  readonly renewalsChecked: number;
  readonly holdsChecked: number;
  /** Applied entries whose answers were compared with the naive key space's. */
  readonly answersChecked: number;
  readonly virtualMs: number;
  readonly leaderAfterHealMs?: number;
}

export interface RunOptions {
  readonly mutants?: Mutants;
  /** Stop the run at this many events (a runaway guard, not a tuning knob). */
  readonly eventsMax?: number;
}

/** A configuration as a comparable string. */
function confKey(c: ConfState): string {
  return `${c.voters.join(',')}|${c.learners.join(',')}`;
}

/** Messages that answer another: the acknowledgements a nemesis reorders and duplicates. */
const RESPONSES: ReadonlySet<Message['type']> = new Set([
  'appResp',
  'heartbeatResp',
  'voteResp',
  'preVoteResp',
]);

/** Held-event sources besides peers (whose source is their node id). */
const SOURCE_CLIENT = -1;
const SOURCE_DISK = -2;
const SOURCE_TIMER = -3;
const SOURCE_FRAMES = -4;

/** The simulated cluster's ID (members of one run all agree on it). */
const SIM_CLUSTER_ID = 0x51n;
/** Request timeout of a member, in election timeouts (production: 7 s over 1 s). */
const REQUEST_TIMEOUT_ELECTIONS = 7;
/** A forwarding frame waits on a cut link at most this many election timeouts (production 5 s). */
const PEER_WAIT_ELECTIONS = 5;
/** A watch stream that says nothing for this many election timeouts is resumed elsewhere. */
const WATCH_QUIET_ELECTIONS = 10;
/** A member's clock at a boot reads a random value below this (a new process, another host). */
const CLOCK_ORIGIN_MAX_MS = 1_000_000;
/**
 * A majority up and connected among itself must be served by a leader within this many election
 * timeouts, while faults are active (PreVote, then a vote, each a round that loss may repeat).
 */
const AVAILABILITY_ELECTIONS = 15;
/** A Lock call waits for its turn at most this many election timeouts. */
const LOCK_WAIT_ELECTIONS = 30;

export function runSchedule(schedule: Schedule, opts: RunOptions = {}): Promise<RunResult> {
  return new Simulation(schedule, opts).run();
}

/** Let every promise continuation that is ready run (all microtasks drain before a macrotask). */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

class Simulation {
  readonly q = new EventQueue();
  private readonly cfg: Schedule['config'];
  private readonly root: Prng;
  private readonly netPrng: Prng;
  private readonly nemesisPrng: Prng;
  /** Draws of the late-message nemeses (a stream of their own, so others stay as they were). */
  private readonly latePrng: Prng;
  private readonly partitions = new Partitions();
  private readonly links: PeerLinks;
  private readonly nodes = new Map<NodeId, SimNode>();
  private readonly inv = new Invariants();
  private readonly durableLogs = new DurableLogs();
  private readonly mutants: Mutants;
  private readonly initialConf: ConfState;
  private readonly initialMembers: ReadonlyMap<NodeId, InitialMember>;
  private readonly channel: ApiChannel;
  private readonly reference: EventReference;
  private readonly kv: KvWorkload;
  private readonly leaseRecord: LeaseRecord = { renewals: [], revocations: [] };
  private readonly leaseHolders: LeaseWorkload;
  private readonly lockers: LockWorkload;
  private readonly electors: LockWorkload;
  private readonly watchers: WatchWorkload;
  private readonly explorers: KeyspaceWorkload;
  private readonly writeDeadlines: WriteDeadlines;
  private readonly unlockArrivals = new UnlockArrivals();
  private readonly keyspace = new KeyspaceCheck(DEFAULT_ETCD_LIMITS);
  private hash = FNV_OFFSET;
  private events = 0;
  private nextId: number;
  private removing = new Set<NodeId>();
  /** Isolations (their durations and starvation) waiting for the next election. */
  private armedIsolations: { durationMs: number; starve: Starvation | undefined }[] = [];
  /** Membership faults waiting for the next election. */
  private armed: Extract<Fault, { kind: 'addNode' | 'removeNode' }>[] = [];
  private stopStarving: (() => void)[] = [];
  /** Members whose links are slow, and by how much (ms). */
  private readonly slowed = new Map<NodeId, number>();
  /** Members being starved, until when (they take no fair part in elections meanwhile). */
  private readonly starvedUntil = new Map<NodeId, number>();
  /** Compact faults waiting for the next configuration change the leader proposes. */
  private compactsAtConfChange = 0;
  private leaderAfterHealMs: number | undefined;
  /** The first bug a member reported in its log or an escaped rejection: fails the run. */
  private internalError: string | undefined;
  /** The first violation or assertion thrown inside a member, wherever it was caught. */
  private thrown: Error | undefined;

  private get eventsMax(): number {
    return this.opts.eventsMax ?? 5_000_000;
  }

  constructor(
    private readonly schedule: Schedule,
    private readonly opts: RunOptions,
  ) {
    this.cfg = schedule.config;
    this.root = prng(schedule.seed);
    this.netPrng = this.root.fork('net');
    this.nemesisPrng = this.root.fork('nemesis');
    this.latePrng = this.root.fork('late-delivery');
    this.mutants = opts.mutants ?? NO_MUTANTS;
    const voters = Array.from({ length: this.cfg.nodes }, (_, i) => nodeId(i + 1));
    this.initialConf = { voters, learners: [] };
    this.initialMembers = new Map(voters.map((id) => [id, this.initialMember(id)]));
    this.nextId = this.cfg.nodes + 1;
    this.links = new PeerLinks(
      this.q,
      this.root.fork('links'),
      this.partitions,
      // The transport's bound on a frame waiting on a cut link (production: 5 s to a 1 s
      // election timeout).
      {
        links: this.cfg.links,
        waitMaxMs: PEER_WAIT_ELECTIONS * this.electionMs(),
        extraDelayMs: (from, to) => this.slowness(from, to),
      },
      (from, to, frame, stamp) => this.deliverFrame(from, to, frame, stamp),
    );
    this.partitions.onHeal = () => this.links.pump();
    this.channel = new ApiChannel({
      q: this.q,
      prng: this.root.fork('clients-net'),
      extraDelayMeanMs: this.cfg.clientDelayMeanMs,
      api: (id) => {
        const n = this.nodes.get(id);
        return n?.running && n.api ? { api: n.api, epoch: n.epoch } : undefined;
      },
      onMember: (id, epoch, fn, lost) => {
        const n = this.nodes.get(id);
        if (!n || n.epoch !== epoch || !n.running) lost();
        else n.run(SOURCE_CLIENT, fn, lost);
      },
      onDeliver: (id, path, request) => {
        const n = this.nodes.get(id);
        if (n) this.writeDeadlines.note(n, path, request, this.q.now);
        this.unlockArrivals.note(path, request, this.q.now);
      },
    });
    this.reference = new EventReference(() => this.q.now);
    this.writeDeadlines = new WriteDeadlines(REQUEST_TIMEOUT_ELECTIONS * this.electionMs());
    const electionMs = this.electionMs();
    const stopAtMs = this.cfg.faultPhaseMs + 1000;
    const env: ClientEnv = {
      q: this.q,
      channel: this.channel,
      members: () =>
        [...this.nodes.values()]
          .filter((n) => n.state !== 'removed' && !this.removing.has(n.id))
          .map((n) => n.id),
      stopAtMs,
    };
    this.kv = new KvWorkload(env, this.root.fork('workload'), {
      clients: this.cfg.clients,
      readers: this.cfg.readers,
      keys: this.cfg.keys,
      opTimeoutMs: this.cfg.opTimeoutMs,
      attemptTimeoutMs: this.cfg.attemptTimeoutMs,
      patientClients: this.cfg.patientClients ?? 0,
      patientWaitMs: this.cfg.patientWaitMs ?? this.cfg.opTimeoutMs,
    });
    const holderOpts = {
      ttlSeconds: this.cfg.leaseTtlSeconds,
      opTimeoutMs: this.cfg.opTimeoutMs,
      attemptTimeoutMs: this.cfg.attemptTimeoutMs,
      mutants: this.mutants,
    };
    this.leaseHolders = new LeaseWorkload(
      env,
      this.root.fork('leases'),
      this.leaseRecord,
      { clients: this.cfg.leaseClients, ...holderOpts },
      1000,
    );
    const lockWaitMs = LOCK_WAIT_ELECTIONS * electionMs;
    this.lockers = new LockWorkload(
      env,
      this.root.fork('locks'),
      this.leaseRecord,
      {
        service: 'lock',
        clients: this.cfg.lockClients,
        locks: this.cfg.locks,
        lockWaitMs,
        ...holderOpts,
      },
      2000,
    );
    this.electors = new LockWorkload(
      env,
      this.root.fork('elections'),
      this.leaseRecord,
      {
        service: 'election',
        clients: this.cfg.electionClients,
        locks: this.cfg.locks,
        lockWaitMs,
        ...holderOpts,
      },
      3000,
    );
    this.explorers = new KeyspaceWorkload(env, this.root.fork('keyspace'), {
      clients: this.cfg.keyspaceClients ?? 0,
      opTimeoutMs: this.cfg.opTimeoutMs,
      attemptTimeoutMs: this.cfg.attemptTimeoutMs,
    });
    this.watchers = new WatchWorkload(env, this.root.fork('watchers'), {
      watchers: this.cfg.watchers,
      quietMs: WATCH_QUIET_ELECTIONS * electionMs,
    });
    this.inv.liveRafts = () => this.liveRafts();
    this.inv.initialConf = this.initialConf;
    this.inv.unsyncedFrom = (id) => {
      const disk = this.nodes.get(id)?.disk;
      return disk ? unsyncedEntriesFrom(disk.unsynced(WAL_FILE)) : undefined;
    };
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

  private initialMember(id: NodeId): InitialMember {
    return { name: `n${id}`, peerUrls: [`http://n${id}.sim:2380`] };
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

  private memberLog(node: SimNode): MemberLog {
    return {
      info: () => {},
      warn: () => {},
      error: (obj, msg) =>
        this.reportInternal(
          `member ${node.id}: ${msg} ${JSON.stringify(obj)}`,
          (obj as { err?: unknown }).err,
        ),
    };
  }

  private reportInternal(what: string, err?: unknown): void {
    if (err instanceof InvariantViolation || err instanceof AssertionError) this.thrown ??= err;
    this.internalError ??= what;
  }

  /** Run an observer; a violation it throws fails the run even if the member's code catches it. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.thrown ??= e instanceof Error ? e : new Error(String(e));
      throw e;
    }
  }

  private boot(node: SimNode): void {
    node.state = 'up';
    node.epoch++;
    node.held = [];
    node.heldTicks.clear();
    node.heard.clear();
    const epoch = node.epoch;
    // A new process: its monotonic clock has nothing to do with any other member's.
    node.restartClock(this.q.now, this.nemesisPrng.int(0, CLOCK_ORIGIN_MAX_MS));
    const clock = this.nodeClock(node, epoch);
    const transport: Transport = { send: (m) => this.send(m, node) };
    const electionMs = this.electionMs();
    try {
      const member = new Member(
        {
          name: `n${node.id}`,
          id: node.id,
          clusterId: () => SIM_CLUSTER_ID,
          initialConf: this.initialConf,
          initialMembers: this.initialMembers,
          peerUrls: this.initialMember(node.id).peerUrls,
          advertiseClientUrls: [`http://n${node.id}.sim:2379`],
          heartbeatMs: this.cfg.tickMs,
          electionMs,
          snapshotCount: this.cfg.snapshotEntries,
          snapshotKeepEntries: 10,
          requestTimeoutMs: REQUEST_TIMEOUT_ELECTIONS * electionMs,
          seed: this.root.fork(`node-${node.id}-${epoch}`).seed,
          entriesPerAppendMax: this.cfg.entriesPerAppendMax,
          inflightAppendsMax: this.cfg.inflightAppendsMax,
          mutants: this.mutants,
        },
        {
          clock,
          transport,
          peers: {
            send: (to, frame) => this.links.send(node.id, to, frame, node.stamp(this.q.now)),
            heard: (peer) => node.heard.get(peer),
          },
          disk: node.disk,
          log: this.memberLog(node),
          observer: {
            onStart: (id, raft) =>
              this.guard(() => {
                this.durableLogs.onStart(id, raft);
                this.inv.onStart(id, raft);
              }),
            onPropose: (id, index, t, data) =>
              this.guard(() => {
                this.inv.onPropose(id, index, t, data);
                if (this.clocksNeverSlow()) this.writeDeadlines.checkProposal(id, data, this.q.now);
              }),
            onWrite: (id, entries) => this.guard(() => this.durableLogs.onWrite(id, entries)),
            onPersisted: (id, entries, snapshotIndex) =>
              this.guard(() => this.durableLogs.onPersisted(id, entries, snapshotIndex)),
            onAnswered: (id, e) => this.guard(() => this.inv.onAnswered(id, e)),
            onApply: (id, e) =>
              this.guard(() => {
                this.inv.onApply(id, e);
                if (e.type === 'normal' && !wellFormedEntry(e.data))
                  throw new AssertionError(`entry ${e.index} is not a well-formed command`);
              }),
            onApplied: (id, e, result) => this.guard(() => this.keyspace.onApplied(id, e, result)),
            onSoftState: (id, s) =>
              this.guard(() => {
                const raft = this.nodes.get(id)?.member?.replica.raft;
                if (raft) this.inv.onSoftState(id, s, raft);
                const isolation = s.role === 'leader' ? this.armedIsolations.shift() : undefined;
                if (isolation !== undefined)
                  this.isolate(id, isolation.durationMs, isolation.starve);
                if (s.role === 'leader' && this.armed.length > 0) {
                  // Propose right after the election, before the new leader's no-op commits: the
                  // moment the single-server change bug needs (thesis §4.1).
                  const f = this.armed.shift();
                  if (f) this.q.after(0, 14, () => this.membership(f, node));
                }
              }),
            onPersistedHardState: (id, hs) =>
              this.guard(() => this.inv.onPersistedHardState(id, hs)),
            onRestoreSnapshot: (id, s) => this.guard(() => this.inv.onRestoreSnapshot(id, s)),
          },
        },
      );
      node.member = member;
      node.api = new MemberApi(
        member,
        {
          info: () => {},
          warn: () => {},
          error: (obj, msg) =>
            this.reportInternal(
              `member ${node.id} API: ${msg}: ${String((obj as { err?: unknown }).err)}`,
              (obj as { err?: unknown }).err,
            ),
        },
        { ...DEFAULT_CLIENT_API_CONFIG, mutants: this.mutants },
      );
      node.detach = this.reference.attach(node.id, member.machine);
    } catch (e) {
      if (e instanceof InvariantViolation) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      throw new InvariantViolation('wal-recovery', `node ${node.id} failed to restart: ${msg}`);
    }
  }

  private nodeClock(node: SimNode, epoch: number): Clock {
    const q = this.q;
    const alive = (): boolean => node.epoch === epoch && node.running;
    return {
      nowMs: () => node.localNow(q.now),
      every: (intervalMs, fn) => {
        let cancelled = false;
        const loop = (): void => {
          if (cancelled || !alive()) return;
          // Periodic timers coalesce while paused: each fires once, late, on resume.
          if (node.state === 'paused') node.heldTicks.add(fn);
          else fn();
          q.after(intervalMs / node.clockRate, 1, loop);
        };
        q.after(intervalMs / node.clockRate, 1, loop);
        return () => {
          cancelled = true;
          node.heldTicks.delete(fn);
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

  private leader(): SimNode | undefined {
    let best: SimNode | undefined;
    let bestTerm = -1;
    for (const n of this.nodes.values()) {
      if (n.state !== 'up' || !n.member) continue;
      const r = n.member.replica.raft;
      if (r.role === 'leader' && r.term > bestTerm) {
        best = n;
        bestTerm = r.term;
      }
    }
    return best;
  }

  // ---------------------------------------------------------------- network

  /** Extra delay on the link between two members (slowLinks faults). */
  private slowness(a: NodeId, b: NodeId): number {
    return this.slowed.size === 0 ? 0 : Math.max(this.slowed.get(a) ?? 0, this.slowed.get(b) ?? 0);
  }

  private send(m: Message, from: SimNode): void {
    this.guard(() => this.inv.onSend(m));
    if (this.partitions.isBlocked(m.from, m.to)) return;
    const stamp = from.stamp(this.q.now);
    const extra = this.slowness(m.from, m.to);
    for (const d of this.delays(m)) {
      const tag = msgTag(m);
      this.q.after(d + extra, tag, () => {
        if (this.partitions.isBlocked(m.from, m.to)) return;
        const dest = this.nodes.get(m.to);
        if (!dest) return;
        dest.run(m.from, () => {
          dest.heardFrom(m.from, stamp, dest.localNow(this.q.now));
          const member = dest.member;
          if (!member) return;
          const commitBefore = member.replica.raft.log.committed;
          member.receiveMessage(m);
          const raft = member.replica.raft;
          this.guard(() => this.inv.onMessageHandled(dest.id, m, commitBefore, raft));
        });
      });
    }
  }

  /**
   * When copies of `m` arrive: the link's own delays, plus the nemeses of late and reordered
   * messages. A late copy arrives up to `lateCopyMaxMs` later (terms late: a stale vote, append
   * or acknowledgement from a leader long gone); an acknowledgement may be duplicated with its
   * copies spread over two election timeouts, so older ones land after newer ones.
   */
  private delays(m: Message): number[] {
    const out = deliveryDelays(this.cfg.links, this.netPrng);
    const late = this.cfg.lateCopyProbability ?? 0;
    if (late > 0 && this.latePrng.chance(late))
      out.push(this.latePrng.next() * (this.cfg.lateCopyMaxMs ?? 0));
    const chaos = this.cfg.ackChaosProbability ?? 0;
    if (chaos > 0 && RESPONSES.has(m.type) && this.latePrng.chance(chaos)) {
      const spreadMs = 2 * this.electionMs();
      out.push(this.latePrng.next() * spreadMs, this.latePrng.next() * spreadMs);
    }
    return out;
  }

  private deliverFrame(from: NodeId, to: NodeId, frame: Uint8Array, stamp: Stamp): void {
    const dest = this.nodes.get(to);
    if (!dest) return;
    const epoch = dest.epoch;
    dest.run(SOURCE_FRAMES - from, () => {
      if (dest.epoch !== epoch) return;
      dest.heardFrom(from, stamp, dest.localNow(this.q.now));
      dest.member?.receiveFrame(from, frame);
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
        const down = (): void => {
          if (n.state !== 'up') return;
          this.crash(n);
          this.q.after(f.downMs, 6, () => {
            if (n.state === 'down') this.boot(n);
          });
        };
        if (f.window === undefined) down();
        else this.crashInWindow(n, f.window, down);
        return;
      }
      case 'compact': {
        if (f.atConfChange) this.compactsAtConfChange++;
        else this.target(f.target)?.member?.replica.snapshotNow();
        return;
      }
      case 'pause': {
        const n = this.target(f.target);
        if (!n) return;
        n.state = 'paused';
        this.q.after(f.durationMs, 6, () => this.resume(n));
        return;
      }
      case 'starve': {
        const n = this.target(f.target);
        if (n) this.starve(n, f.durationMs, f.starve);
        return;
      }
      case 'slowLinks': {
        const n = this.target(f.target);
        if (!n) return;
        this.slowed.set(n.id, f.delayMs);
        this.q.after(f.durationMs, 6, () => this.slowed.delete(n.id));
        return;
      }
      case 'partition':
        if (f.onElection) this.armedIsolations.push({ durationMs: f.durationMs, starve: f.starve });
        else this.partition(f.shape, f.durationMs, f.slowClockFactor, f.starve);
        return;
      case 'addNode':
      case 'removeNode':
        if (f.onElection) this.armed.push(f);
        else this.membership(f, this.leader());
        return;
      case 'transferLeader': {
        const l = this.leader();
        const replica = l?.member?.replica;
        if (!l || !replica) return;
        const others = replica.raft.conf().voters.filter((v) => v !== l.id);
        if (others.length > 0) replica.transferLeader(this.nemesisPrng.pick(others));
        return;
      }
    }
  }

  /**
   * Crash `n` inside a durability window: at its next sync, before the sync completes (what it
   * wrote, and as leader sent, is not yet durable), or between the two replaces of a snapshot it
   * takes now. Disarmed after a few election timeouts if the window never opens.
   */
  private crashInWindow(n: SimNode, window: 'sync' | 'between', down: () => void): void {
    const epoch = n.epoch;
    const disarm = (): void => {
      n.disk.onSyncIssued = undefined;
      n.disk.onReplaced = undefined;
    };
    const fire = (): void => {
      disarm();
      // Right after the disk call returns, before any completion (which takes at least 50 µs).
      this.q.after(0.01, 6, () => {
        if (n.epoch === epoch) down();
      });
    };
    if (window === 'sync') n.disk.onSyncIssued = fire;
    else {
      n.disk.onReplaced = (name) => {
        if (name === SNAP_FILE) fire();
      };
      n.member?.replica.snapshotNow();
    }
    this.q.after(5 * this.electionMs(), 6, () => {
      if (n.epoch === epoch) disarm();
    });
  }

  /** Stop `n` for `stopMs`, let it run for `runMs`, again, for `durationMs`. */
  private starve(n: SimNode, durationMs: number, s: Starvation): void {
    const until = this.q.now + durationMs;
    this.starvedUntil.set(n.id, Math.max(until, this.starvedUntil.get(n.id) ?? 0));
    let stopped = false;
    const epoch = n.epoch;
    const cycle = (): void => {
      if (stopped || n.epoch !== epoch || n.state !== 'up' || this.q.now >= until) return;
      n.state = 'paused';
      this.q.after(s.stopMs, 6, () => {
        if (n.epoch !== epoch) return;
        this.resume(n);
        this.q.after(s.runMs, 6, cycle);
      });
    };
    cycle();
    this.stopStarving.push(() => {
      stopped = true;
    });
  }

  private membership(
    f: Extract<Fault, { kind: 'addNode' | 'removeNode' }>,
    l: SimNode | undefined,
  ): void {
    const replica = l?.member?.replica;
    if (!l || !replica || l.state !== 'up' || replica.raft.role !== 'leader') return;
    const conf = replica.raft.conf();
    let proposed = false;
    if (f.kind === 'addNode') {
      if (this.nextId > 12 || conf.voters.length >= 5) return;
      const id = nodeId(this.nextId);
      if (replica.proposeConfChange({ type: 'addVoter', nodeId: id }) !== undefined) {
        this.nextId++;
        this.addNode(id);
        proposed = true;
      }
    } else {
      if (conf.voters.length <= 3) return;
      const n = this.target(f.target, (x) => conf.voters.includes(x.id));
      if (!n) return;
      if (replica.proposeConfChange({ type: 'removeNode', nodeId: n.id }) !== undefined) {
        this.removing.add(n.id);
        proposed = true;
      }
    }
    if (proposed && this.compactsAtConfChange > 0) {
      // The change is appended, not applied: a snapshot now is taken below it.
      this.compactsAtConfChange--;
      replica.snapshotNow();
    }
    if (proposed && f.then === 'isolate') {
      this.isolate(l.id, f.thenMs ?? 0, undefined);
    } else if (proposed && f.then === 'split') {
      this.q.after(this.nemesisPrng.next() * 5, 6, () =>
        this.partition('configSplit', f.thenMs ?? 0, undefined, undefined),
      );
    }
  }

  /** Cut `id` off from every other node for `durationMs`; messages in flight are lost too. */
  private isolate(id: NodeId, durationMs: number, starve: Starvation | undefined): void {
    const ids = [...this.nodes.keys()];
    for (const o of ids) if (o !== id) this.partitions.blockBoth(id, o);
    const v = this.nodes.get(id);
    if (v && starve) this.starve(v, durationMs, starve);
    this.q.after(durationMs, 6, () => {
      for (const o of ids) {
        if (o === id) continue;
        this.partitions.unblock(id, o);
        this.partitions.unblock(o, id);
      }
    });
  }

  private crash(n: SimNode): void {
    this.guard(() => this.durableLogs.onCrash(n.id, n.member?.replica.raft));
    n.member?.halt();
    n.api?.crash();
    n.detach?.();
    n.member = undefined;
    n.api = undefined;
    n.detach = undefined;
    n.state = 'down';
    n.epoch++;
    const held = n.held;
    n.held = [];
    for (const h of held) h.lost?.();
    n.heldTicks.clear();
    n.disk.crash();
    this.links.crash(n.id);
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
    const ticks = [...n.heldTicks];
    n.heldTicks.clear();
    // A resumed Node process usually reads its sockets before its timers fire (libuv runs the
    // poll phase first after a stall), but not always: the order is drawn.
    const ticksFirst = this.nemesisPrng.chance(0.3);
    if (ticksFirst) for (const t of ticks) t();
    // It drains its sockets in no particular order across connections, but in order within one:
    // interleave the sources at random, keeping each source's order.
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
    if (!ticksFirst && n.state === 'up') for (const t of ticks) t();
  }

  private partition(
    shape: PartitionShape,
    durationMs: number,
    slowClockFactor: number | undefined,
    starve: Starvation | undefined,
  ): void {
    const ids = [...this.nodes.values()].filter((n) => n.running).map((n) => n.id);
    const plan = planPartition(
      shape,
      {
        ids,
        leader: this.leader()?.id,
        aheadOfCommittedConf: () => this.aheadOfCommittedConf(ids),
      },
      this.nemesisPrng,
    );
    if (plan.kind === 'none') return;
    if (plan.kind === 'flap') {
      this.flap(plan.links, plan.periodMs, durationMs);
      return;
    }
    for (const [a, b] of plan.links) this.partitions.block(a, b);
    const v = plan.victim === undefined ? undefined : this.nodes.get(plan.victim);
    if (v && slowClockFactor !== undefined) {
      // A cut-off node whose clock also runs slow (steal time, a starved VM) believes in its
      // leadership longest: its CheckQuorum timeout is the last to fire.
      const normal = v.clockRate;
      v.setClockRate(this.q.now, normal * slowClockFactor);
      this.q.after(durationMs, 6, () => v.setClockRate(this.q.now, normal));
    }
    if (v && starve) this.starve(v, durationMs, starve);
    this.q.after(durationMs, 6, () => this.partitions.heal());
  }

  /** Of `ids`, the members whose configuration the leader has not committed yet. */
  private aheadOfCommittedConf(ids: readonly NodeId[]): NodeId[] | undefined {
    const raft = this.leader()?.member?.replica.raft;
    if (!raft) return undefined;
    const committed = confKey(raft.confAtIndex(raft.log.committed));
    return ids.filter((id) => {
      const r = this.nodes.get(id)?.member?.replica.raft;
      return r !== undefined && confKey(r.conf()) !== committed;
    });
  }

  /** Cut `links` (both ways) and restore them by turns every `periodMs`, for `durationMs`. */
  private flap(links: readonly [NodeId, NodeId][], periodMs: number, durationMs: number): void {
    let on = false;
    let stopped = false;
    const restore = (): void => {
      for (const [x, y] of links) {
        this.partitions.unblock(x, y);
        this.partitions.unblock(y, x);
      }
    };
    const flip = (): void => {
      if (stopped) return;
      on = !on;
      if (on) for (const [x, y] of links) this.partitions.blockBoth(x, y);
      else restore();
      this.q.after(periodMs, 8, flip);
    };
    flip();
    this.stopStarving.push(() => {
      stopped = true;
    });
    this.q.after(durationMs, 6, () => {
      stopped = true;
      restore();
    });
  }

  private heal(): void {
    // Faults waiting for an election are disarmed: after healing nothing more goes wrong.
    this.armed = [];
    this.armedIsolations = [];
    for (const stop of this.stopStarving) stop();
    this.stopStarving = [];
    this.slowed.clear();
    this.partitions.heal();
    for (const n of this.nodes.values()) {
      if (n.state === 'paused') this.resume(n);
      if (n.state === 'down') this.boot(n);
    }
  }

  /** Stop nodes whose removal has committed: they are no longer part of the cluster. */
  private reapRemoved(): void {
    const raft = this.leader()?.member?.replica.raft;
    if (!raft || this.removing.size === 0) return;
    const committedConf = raft.confAtIndex(raft.log.committed);
    for (const id of [...this.removing]) {
      if (committedConf.voters.includes(id) || committedConf.learners.includes(id)) continue;
      const n = this.nodes.get(id);
      if (n && n.state !== 'removed') {
        this.crash(n);
        n.state = 'removed';
        this.inv.forget(id);
        this.durableLogs.forget(id);
      }
      this.removing.delete(id);
    }
  }

  private liveRafts(): Raft[] {
    const out: Raft[] = [];
    for (const n of this.nodes.values()) if (n.running && n.member) out.push(n.member.replica.raft);
    return out;
  }

  // ---------------------------------------------------------------- run

  private async step(): Promise<boolean> {
    const ev = this.q.pop();
    if (!ev) return false;
    this.hash = fnvNumber(fnvNumber(this.hash, Math.round(ev.at * 1000)), ev.tag);
    this.events++;
    ev.fn();
    await drain();
    if (this.thrown !== undefined) throw this.thrown;
    if (this.internalError !== undefined)
      throw new InvariantViolation('node-assertion', this.internalError);
    if (this.events >= this.eventsMax)
      throw new InvariantViolation('liveness', `run exceeded ${this.eventsMax} events`);
    return true;
  }

  async run(): Promise<RunResult> {
    const cfg = this.cfg;
    const healAt = cfg.faultPhaseMs;
    const electionMs = this.electionMs();
    const leaderDeadline = healAt + 10 * electionMs;
    const finalDeadline = leaderDeadline + 20 * electionMs;
    let finals: { done: number; failed: number } | undefined;
    let result: Omit<
      RunResult,
      | 'seed'
      | 'eventHash'
      | 'events'
      | 'opsChecked'
      | 'virtualMs'
      | 'renewalsChecked'
      | 'holdsChecked'
      | 'answersChecked'
    > = { ok: true };
    let renewalsChecked = 0;
    let holdsChecked = 0;
    const onRejection = (e: unknown): void =>
      this.reportInternal(`unhandled rejection: ${e instanceof Error ? e.stack : String(e)}`);
    process.on('unhandledRejection', onRejection);
    try {
      for (const f of this.schedule.faults)
        if (f.at < healAt) this.q.at(f.at, 9, () => this.apply(f));
      this.kv.start();
      this.leaseHolders.start();
      this.lockers.start();
      this.electors.start();
      this.watchers.start();
      this.explorers.start();
      const sweep = (): void => {
        this.inv.checkLogMatching(this.liveRafts());
        this.inv.checkCommitMonotonic(this.liveRafts());
        this.reapRemoved();
        if (this.q.now < finalDeadline) this.q.after(100, 10, sweep);
      };
      this.q.after(100, 10, sweep);
      const availability = this.availabilityWatch();
      const watchAvailability = (): void => {
        if (this.q.now >= healAt) return;
        availability.check();
        this.q.after(10, 16, watchAvailability);
      };
      this.q.after(10, 16, watchAvailability);
      this.q.at(healAt, 11, () => this.heal());
      const watchLeader = (): void => {
        const raft = this.leader()?.member?.replica.raft;
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
      // After the leader deadline, a fresh client reads every key; each must finish in time.
      this.q.at(leaderDeadline, 13, () => {
        void this.kv.finalReads(20 * electionMs - 50).then((r) => (finals = r));
      });
      for (;;) {
        const t = this.q.peekTime();
        if (t === undefined || t > finalDeadline + electionMs) break;
        if (!(await this.step())) break;
        if (finals !== undefined && this.idle) break;
      }
      if (finals === undefined || finals.failed > 0) {
        const missing = finals === undefined ? cfg.keys : finals.failed;
        throw new InvariantViolation(
          'liveness',
          `${missing} of ${cfg.keys} final reads did not finish within 20 election timeouts after the leader deadline`,
        );
      }
      await this.quiesce();
      this.reference.flushAll();
      this.inv.checkLogMatching(this.liveRafts());
      // The end-of-run checks are independent: run them all, so that one bug does not hide
      // another; the first failure names the run's verdict and the others are listed after it.
      const failed: InvariantViolation[] = [];
      const check = (fn: () => void): void => {
        try {
          fn();
        } catch (e) {
          if (!(e instanceof InvariantViolation)) throw e;
          failed.push(e);
        }
      };
      check(() => this.checkConvergence());
      check(() => checkDurability(this.kv, this.reference));
      check(() => checkLinearizability(this.kv.history));
      check(() => checkLeaseKeys(this.leader()?.member?.machine));
      check(() => checkWatches(this.watchers.history(), this.reference));
      check(() => this.keyspace.checkEvents(this.reference.revisionEvents()));
      if (this.clocksWithinBound()) {
        check(() => (renewalsChecked = checkLeases(this.reference, this.leaseRecord)));
        const holds = [...this.lockers.holds, ...this.electors.holds];
        check(
          () =>
            (holdsChecked = checkLocks(
              holds,
              this.reference,
              this.leaseRecord,
              this.unlockArrivals,
            )),
        );
      }
      const first = failed[0];
      if (first) {
        const also = failed.slice(1).map((f) => f.invariant);
        throw new InvariantViolation(
          first.invariant,
          `${first.message.slice(first.invariant.length + 2)}${also.length > 0 ? ` (also failed: ${also.join(', ')})` : ''}`,
        );
      }
    } catch (e) {
      result = classify(e);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
    return {
      seed: this.schedule.seed,
      ...result,
      eventHash: this.hash,
      events: this.events,
      opsChecked: this.kv.history.length,
      renewalsChecked,
      holdsChecked,
      answersChecked: this.keyspace.judged,
      virtualMs: Math.round(this.q.now),
      ...(this.leaderAfterHealMs !== undefined
        ? { leaderAfterHealMs: this.leaderAfterHealMs }
        : {}),
    };
  }

  private get idle(): boolean {
    return (
      this.kv.idle &&
      this.leaseHolders.idle &&
      this.lockers.idle &&
      this.electors.idle &&
      this.watchers.idle &&
      this.explorers.idle
    );
  }

  /** The lease guarantees are stated for clocks that run at most CLOCK_RATE_ERROR_MAX fast. */
  private clocksWithinBound(): boolean {
    return this.cfg.driftClass !== 'wild';
  }

  /**
   * A forwarded request's deadline is put on the leader's clock as the least it can advance, so
   * it holds only while no clock runs slower than the bound: not under wild drift, and not in a
   * run where a cut-off leader's clock was slowed (×0.25).
   */
  private clocksNeverSlow(): boolean {
    // Asked at every proposal: decided once per run.
    this.neverSlow ??=
      this.clocksWithinBound() &&
      !this.schedule.faults.some((f) => f.kind === 'partition' && f.slowClockFactor !== undefined);
    return this.neverSlow;
  }

  private neverSlow: boolean | undefined;

  /**
   * Let replication finish so every live member catches up with the leader. A follower may be far
   * behind (one entry per append, lossy links), so this waits up to 100 election timeouts,
   * checking every 10 ms of virtual time.
   */
  private async quiesce(): Promise<void> {
    const until = this.q.now + 100 * this.electionMs();
    let nextCheck = this.q.now;
    for (;;) {
      const t = this.q.peekTime();
      if (t === undefined || t > until) break;
      if (t >= nextCheck) {
        if (this.caughtUp()) break;
        nextCheck = t + 10;
      }
      if (!(await this.step())) break;
    }
  }

  /** Availability while faults are active: see availability.ts. */
  private availabilityWatch(): AvailabilityWatch {
    return new AvailabilityWatch(
      {
        now: () => this.q.now,
        voters: () => {
          if (this.removing.size > 0) return undefined;
          let best: Raft | undefined;
          for (const r of this.liveRafts())
            if (!best || r.log.committed > best.log.committed) best = r;
          if (!best) return undefined;
          const committed = best.confAtIndex(best.log.committed);
          for (const r of this.liveRafts())
            if (confKey(r.conf()) !== confKey(committed)) return undefined;
          return committed.voters;
        },
        healthy: (id) => {
          const n = this.nodes.get(id);
          return (
            n !== undefined &&
            n.state === 'up' &&
            n.member !== undefined &&
            !this.slowed.has(id) &&
            (this.starvedUntil.get(id) ?? 0) <= this.q.now
          );
        },
        connected: (a, b) => !this.partitions.isBlocked(a, b) && !this.partitions.isBlocked(b, a),
        clockRate: (id) => this.nodes.get(id)?.clockRate ?? 1,
        // Followed by a majority it can hear from: one that hears the leader but cannot answer
        // it follows a leader that can commit nothing.
        served: () => {
          for (const n of this.nodes.values()) {
            const r = n.state === 'up' ? n.member?.replica.raft : undefined;
            if (r?.role !== 'leader') continue;
            const reaches = (id: NodeId): boolean =>
              id === r.id ||
              (!this.partitions.isBlocked(id, r.id) && !this.partitions.isBlocked(r.id, id));
            if (this.followers(r, reaches) > r.conf().voters.length / 2) return true;
          }
          return false;
        },
      },
      AVAILABILITY_ELECTIONS * this.electionMs(),
    );
  }

  /** Voters (the leader included) that are up and know `raft` as their leader in its term. */
  private followers(raft: Raft, counts: (id: NodeId) => boolean = () => true): number {
    let n = 0;
    for (const id of raft.conf().voters) {
      if (!counts(id)) continue;
      const node = this.nodes.get(id);
      const r = node?.member?.replica.raft;
      if (r && node?.state === 'up' && r.term === raft.term && r.leader === raft.id) n++;
    }
    return n;
  }

  private caughtUp(): boolean {
    const raft = this.leader()?.member?.replica.raft;
    if (!raft) return false;
    const conf = raft.conf();
    for (const id of [...conf.voters, ...conf.learners]) {
      const n = this.nodes.get(id);
      const r = n?.member?.replica.raft;
      if (r && n?.state === 'up' && r.log.applied < raft.log.committed) return false;
    }
    return true;
  }

  /** Live members of the final configuration have applied the same log and hold the same state. */
  private checkConvergence(): void {
    const l = this.leader();
    const lr = l?.member?.replica;
    if (!lr) throw new InvariantViolation('liveness', 'no leader at the end of the run');
    const conf = lr.raft.conf();
    const members = [...conf.voters, ...conf.learners];
    const target = lr.raft.log.committed;
    const digests = new Map<number, number>();
    for (const id of members) {
      const n = this.nodes.get(id);
      const r = n?.member?.replica;
      if (!r || n?.state !== 'up') continue;
      if (r.raft.log.applied < target) {
        const pr = lr.raft.progressView().get(id);
        throw new InvariantViolation(
          'liveness',
          `node ${id} applied only ${r.raft.log.applied} of ${target} after quiescing (${r.raft.describe()}; leader ${lr.raft.describe()} sees match=${pr?.match} next=${pr?.next} ${pr?.state})`,
        );
      }
      const applied = r.raft.log.applied;
      const d = r.stateMachine.digest();
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
  const msg = e instanceof Error ? `${e.name}: ${e.stack ?? e.message}` : String(e);
  return { ok: false, invariant: 'node-assertion', message: msg };
}

function msgTag(m: Message): number {
  return (
    100 + MESSAGE_TYPE_CODES[m.type] * 1_000_000 + m.from * 10_000 + m.to * 100 + (m.term % 100)
  );
}
