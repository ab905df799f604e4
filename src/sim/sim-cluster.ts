// The simulated cluster's processes: each member's boot (the production member wired to the
// virtual clock, the seeded network, its seeded disk and the run's observers), crash, pause and
// resume, and the questions the run asks of them (who leads, who follows, who has caught up).
import { AssertionError } from '../core/base/assert.js';
import type { Mutants } from '../core/base/mutants.js';
import type { Prng } from '../core/base/prng.js';
import { logIndex, type NodeId } from '../core/base/units.js';
import { RaftLog } from '../core/raft/log.js';
import type { Raft } from '../core/raft/raft.js';
import type { ConfState, Entry, Message } from '../core/raft/types.js';
import type { Clock, Transport } from '../replica/io.js';
import { Member } from '../replica/member/member.js';
import type { InitialMember, MemberLog } from '../replica/member/member-config.js';
import { wellFormedEntry } from '../replica/member/server-machine.js';
import { recover, SNAP_FILE, WAL_FILE } from '../replica/wal.js';
import { DEFAULT_CLIENT_API_CONFIG } from '../server/api/api-config.js';
import { MemberApi } from './api-channel.js';
import { SimDisk } from './disk.js';
import type { DurableLogs } from './durable-logs.js';
import type { EventQueue } from '../core/base/event-queue.js';
import type { EventReference } from './event-reference.js';
import { InvariantViolation, type Invariants, type LogHolder } from './invariants.js';
import type { KeyspaceCheck } from './keyspace-check.js';
import type { PeerLinks } from './peer-links.js';
import type { RunErrors } from './run-errors.js';
import type { Schedule } from './schedule.js';
import { SimNode } from './sim-node.js';

/** Held-event sources besides peers (whose source is their node id). */
export const SOURCE_CLIENT = -1;
const SOURCE_DISK = -2;
const SOURCE_TIMER = -3;
/** Frames from peer `p` are held under SOURCE_FRAMES - p. */
export const SOURCE_FRAMES = -4;

/** The simulated cluster's ID (members of one run all agree on it). */
const SIM_CLUSTER_ID = 0x51n;
/** Request timeout of a member, in election timeouts (production: 7 s over 1 s). */
export const REQUEST_TIMEOUT_ELECTIONS = 7;
/** A member's clock at a boot reads a random value below this (a new process, another host). */
const CLOCK_ORIGIN_MAX_MS = 1_000_000;

/**
 * Entries already found well-formed at an apply, by entry object. Entries are immutable once
 * made and the members of a run share the leader's entry objects (messages are not copied), so
 * an entry is decoded for this check once, not again on every member that applies it; one read
 * back from a disk is a new object and is checked anew.
 */
const wellFormed = new WeakSet<Entry>();

/** A member's election timeout in the run's configuration, in virtual milliseconds. */
export function electionMsOf(cfg: Schedule['config']): number {
  return cfg.electionTicks * cfg.tickMs;
}

export interface ClusterDeps {
  readonly q: EventQueue;
  readonly cfg: Schedule['config'];
  /** The run's root stream: each disk and each member's life draws from a fork of its own. */
  readonly root: Prng;
  /** The nemesis's stream: clock origins at boot and the order of events held over a pause. */
  readonly nemesisPrng: Prng;
  readonly mutants: Mutants;
  readonly nodes: Map<NodeId, SimNode>;
  readonly inv: Invariants;
  readonly durableLogs: DurableLogs;
  readonly keyspace: KeyspaceCheck;
  readonly reference: EventReference;
  readonly errors: RunErrors;
  readonly links: PeerLinks;
  /** Sends a Raft message from `node` over the simulated network. */
  readonly send: (m: Message, node: SimNode) => void;
  /** Judges a proposal against the deadline its client's member gave it. */
  readonly checkProposal: (id: NodeId, data: Uint8Array) => void;
  /** Told when `node` becomes leader (after the invariants have seen it). */
  readonly onLeader: (node: SimNode) => void;
  /** Told when `node` has crashed (the network tells the others its port refuses them). */
  readonly onCrash?: (node: SimNode) => void;
}

export class SimCluster {
  readonly initialConf: ConfState;
  private readonly initialMembers: ReadonlyMap<NodeId, InitialMember>;
  /** Members whose removal is proposed and not yet committed. */
  readonly removing = new Set<NodeId>();

