// One simulated run: the production member (src/replica/member) on a virtual clock, a seeded
// network and seeded disks, faults from the schedule, clients that use the members' real client
// API (api-channel.ts) the way etcd clients do, invariants checked on every event, and at the end
// linearizability, the lease contract, lock exclusion, liveness after healing and convergence.
//
// The member's code is asynchronous (promises), so after every event the loop lets every promise
// continuation run before the next event: virtual time stands still while they do, and their
// order is fixed by the code, so a seed replays exactly.
//
// The parts, each in its own file: the members' processes (sim-cluster.ts), the network between
// them (sim-network.ts), the faults (nemesis.ts), progress while faulted and at the end
// (run-liveness.ts), the end-of-run checks (run-checks.ts) and what fails a run (run-errors.ts).
import { AssertionError } from '../core/base/assert.js';
import { fnvNumber, FNV_OFFSET } from '../core/base/hash.js';
import type { Mutants } from '../core/base/mutants.js';
import { NO_MUTANTS } from '../core/base/mutants.js';
import { prng, type Prng } from '../core/base/prng.js';
import { nodeId, type NodeId } from '../core/base/units.js';
import { DEFAULT_ETCD_LIMITS } from '../core/state/etcd-limits.js';
import { CorruptWalError, unsyncedEntriesFrom, WAL_FILE } from '../replica/wal.js';
import { ApiChannel } from './api-channel.js';
import { DurableLogs } from './durable-logs.js';
import { EventQueue } from '../core/base/event-queue.js';
import { EventReference } from './event-reference.js';
import {
  Invariants,
  InvariantViolation,
  type InvariantName,
  type LogHolder,
} from './invariants.js';
import { KeyspaceCheck } from './keyspace-check.js';
import { KeyspaceWorkload } from './keyspace-workload.js';
import { KvWorkload } from './kv-workload.js';
import type { LeaseRecord } from './lease-session.js';
import { LeaseWorkload } from './lease-workload.js';
import { LockWorkload } from './lock-workload.js';
import { Nemesis } from './nemesis.js';
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
import { RunErrors } from './run-errors.js';
import { availabilityWatch, checkConvergence } from './run-liveness.js';
import { type Schedule } from './schedule.js';
import type { ClientEnv } from './sim-client.js';
import {
  electionMsOf,
  REQUEST_TIMEOUT_ELECTIONS,
  SimCluster,
  SOURCE_CLIENT,
} from './sim-cluster.js';
import { SimNetwork } from './sim-network.js';
import type { SimNode } from './sim-node.js';
import { WatchWorkload } from './watch-workload.js';

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

/** A watch stream that says nothing for this many election timeouts is resumed elsewhere. */
const WATCH_QUIET_ELECTIONS = 10;
/**
 * A majority up and connected among itself must be served by a leader within this many election
 * timeouts, while faults are active (PreVote, then a vote, each a round that loss may repeat).
 */
const AVAILABILITY_ELECTIONS = 15;
/** A Lock call waits for its turn at most this many election timeouts. */
const LOCK_WAIT_ELECTIONS = 30;
/** Event-loop immediates queued at once by the event loop of a run (see runEvents). */
const IMMEDIATES_PER_TURN = 64;

export function runSchedule(schedule: Schedule, opts: RunOptions = {}): Promise<RunResult> {
  return new Simulation(schedule, opts).run();
}

/** One run: the cluster, its network, the nemesis, the workloads and the checks, on one queue. */
class Simulation {
  readonly q = new EventQueue();
  readonly nodes = new Map<NodeId, SimNode>();
  readonly cluster: SimCluster;
  readonly network: SimNetwork;
  readonly nemesis: Nemesis;
  private readonly cfg: Schedule['config'];
  private readonly root: Prng;
  private readonly inv = new Invariants();
  private readonly durableLogs = new DurableLogs();
  private readonly errors = new RunErrors();
  private readonly mutants: Mutants;
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
  private leaderAfterHealMs: number | undefined;

