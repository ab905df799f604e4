// A data-driven interaction harness for the Raft core, in the spirit of etcd-io/raft's interaction
// tests (interaction_test.go, rafttest/, testdata/*.txt) but our own format and commands. A script
// drives N in-memory nodes, each with in-memory storage (what a real node would have fsynced) and
// an inbox; every command prints what happened through describe.ts, and the printed text is the
// golden output. The harness is pure and synchronous, like the core it drives. It is test tooling
// (test/raft/interaction.test.ts runs the scripts), so it lives beside its test, not in the core.
//
// Script format
//   - A case is one or more command lines, a `----` line, then the expected output up to the next
//     blank line (or the end of the file). A command that prints nothing outputs `ok`.
//   - Lines starting with `#` outside the output are comments; they and blank lines are kept.
//   - runScript(text) returns the same file with every output regenerated, so a test compares it
//     with the file and a rewrite mode writes it back.
//
// Commands (IDs are node ids; `k=v` options may appear in any order after the positional args)
//   add-nodes N [prevote=true] [checkquorum=true] [election=10] [heartbeat=1] [max-append=64]
//             [inflight=32] [seed=S]
//       Adds N nodes with empty storage, numbered after the existing ones. The first call fixes the
//       bootstrap configuration (all its nodes are voters); nodes added later start from that same
//       configuration and learn the rest from the log or a snapshot, like a server that joins.
//       Without seed=, every randomized election timeout is exactly `election` ticks, so that
//       tick-election fires deterministically; with seed=S the timeouts are drawn from prng(S).
//   set-election-timeout ID TICKS
//       The node's randomized election timeout becomes TICKS (in [election, 2×election)) from its
//       next timer reset, i.e. the next time it becomes candidate or follower in a new term.
//   campaign ID                 hup(): start an election (a pre-vote round with prevote=true).
//   leader-unreachable ID LEADER
//       the replica's evidence that LEADER's process is gone (its peer port refused a reconnect);
//       prints whether the core took it.
//   campaign-on-evidence ID     start the pre-vote the evidence allows, if it still does.
//   tick ID [N]                 N ticks (default 1); prints the node's state afterwards.
//   tick-election ID [N]        N × election ticks; tick-heartbeat ID [N]: N × heartbeat ticks.
//   propose ID TEXT             propose one normal entry whose data is TEXT (one word, no commas).
//   propose-conf-change ID add-voter|add-learner|remove NODE
//   read-index ID CTX           ask for a linearizable read point; CTX is a number.
//   transfer-leader FROM TO     ask leader FROM to hand leadership to TO.
//   compact ID INDEX [keep=N]   snapshot the application at INDEX and drop the log before it,
//                               keeping N entries; the snapshot is persisted at once.
//   process-ready ID...         take one Ready, print it, persist it, queue its messages, apply its
//                               committed entries, advance().
//   deliver-msgs [ID...] [type=T] [drop=ID,...]
//       Deliver the messages queued for each ID (all nodes by default), printing each. type=
//       delivers only that message type and leaves the rest queued; drop= discards what is queued
//       for those nodes. Messages across a cut link or to a crashed node are lost and printed so.
//   stabilize                   repeat process-ready and deliver-msgs on every node until no node
//                               has a Ready and no message is queued.
//   cut A B | isolate ID | heal cut one link both ways, cut a node from all others, restore all.
//   crash ID                    the node stops; what it had not persisted is lost, queued messages
//                               to it are dropped.
//   restart ID                  rebuild the node from its persisted storage only.
//   raft-state                  one line per node: role, term, vote, leader, log, configuration.
//   raft-log ID | storage ID | applied ID | status ID
//       the node's log; its persisted storage; its application state; a leader's view of its
//       followers (match, next, probe/replicate/snapshot).
//   mutants ID NAME,... | mutants ID none
//       switch planted bugs (src/core/base/mutants.ts) on for one node, at once.
//
// Checks run after every Ready: at most one leader per term (Election Safety, Raft §5.2) and no
// two nodes applying different entries at the same index (State Machine Safety, Raft §5.4.3). A
// violation prints a line starting with `!!`. An assertion raised by the core prints `error:`.
import { AssertionError } from '../../src/core/base/assert.js';
import { MUTANT_NAMES, type MutantName } from '../../src/core/base/mutants.js';
import { prng, type Prng } from '../../src/core/base/prng.js';
import { logIndex, nodeId, type NodeId } from '../../src/core/base/units.js';
import { describeConf } from '../../src/core/raft/conf.js';
import {
  describeEntry,
  describeHardState,
  describeMessage,
  describeReady,
  describeSnapshot,
} from '../../src/core/raft/describe.js';
import { Raft, type RaftOptions } from '../../src/core/raft/raft.js';
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  Snapshot,
} from '../../src/core/raft/types.js';