  constructor(
    private readonly d: ClusterDeps,
    voters: readonly NodeId[],
  ) {
    this.initialConf = { voters: [...voters], learners: [] };
    this.initialMembers = new Map(voters.map((id) => [id, initialMember(id)]));
  }

  private get electionMs(): number {
    return electionMsOf(this.d.cfg);
  }

  addNode(id: NodeId): SimNode {
    const cfg = this.d.cfg;
    const rate = cfg.clockRates[(id - 1) % cfg.clockRates.length] ?? 1;
    // The disk delivers completions through the node (held while paused), so it needs the node
    // that it is built before.
    const holder: { node?: SimNode } = {};
    const disk = new SimDisk(
      this.d.q,
      this.d.root.fork(`disk-${id}`),
      {
        tornWriteProbability: cfg.tornWriteProbability,
        sectorBytes: cfg.sectorBytes,
        syncMeanMs: cfg.syncMeanMs,
      },
      (fn) => holder.node?.run(SOURCE_DISK, fn),
    );
    const node = new SimNode(id, disk, rate);
    holder.node = node;
    this.d.nodes.set(id, node);
    this.boot(node);
    return node;
  }

  private memberLog(node: SimNode): MemberLog {
    return {
      info: () => {},
      warn: () => {},
      error: (obj, msg) =>
        this.d.errors.report(
          `member ${node.id}: ${msg} ${JSON.stringify(obj)}`,
          (obj as { err?: unknown }).err,
        ),
    };
  }