  private get eventsMax(): number {
    return this.opts.eventsMax ?? 5_000_000;
  }

  private get electionMs(): number {
    return electionMsOf(this.cfg);
  }

  constructor(
    private readonly schedule: Schedule,
    private readonly opts: RunOptions,
  ) {
    this.cfg = schedule.config;
    this.root = prng(schedule.seed);
    const nemesisPrng = this.root.fork('nemesis');
    this.mutants = opts.mutants ?? NO_MUTANTS;
    const voters = Array.from({ length: this.cfg.nodes }, (_, i) => nodeId(i + 1));
    this.network = new SimNetwork({
      q: this.q,
      cfg: this.cfg,
      root: this.root,
      nodes: this.nodes,
      inv: this.inv,
      errors: this.errors,
    });
    this.reference = new EventReference(() => this.q.now);
    this.writeDeadlines = new WriteDeadlines(REQUEST_TIMEOUT_ELECTIONS * this.electionMs);
    this.cluster = new SimCluster(
      {
        q: this.q,
        cfg: this.cfg,
        root: this.root,
        nemesisPrng,
        mutants: this.mutants,
        nodes: this.nodes,
        inv: this.inv,
        durableLogs: this.durableLogs,
        keyspace: this.keyspace,
        reference: this.reference,
        errors: this.errors,
        links: this.network.links,
        send: (m, node) => this.network.send(m, node),
        checkProposal: (id, data) => {
          if (this.clocksNeverSlow()) this.writeDeadlines.checkProposal(id, data, this.q.now);
        },
        onLeader: (node) => this.nemesis.onLeader(node),
        onCrash: (node) => this.network.crashed(node),
      },
      voters,
    );
    this.nemesis = new Nemesis({
      q: this.q,
      cfg: this.cfg,
      prng: nemesisPrng,
      nodes: this.nodes,
      cluster: this.cluster,
      network: this.network,
      inv: this.inv,
      durableLogs: this.durableLogs,
    });
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
    const electionMs = this.electionMs;
    const stopAtMs = this.cfg.faultPhaseMs + 1000;
    const env: ClientEnv = {
      q: this.q,
      channel: this.channel,
      members: () =>
        [...this.nodes.values()]
          .filter((n) => n.state !== 'removed' && !this.cluster.removing.has(n.id))
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
    this.inv.liveRafts = () => this.cluster.liveRafts();
    this.inv.initialConf = this.cluster.initialConf;
    this.inv.unsyncedFrom = (id) => {
      const disk = this.nodes.get(id)?.disk;
      return disk ? unsyncedEntriesFrom(disk.unsynced(WAL_FILE)) : undefined;
    };
    this.inv.crashedLogs = () => {
      const out: LogHolder[] = [];
      for (const n of this.nodes.values()) if (n.state === 'down' && n.ghost) out.push(n.ghost);
      return out;
    };
    for (const id of voters) this.cluster.addNode(id);
  }

  /**
   * Run events one per macrotask (setImmediate) while `proceed(t)` says so for the next event's
   * time `t`, until the queue empties or `stop()` says so after an event: all microtasks drain
   * before a macrotask, so every promise continuation an event readied runs before the next
   * event. A plain callback loop rather than an awaited async step, which allocated several
   * promises and closures per event (a run has tens of thousands).
   *
   * The immediates are queued IMMEDIATES_PER_TURN at a time: Node runs the immediates queued
   * before a turn of its event loop in that one turn and drains the nextTick and microtask
   * queues between any two of them (lib/internal/timers.js, processImmediate → runNextTicks),
   * so each event still starts with no continuation pending, but the loop turn (a poll of the
   * OS for I/O, the timer check) is paid once per batch rather than once per event. Immediates
   * left over when the loop ends do nothing.
   */
  private runEvents(proceed: (t: number) => boolean, stop: () => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      let ran = false;
      let over = false;
      let queued = 0;
      const finish = (): void => {
        over = true;
        resolve();
      };
      const next = (): void => {
        if (over) return;
        try {
          if (ran) {
            this.errors.rethrow();
            if (this.events >= this.eventsMax)
              throw new InvariantViolation('liveness', `run exceeded ${this.eventsMax} events`);
            if (stop()) {
              finish();
              return;
            }
          }
          const t = this.q.peekTime();
          const ev = t !== undefined && proceed(t) ? this.q.pop() : undefined;
          if (!ev) {
            finish();
            return;
          }
          this.hash = fnvNumber(fnvNumber(this.hash, Math.round(ev.at * 1000)), ev.tag);
          this.events++;
          ran = true;
          ev.fn();
          if (queued === 0) {
            queued = IMMEDIATES_PER_TURN;
            for (let i = 0; i < IMMEDIATES_PER_TURN; i++) setImmediate(fromImmediate);
          }
        } catch (e) {
          over = true;
          // Whatever an event threw, as it was thrown, is the run's verdict (classify() reads it).
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          reject(e);
        }
      };
      const fromImmediate = (): void => {
        queued--;
        next();
      };
      next();
    });
  }

  async run(): Promise<RunResult> {
    const cfg = this.cfg;
    const healAt = cfg.faultPhaseMs;
    const electionMs = this.electionMs;
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
      this.errors.report(`unhandled rejection: ${e instanceof Error ? e.stack : String(e)}`);
    process.on('unhandledRejection', onRejection);
    try {
      for (const f of this.schedule.faults)
        if (f.at < healAt) this.q.at(f.at, 9, () => this.nemesis.apply(f));
      this.kv.start();
      this.leaseHolders.start();
      this.lockers.start();
      this.electors.start();
      this.watchers.start();
      this.explorers.start();
      const sweep = (): void => {
        this.inv.checkLogMatching(this.cluster.liveRafts());
        this.inv.checkCommitMonotonic(this.cluster.liveRafts());
        this.nemesis.reapRemoved();
        if (this.q.now < finalDeadline) this.q.after(100, 10, sweep);
      };
      this.q.after(100, 10, sweep);
      const availability = availabilityWatch(this, AVAILABILITY_ELECTIONS * electionMs);
      const watchAvailability = (): void => {
        if (this.q.now >= healAt) return;
        availability.check();
        this.q.after(10, 16, watchAvailability);
      };
      this.q.after(10, 16, watchAvailability);
      this.q.at(healAt, 11, () => this.nemesis.heal());
      const watchLeader = (): void => {
        const raft = this.cluster.leader()?.member?.replica.raft;
        if (raft && this.cluster.followers(raft) > raft.conf().voters.length / 2) {
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
      await this.runEvents(
        (t) => t <= finalDeadline + electionMs,
        () => finals !== undefined && this.idle,
      );
      if (finals === undefined || finals.failed > 0) {
        const missing = finals === undefined ? cfg.keys : finals.failed;
        throw new InvariantViolation(
          'liveness',
          `${missing} of ${cfg.keys} final reads did not finish within 20 election timeouts after the leader deadline`,
        );
      }
      await this.quiesce();
      this.reference.flushAll();
      this.inv.checkLogMatching(this.cluster.liveRafts());
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
      check(() => checkConvergence(this));
      check(() => checkDurability(this.kv, this.reference));
      check(() => checkLinearizability(this.kv.history));
      check(() => checkLeaseKeys(this.cluster.leader()?.member?.machine));
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
    const until = this.q.now + 100 * this.electionMs;
    let nextCheck = this.q.now;
    await this.runEvents(
      (t) => {
        if (t > until) return false;
        if (t >= nextCheck) {
          if (this.cluster.caughtUp()) return false;
          nextCheck = t + 10;
        }
        return true;
      },
      () => false,
    );
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