/** Rounds of stabilize before the harness gives up: a live-lock is a finding, not a hang. */
const STABILIZE_ROUNDS_MAX = 200;
/** Ticks one tick command may run: keeps a typo from spinning for ever. */
const TICKS_PER_COMMAND_MAX = 10_000;

/** A script error: the script itself is wrong (unknown command, bad argument). */
export class ScriptError extends Error {
  override readonly name = 'ScriptError';
}

interface NodeConfig {
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly entriesPerAppendMax: number | undefined;
  readonly inflightAppendsMax: number | undefined;
}

interface Storage {
  hardState: HardState | undefined;
  snapshot: Snapshot | undefined;
  entries: Entry[];
}

/** One applied command of the toy application: its log index and its text. */
interface AppliedCommand {
  readonly index: number;
  readonly text: string;
}

/**
 * The election-timer PRNG handed to a node: a fixed offset (the default, 0) makes every
 * randomized timeout exactly `election` ticks; a seeded stream draws real random timeouts.
 */
class TimerPrng implements Prng {
  fixed: number | undefined;

  constructor(private readonly inner: Prng | undefined) {
    this.fixed = inner ? undefined : 0;
  }

  get seed(): number {
    return this.inner?.seed ?? 0;
  }

  next(): number {
    return this.inner && this.fixed === undefined ? this.inner.next() : 0;
  }

  int(lo: number, hi: number): number {
    if (this.fixed !== undefined || !this.inner) {
      return Math.min(hi - 1, Math.max(lo, lo + (this.fixed ?? 0)));
    }
    return this.inner.int(lo, hi);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length)] as T;
  }

  exp(mean: number): number {
    return -mean * Math.log(1 - this.next());
  }

  fork(name: string): Prng {
    return this.inner ? this.inner.fork(name) : new TimerPrng(undefined);
  }
}