  boot(node: SimNode): void {
    const { q, inv, durableLogs, errors, cfg } = this.d;
    node.state = 'up';
    node.epoch++;
    node.held = [];
    node.heldTicks.clear();
    node.heard.clear();
    const epoch = node.epoch;
    // A new process: its monotonic clock has nothing to do with any other member's.
    node.restartClock(q.now, this.d.nemesisPrng.int(0, CLOCK_ORIGIN_MAX_MS));
    const clock = this.nodeClock(node, epoch);
    const transport: Transport = { send: (m) => this.d.send(m, node) };
    const electionMs = this.electionMs;
    const guard = (fn: () => void): void => errors.guard(fn);
    try {
      const member = new Member(
        {
          name: `n${node.id}`,
          id: node.id,
          clusterId: () => SIM_CLUSTER_ID,
          initialConf: this.initialConf,
          initialMembers: this.initialMembers,
          peerUrls: initialMember(node.id).peerUrls,
          advertiseClientUrls: [`http://n${node.id}.sim:2379`],
          heartbeatMs: cfg.tickMs,
          electionMs,
          // Recorded schedules have none: they replay as they ran, by the timeout alone.
          pauseToleranceMs: cfg.pauseToleranceMs ?? 0,
          ...(cfg.leaderDetector === undefined ? {} : { leaderDetector: cfg.leaderDetector }),
          snapshotCount: cfg.snapshotEntries,
          snapshotKeepEntries: 10,
          requestTimeoutMs: REQUEST_TIMEOUT_ELECTIONS * electionMs,
          seed: this.d.root.fork(`node-${node.id}-${epoch}`).seed,
          entriesPerAppendMax: cfg.entriesPerAppendMax,
          inflightAppendsMax: cfg.inflightAppendsMax,
          mutants: this.d.mutants,
        },
        {
          clock,
          transport,
          peers: {
            send: (to, frame) => this.d.links.send(node.id, to, frame, node.stamp(q.now)),
            heard: (peer) => node.heard.get(peer),
          },
          disk: node.disk,
          log: this.memberLog(node),
          observer: {
            onStart: (id, raft) =>
              guard(() => {
                durableLogs.onStart(id, raft);
                inv.onStart(id, raft);
              }),
            onPropose: (id, index, t, data) =>
              guard(() => {
                inv.onPropose(id, index, t, data);
                this.d.checkProposal(id, data);
              }),
            onWrite: (id, entries) => guard(() => durableLogs.onWrite(id, entries)),
            onPersisted: (id, entries, snapshotIndex) =>
              guard(() => durableLogs.onPersisted(id, entries, snapshotIndex)),
            onAnswered: (id, e) => guard(() => inv.onAnswered(id, e)),
            onApply: (id, e) =>
              guard(() => {
                inv.onApply(id, e);
                if (e.type === 'normal' && !wellFormed.has(e)) {
                  if (!wellFormedEntry(e.data))
                    throw new AssertionError(`entry ${e.index} is not a well-formed command`);
                  wellFormed.add(e);
                }
              }),
            onApplied: (id, e, result) => guard(() => this.d.keyspace.onApplied(id, e, result)),
            onSoftState: (id, s) =>
              guard(() => {
                const raft = this.d.nodes.get(id)?.member?.replica.raft;
                if (raft) inv.onSoftState(id, s, raft);
                if (s.role === 'leader') this.d.onLeader(node);
              }),
            onPersistedHardState: (id, hs) => guard(() => inv.onPersistedHardState(id, hs)),
            onRestoreSnapshot: (id, s) => guard(() => inv.onRestoreSnapshot(id, s)),
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
            errors.report(
              `member ${node.id} API: ${msg}: ${String((obj as { err?: unknown }).err)}`,
              (obj as { err?: unknown }).err,
            ),
        },
        { ...DEFAULT_CLIENT_API_CONFIG, mutants: this.d.mutants },
      );
      node.detach = this.d.reference.attach(node.id, member.machine);
    } catch (e) {
      if (e instanceof InvariantViolation) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      throw new InvariantViolation('wal-recovery', `node ${node.id} failed to restart: ${msg}`);
    }
  }

  private nodeClock(node: SimNode, epoch: number): Clock {
    const q = this.d.q;
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

  /** The member that is up and leads the highest term, if any. */
  leader(): SimNode | undefined {
    let best: SimNode | undefined;
    let bestTerm = -1;
    for (const n of this.d.nodes.values()) {
      if (n.state !== 'up' || !n.member) continue;
      const r = n.member.replica.raft;
      if (r.role === 'leader' && r.term > bestTerm) {
        best = n;
        bestTerm = r.term;
      }
    }
    return best;
  }

  crash(n: SimNode): void {
    this.d.errors.guard(() => this.d.durableLogs.onCrash(n.id, n.member?.replica.raft));
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
    this.d.links.crash(n.id);
    n.ghost = this.durableLog(n);
    this.d.onCrash?.(n);
  }

  /** The log `n` would restart with, for the commit-safety check; undefined if unreadable. */
  private durableLog(n: SimNode): LogHolder | undefined {
    try {
      const rec = recover(n.disk.read(WAL_FILE), n.disk.read(SNAP_FILE), {
        mutants: this.d.mutants,
      });
      return {
        id: n.id,
        log: new RaftLog(rec.snapshot, rec.entries, rec.hardState?.commit ?? logIndex(0)),
      };
    } catch {
      return undefined; // recovery will fail loudly when the node restarts
    }
  }

  resume(n: SimNode): void {
    if (n.state !== 'paused') return;
    const prng = this.d.nemesisPrng;
    n.state = 'up';
    const held = n.held;
    n.held = [];
    const ticks = [...n.heldTicks];
    n.heldTicks.clear();
    // A resumed Node process usually reads its sockets before its timers fire (libuv runs the
    // poll phase first after a stall), but not always: the order is drawn.
    const ticksFirst = prng.chance(0.3);
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
      const i = prng.int(0, sources.length);
      const src = sources[i] as (() => void)[];
      (src.shift() as () => void)();
      if (src.length === 0) sources.splice(i, 1);
    }
    if (!ticksFirst && n.state === 'up') for (const t of ticks) t();
  }

  liveRafts(): Raft[] {
    const out: Raft[] = [];
    for (const n of this.d.nodes.values())
      if (n.running && n.member) out.push(n.member.replica.raft);
    return out;
  }

  /** Voters (the leader included) that are up and know `raft` as their leader in its term. */
  followers(raft: Raft, counts: (id: NodeId) => boolean = () => true): number {
    let n = 0;
    for (const id of raft.conf().voters) {
      if (!counts(id)) continue;
      const node = this.d.nodes.get(id);
      const r = node?.member?.replica.raft;
      if (r && node?.state === 'up' && r.term === raft.term && r.leader === raft.id) n++;
    }
    return n;
  }

  /** Every member of the leader's configuration that is up has applied what the leader committed. */
  caughtUp(): boolean {
    const raft = this.leader()?.member?.replica.raft;
    if (!raft) return false;
    const conf = raft.conf();
    for (const id of [...conf.voters, ...conf.learners]) {
      const n = this.d.nodes.get(id);
      const r = n?.member?.replica.raft;
      if (r && n?.state === 'up' && r.log.applied < raft.log.committed) return false;
    }
    return true;
  }
}

function initialMember(id: NodeId): InitialMember {
  return { name: `n${id}`, peerUrls: [`http://n${id}.sim:2380`] };
}