interface Node {
  readonly id: NodeId;
  readonly config: NodeConfig;
  readonly timer: TimerPrng;
  readonly mutants: Set<MutantName>;
  raft: Raft | undefined;
  storage: Storage;
  applied: AppliedCommand[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The toy application's state: applied command texts in order, joined by commas. */
function encodeAppState(cmds: readonly AppliedCommand[]): Uint8Array {
  return encoder.encode(cmds.map((c) => c.text).join(','));
}

function decodeAppState(s: Snapshot): AppliedCommand[] {
  const text = decoder.decode(s.data);
  return text === '' ? [] : text.split(',').map((t) => ({ index: s.index, text: t }));
}

interface Args {
  readonly positional: readonly string[];
  readonly options: ReadonlyMap<string, string>;
}

function parseArgs(tokens: readonly string[]): Args {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (const t of tokens) {
    const eq = t.indexOf('=');
    if (eq > 0) options.set(t.slice(0, eq), t.slice(eq + 1));
    else positional.push(t);
  }
  return { positional, options };
}

function parseInt10(s: string | undefined, what: string): number {
  if (s === undefined || !/^\d+$/.test(s)) throw new ScriptError(`${what}: expected a number`);
  return Number(s);
}

function parseBool(s: string | undefined, what: string, dflt: boolean): boolean {
  if (s === undefined) return dflt;
  if (s === 'true') return true;
  if (s === 'false') return false;
  throw new ScriptError(`${what}: expected true or false`);
}

function linkKey(a: NodeId, b: NodeId): string {
  return a < b ? `${a}-${b}` : `${b}-${a}`;
}

/** The cluster a script drives: nodes, their storage, the network and the safety records. */
export class Interaction {
  private readonly nodes = new Map<NodeId, Node>();
  private readonly inbox = new Map<NodeId, Message[]>();
  private readonly cuts = new Set<string>();
  private bootstrap: ConfState | undefined;
  /** Election Safety record: the leader seen for each term. */
  private readonly leaders = new Map<number, NodeId>();
  /** State Machine Safety record: the first entry applied at each index, and by whom. */
  private readonly appliedAt = new Map<number, { entry: string; by: NodeId }>();

  /** Run one command; returns its output lines (never empty: `ok` stands for nothing). */
  run(command: string, tokens: readonly string[]): string[] {
    const out: string[] = [];
    const args = parseArgs(tokens);
    try {
      this.dispatch(command, args, out);
    } catch (e) {
      if (e instanceof AssertionError) out.push(`error: ${e.message}`);
      else throw e;
    }
    return out.length > 0 ? out : ['ok'];
  }

  private dispatch(command: string, args: Args, out: string[]): void {
    const p = args.positional;
    switch (command) {
      case 'add-nodes':
        return this.addNodes(parseInt10(p[0], 'add-nodes N'), args.options, out);
      case 'set-election-timeout': {
        const n = this.node(p[0]);
        const t = parseInt10(p[1], 'set-election-timeout TICKS');
        const e = n.config.electionTicks;
        if (t < e || t >= 2 * e) throw new ScriptError(`timeout must be in [${e}, ${2 * e})`);
        n.timer.fixed = t - e;
        return;
      }
      case 'campaign': {
        const r = this.live(p[0]);
        r.hup();
        out.push(r.describe());
        return;
      }
      case 'leader-unreachable': {
        // The replica's evidence that the leader's process is gone (a refused reconnect).
        const r = this.live(p[0]);
        const taken = r.leaderUnreachable(nodeId(parseInt10(p[1], 'leader-unreachable LEADER')));
        out.push(taken ? 'taken' : 'ignored');
        return;
      }
      case 'campaign-on-evidence': {
        const r = this.live(p[0]);
        r.campaignOnEvidence();
        out.push(r.describe());
        return;
      }
      case 'tick':
        return this.tick(p[0], p[1] === undefined ? 1 : parseInt10(p[1], 'tick N'), out);
      case 'tick-election':
      case 'tick-heartbeat': {
        const n = this.node(p[0]);
        const per = command === 'tick-election' ? n.config.electionTicks : n.config.heartbeatTicks;
        const times = p[1] === undefined ? 1 : parseInt10(p[1], `${command} N`);
        return this.tick(p[0], per * times, out);
      }
      case 'propose': {
        const text = p[1];
        if (text === undefined) throw new ScriptError('propose ID TEXT');
        // The toy application keeps its state as comma-separated texts (see encodeAppState).
        if (text.includes(',')) throw new ScriptError('propose: TEXT may not contain commas');
        const res = this.live(p[0]).propose(encoder.encode(text));
        out.push(
          res.ok
            ? `proposed ${res.index}/${res.term}`
            : `refused: ${res.reason} leader=${res.leader}`,
        );
        return;
      }
      case 'propose-conf-change': {
        const kinds: Record<string, ConfChange['type']> = {
          'add-voter': 'addVoter',
          'add-learner': 'addLearner',
          remove: 'removeNode',
        };
        const type = kinds[p[1] ?? ''];
        if (type === undefined)
          throw new ScriptError('propose-conf-change ID add-voter|add-learner|remove NODE');
        const cc: ConfChange = { type, nodeId: nodeId(parseInt10(p[2], 'NODE')) };
        const res = this.live(p[0]).proposeConfChange(cc);
        out.push(
          res.ok
            ? `proposed ${res.index}/${res.term}`
            : `refused: ${res.reason} leader=${res.leader}`,
        );
        return;
      }
      case 'read-index': {
        const ok = this.live(p[0]).readIndex(parseInt10(p[1], 'read-index CTX'));
        if (!ok) out.push('refused: no leader known');
        return;
      }
      case 'transfer-leader': {
        const to = nodeId(parseInt10(p[1], 'transfer-leader TO'));
        if (!this.live(p[0]).transferLeader(to)) out.push('refused');
        return;
      }
      case 'compact':
        return this.compact(p[0], parseInt10(p[1], 'compact INDEX'), args.options, out);
      case 'process-ready':
        if (p.length === 0) throw new ScriptError('process-ready ID...');
        for (const id of p) this.processReady(this.node(id), out);
        return;
      case 'deliver-msgs':
        this.deliverMsgs(args, out);
        return;
      case 'stabilize':
        return this.stabilize(out);
      case 'cut':
        this.cuts.add(linkKey(this.node(p[0]).id, this.node(p[1]).id));
        return;
      case 'isolate': {
        const n = this.node(p[0]);
        for (const other of this.nodes.keys())
          if (other !== n.id) this.cuts.add(linkKey(n.id, other));
        return;
      }
      case 'heal':
        this.cuts.clear();
        return;
      case 'crash':
        return this.crash(this.node(p[0]), out);
      case 'restart':
        return this.restart(this.node(p[0]), out);
      case 'raft-state':
        for (const n of this.sortedNodes()) {
          out.push(
            n.raft ? `${n.raft.describe()} ${describeConf(n.raft.conf())}` : `${n.id} crashed`,
          );
        }
        return;
      case 'raft-log':
        return this.raftLog(this.live(p[0]), out);
      case 'storage':
        return this.showStorage(this.node(p[0]), out);
      case 'applied': {
        const n = this.node(p[0]);
        out.push(n.applied.length > 0 ? n.applied.map((c) => c.text).join(',') : '(nothing)');
        return;
      }
      case 'status':
        return this.status(this.live(p[0]), out);
      case 'mutants':
        return this.setMutants(this.node(p[0]), p[1], out);
      default:
        throw new ScriptError(`unknown command ${command}`);
    }
  }

  // ---------------------------------------------------------------- nodes

  private sortedNodes(): Node[] {
    return [...this.nodes.values()].sort((a, b) => a.id - b.id);
  }

  private node(arg: string | undefined): Node {
    const id = nodeId(parseInt10(arg, 'node ID'));
    const n = this.nodes.get(id);
    if (!n) throw new ScriptError(`no node ${id}`);
    return n;
  }

  private live(arg: string | undefined): Raft {
    const n = this.node(arg);
    if (!n.raft) throw new ScriptError(`node ${n.id} is crashed`);
    return n.raft;
  }

  private addNodes(count: number, o: ReadonlyMap<string, string>, out: string[]): void {
    const known = new Set([
      'prevote',
      'checkquorum',
      'election',
      'heartbeat',
      'max-append',
      'inflight',
      'seed',
    ]);
    for (const k of o.keys())
      if (!known.has(k)) throw new ScriptError(`add-nodes: unknown option ${k}`);
    const opt = (k: string): number | undefined => (o.has(k) ? parseInt10(o.get(k), k) : undefined);
    const config: NodeConfig = {
      preVote: parseBool(o.get('prevote'), 'prevote', false),
      checkQuorum: parseBool(o.get('checkquorum'), 'checkquorum', false),
      electionTicks: opt('election') ?? 10,
      heartbeatTicks: opt('heartbeat') ?? 1,
      entriesPerAppendMax: opt('max-append'),
      inflightAppendsMax: opt('inflight'),
    };
    const seed = opt('seed');
    const first = this.nodes.size + 1;
    const ids = Array.from({ length: count }, (_, i) => nodeId(first + i));
    this.bootstrap ??= { voters: ids, learners: [] };
    for (const id of ids) {
      const timer = new TimerPrng(
        seed === undefined ? undefined : prng(seed).fork(`election-${id}`),
      );
      const n: Node = {
        id,
        config,
        timer,
        mutants: new Set(),
        raft: undefined,
        storage: { hardState: undefined, snapshot: undefined, entries: [] },
        applied: [],
      };
      this.nodes.set(id, n);
      n.raft = this.build(n);
      out.push(`${n.raft.describe()} ${describeConf(n.raft.conf())}`);
    }
  }

  private build(n: Node): Raft {
    const c = n.config;
    const bootstrap = this.bootstrap;
    if (!bootstrap) throw new ScriptError('add-nodes first');
    const opts: RaftOptions = {
      id: n.id,
      initialConf: bootstrap,
      electionTicks: c.electionTicks,
      heartbeatTicks: c.heartbeatTicks,
      preVote: c.preVote,
      checkQuorum: c.checkQuorum,
      prng: n.timer,
      mutants: n.mutants,
      storage: {
        hardState: n.storage.hardState,
        snapshot: n.storage.snapshot,
        entries: [...n.storage.entries],
      },
      ...(c.entriesPerAppendMax !== undefined
        ? { entriesPerAppendMax: c.entriesPerAppendMax }
        : {}),
      ...(c.inflightAppendsMax !== undefined ? { inflightAppendsMax: c.inflightAppendsMax } : {}),
    };
    return new Raft(opts);
  }

  private tick(arg: string | undefined, times: number, out: string[]): void {
    if (times > TICKS_PER_COMMAND_MAX)
      throw new ScriptError(`at most ${TICKS_PER_COMMAND_MAX} ticks`);
    const r = this.live(arg);
    for (let i = 0; i < times; i++) r.tick();
    out.push(r.describe());
  }

  private crash(n: Node, out: string[]): void {
    if (!n.raft) throw new ScriptError(`node ${n.id} is already crashed`);
    n.raft = undefined;
    n.applied = [];
    const queued = this.inbox.get(n.id) ?? [];
    for (const m of queued) out.push(`dropped: ${describeMessage(m)} (crashed)`);
    this.inbox.set(n.id, []);
    if (out.length === 0) out.push(`${n.id} crashed`);
  }

  private restart(n: Node, out: string[]): void {
    if (n.raft) throw new ScriptError(`node ${n.id} is running`);
    n.raft = this.build(n);
    n.applied = n.storage.snapshot ? decodeAppState(n.storage.snapshot) : [];
    out.push(`${n.raft.describe()} ${describeConf(n.raft.conf())}`);
  }

  private setMutants(n: Node, list: string | undefined, out: string[]): void {
    if (list === undefined) throw new ScriptError('mutants ID NAME,...|none');
    n.mutants.clear();
    if (list !== 'none') {
      for (const name of list.split(',')) {
        if (!(MUTANT_NAMES as readonly string[]).includes(name))
          throw new ScriptError(`no mutant ${name}`);
        n.mutants.add(name as MutantName);
      }
    }
    out.push(`${n.id} mutants: ${n.mutants.size > 0 ? [...n.mutants].join(',') : 'none'}`);
  }

  // ---------------------------------------------------------------- Ready

  private processReady(n: Node, out: string[]): void {
    const r = n.raft;
    if (!r) throw new ScriptError(`node ${n.id} is crashed`);
    out.push(`> ${n.id} ready`);
    const rd = r.ready();
    const text = describeReady(rd);
    for (const line of text === '' ? ['(empty)'] : text.split('\n')) out.push(`  ${line}`);
    // 1. Persist: snapshot, then entries, then the hard state (one sync in a real replica).
    const st = n.storage;
    if (rd.snapshot) {
      st.snapshot = rd.snapshot;
      // Installing a snapshot replaced the whole log (Raft §7): nothing older survives.
      st.entries = [];
    }
    const firstNew = rd.entries[0];
    if (firstNew)
      st.entries = [...st.entries.filter((e) => e.index < firstNew.index), ...rd.entries];
    if (rd.hardState) st.hardState = rd.hardState;
    // 2. Send.
    for (const m of rd.messages) {
      const q = this.inbox.get(m.to) ?? [];
      q.push(m);
      this.inbox.set(m.to, q);
    }
    // 3. Apply.
    if (rd.snapshot) n.applied = decodeAppState(rd.snapshot);
    for (const e of rd.committedEntries) this.apply(n, e, out);
    r.advance();
    // Election Safety: at most one leader per term.
    const ss = rd.softState;
    if (ss?.role === 'leader') {
      const other = this.leaders.get(ss.term);
      if (other !== undefined && other !== n.id) {
        out.push(`!! election safety violated: ${other} and ${n.id} both lead term ${ss.term}`);
      } else {
        this.leaders.set(ss.term, n.id);
      }
    }
  }

  private apply(n: Node, e: Entry, out: string[]): void {
    const desc = describeEntry(e);
    const seen = this.appliedAt.get(e.index);
    if (seen === undefined) this.appliedAt.set(e.index, { entry: desc, by: n.id });
    else if (seen.entry !== desc) {
      out.push(
        `!! state machine safety violated: ${n.id} applied ${desc} at index ${e.index}, ` +
          `${seen.by} applied ${seen.entry}`,
      );
    }
    if (e.type === 'normal' && e.data.length > 0)
      n.applied.push({ index: e.index, text: decoder.decode(e.data) });
  }

  // ---------------------------------------------------------------- network

  private deliverMsgs(args: Args, out: string[]): boolean {
    const known = new Set(['type', 'drop']);
    for (const k of args.options.keys())
      if (!known.has(k)) throw new ScriptError(`deliver-msgs: unknown option ${k}`);
    const type = args.options.get('type');
    const dropList = args.options.get('drop');
    const drop = new Set((dropList ? dropList.split(',') : []).map((s) => parseInt10(s, 'drop')));
    const targets =
      args.positional.length > 0
        ? args.positional.map((s) => nodeId(parseInt10(s, 'deliver-msgs ID')))
        : [...new Set([...this.inbox.keys(), ...drop].map(nodeId))].sort((a, b) => a - b);
    let any = false;
    for (const to of targets) if (this.deliverTo(to, type, drop.has(to), out)) any = true;
    return any;
  }

  /** Deliver (or drop) what is queued for `to`; returns whether anything was taken. */
  private deliverTo(to: NodeId, type: string | undefined, drop: boolean, out: string[]): boolean {
    const queued = this.inbox.get(to) ?? [];
    const take = queued.filter((m) => type === undefined || m.type === type);
    if (take.length === 0) return false;
    this.inbox.set(
      to,
      queued.filter((m) => !take.includes(m)),
    );
    const n = this.nodes.get(to);
    out.push(`> ${to} receive`);
    for (const m of take) {
      let why: string | undefined;
      if (drop) why = 'drop';
      else if (!n) why = 'no such node';
      else if (!n.raft) why = 'crashed';
      else if (this.cuts.has(linkKey(m.from, m.to))) why = 'partition';
      const r = n?.raft;
      if (why !== undefined || r === undefined) {
        out.push(`  dropped: ${describeMessage(m)} (${why ?? 'crashed'})`);
        continue;
      }
      out.push(`  ${describeMessage(m)}`);
      try {
        r.step(m);
      } catch (e) {
        if (e instanceof AssertionError) out.push(`  error: ${e.message}`);
        else throw e;
      }
    }
    return true;
  }

  private stabilize(out: string[]): void {
    for (let round = 0; round < STABILIZE_ROUNDS_MAX; round++) {
      let any = false;
      for (const n of this.sortedNodes()) {
        if (n.raft?.hasReady()) {
          this.processReady(n, out);
          any = true;
        }
      }
      if (this.deliverMsgs({ positional: [], options: new Map() }, out)) any = true;
      if (!any) return;
    }
    out.push(`error: not stable after ${STABILIZE_ROUNDS_MAX} rounds`);
  }

  // ---------------------------------------------------------------- inspection

  private compact(
    arg: string | undefined,
    index: number,
    o: ReadonlyMap<string, string>,
    out: string[],
  ): void {
    const n = this.node(arg);
    const r = this.live(arg);
    const keep = o.has('keep') ? parseInt10(o.get('keep'), 'keep') : 0;
    const data = encodeAppState(n.applied.filter((c) => c.index <= index));
    const snap = r.compact(logIndex(index), data, keep);
    n.storage.snapshot = snap;
    n.storage.entries = n.storage.entries.filter((e) => e.index > r.log.snapshotIndex);
    out.push(`snapshot ${describeSnapshot(snap)}; log starts at ${r.log.firstIndex()}`);
  }

  private raftLog(r: Raft, out: string[]): void {
    const log = r.log;
    if (log.snapshotIndex > 0) out.push(`snapshot ${log.snapshotIndex}/${log.snapshotTerm}`);
    if (log.lastIndex() >= log.firstIndex()) {
      for (const e of log.slice(log.firstIndex(), log.lastIndex())) out.push(describeEntry(e));
    }
    if (out.length === 0) out.push('(empty)');
  }

  private showStorage(n: Node, out: string[]): void {
    const st = n.storage;
    out.push(`hard: ${st.hardState ? describeHardState(st.hardState) : '(none)'}`);
    if (st.snapshot) out.push(`snapshot: ${describeSnapshot(st.snapshot)}`);
    out.push(`entries: ${st.entries.length > 0 ? '' : '(none)'}`.trimEnd());
    for (const e of st.entries) out.push(`  ${describeEntry(e)}`);
  }

  private status(r: Raft, out: string[]): void {
    if (r.role !== 'leader') {
      out.push(`${r.id} is ${r.role}, not leader`);
      return;
    }
    for (const [id, pr] of [...r.progressView()].sort((a, b) => a[0] - b[0])) {
      out.push(`${id}: match=${pr.match} next=${pr.next} ${pr.state}`);
    }
  }
}

/** Split a script into its parts and return it with every case's output regenerated. */
export function runScript(text: string): string {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const result: string[] = [];
  const h = new Interaction();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as string;
    if (line.trim() === '' || line.startsWith('#')) {
      result.push(line);
      i++;
      continue;
    }
    // A case: command lines up to `----`.
    const startLine = i + 1;
    const commands: string[] = [];
    while (i < lines.length && lines[i] !== '----') {
      commands.push(lines[i] as string);
      i++;
    }
    if (i >= lines.length) throw new ScriptError(`line ${startLine}: command without ----`);
    i++; // the ---- line
    // Skip the old output, up to a blank line or the end.
    while (i < lines.length && (lines[i] as string).trim() !== '') i++;
    const output: string[] = [];
    for (const c of commands) {
      result.push(c);
      if (c.startsWith('#')) continue;
      if (c.trim() === '') throw new ScriptError(`line ${startLine}: blank line before ----`);
      const tokens = c.trim().split(/\s+/);
      const [cmd, ...rest] = tokens;
      try {
        output.push(...h.run(cmd as string, rest));
      } catch (e) {
        if (e instanceof ScriptError)
          throw new ScriptError(`line ${startLine}: ${c}: ${e.message}`);
        throw e;
      }
    }
    result.push('----', ...output);
  }
  return result.join('\n') + '\n';
}
