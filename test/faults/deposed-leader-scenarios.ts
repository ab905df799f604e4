// The three ways a member cut off from its peers, but not from its clients, broke its promises,
// replayed on real processes (deposed-leader.test.ts runs this file inside a private network
// namespace; see ns-cluster.ts):
//
//   renewals        a leader cut off and starved (SIGSTOP/SIGCONT) keeps answering keepalives
//                   after the majority elected another leader, which expires the lease by its own
//                   clock: the lease's key, a lock, goes before renewals the old leader answered
//                   ran out, and the next waiter is granted the lock.
//   forwarded-write a Put through a cut-off follower is answered as failed, and applied when the
//                   cut heals, over a newer acknowledged write.
//   late-unlock     an Unlock through a cut-off follower is applied when the cut heals, after its
//                   client unlocked through the leader and locked again with the same lease: it
//                   deletes the holder's new key and lets the next waiter in.
//   abandoned-unlock the same, but the client stops waiting for its first Unlock without
//                   cancelling it (a timeout of its own), so the member goes on serving it.
//
// Usage: node deposed-leader-scenarios.js SCENARIO [--tenure PATH/TO/bin/tenure]. The last line
// on stdout is a JSON verdict {scenario, violations, figures}; progress goes to stderr. Point
// --tenure at another checkout's bin/tenure to run the same attack on other code.
//
// Every time here is this process's monotonic clock (one machine, so one clock for the client and
// the members). A send time is read before the request is written and an observation time after
// the event arrived, so both errors make a violation less likely, never more.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { REFUSAL_MESSAGES } from '../../src/replica/member/leader-routing.js';
import type { EtcdGrpc, Message, Outcome } from '../compat/grpc-client.js';
import { repoRoot } from '../support/paths.js';
import { waitAtMost } from '../support/poll.js';
import { MEMBERS, NsCluster } from './ns-cluster.js';

export const SCENARIOS = [
  'renewals',
  'forwarded-write',
  'late-unlock',
  'abandoned-unlock',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface Verdict {
  readonly scenario: Scenario;
  readonly violations: readonly string[];
  readonly figures: Readonly<Record<string, number | string | boolean>>;
}

const RENEW_EVERY_MS = 100;
const LEASE_TTL_S = 3;
/** The issue's starvation: stopped 300 ms, running 30 ms, for 6 s. */
const STARVE_STOP_MS = 300;
const STARVE_RUN_MS = 30;
const STARVE_FOR_MS = 6_000;
/** A member's request timeout (tenure's and etcd's default). */
const REQUEST_TIMEOUT_MS = 7_000;
/** How long the follower stays cut off in forwarded-write: past its write's deadline. */
const WRITE_CUT_MS = 10_000;
/** How long the follower stays cut off in late-unlock: within every deadline. */
const UNLOCK_CUT_MS = 4_000;
/** The client's deadline for its first Unlock; then it goes to the leader. */
const UNLOCK_DEADLINE_MS = 2_000;
/**
 * After a cut heals, how long a held message may still arrive: TCP retransmits a dropped segment
 * with a doubling timeout, so the first retransmission after a 10 s cut comes within ~13 s of it.
 */
const HELD_DELIVERY_WAIT_MS = 15_000;
/** The same after a 4 s cut: the first retransmission comes within ~6.2 s of it. */
const HELD_AFTER_SHORT_CUT_WAIT_MS = 8_000;
/** Hang guards, not speed checks. */
const EXPIRY_WAIT_MS = 20_000;
const LONG_CALL_MS = 60_000;

const now = (): number => performance.now();
const log = (msg: string): void => void process.stderr.write(`[${now().toFixed(0)} ms] ${msg}\n`);

function ok(o: Outcome, what: string): Message {
  if ('error' in o) throw new Error(`${what}: ${o.error.code} ${o.error.details}`);
  return o.ok;
}

function header(m: Message): Message {
  return m.header as Message;
}

/** A LeaseKeepAlive stream that renews every 100 ms and pairs each answer with a send time. */
class Renewer {
  readonly answers: { sentMs: number; ttl: number; atMs: number }[] = [];
  streamErrors = 0;
  private pending: number[] = [];
  private call: ReturnType<EtcdGrpc['duplex']> | undefined;
  private stopped = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly client: EtcdGrpc,
    private readonly id: string,
  ) {
    this.open();
    this.timer = setInterval(() => this.send(), RENEW_EVERY_MS);
  }

  private open(): void {
    const call = this.client.duplex('Lease', 'LeaseKeepAlive');
    this.call = call;
    this.pending = [];
    // Answers come in request order; pairing an answer with the oldest unanswered send can only
    // date it earlier than it was sent, which weakens the promise it is judged by.
    call.on('data', (m: Message) => {
      const sentMs = this.pending.shift();
      if (sentMs !== undefined) this.answers.push({ sentMs, ttl: Number(m.TTL), atMs: now() });
    });
    const lost = (): void => {
      if (this.call !== call) return;
      this.call = undefined;
      this.streamErrors++;
      if (!this.stopped) setTimeout(() => !this.stopped && this.open(), RENEW_EVERY_MS);
    };
    call.on('error', lost);
    call.on('end', lost);
  }

  private send(): void {
    if (this.call === undefined) return;
    this.pending.push(now());
    this.call.write({ ID: this.id });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    const call = this.call;
    this.call = undefined;
    call?.on('error', () => undefined);
    call?.cancel();
  }
}

/** Watches `key` from `startRevision`; every event with the time it arrived. */
class KeyWatch {
  readonly events: { type: string; value: string; modRevision: number; atMs: number }[] = [];
  private readonly call: ReturnType<EtcdGrpc['duplex']>;

  constructor(client: EtcdGrpc, key: string, startRevision: number) {
    this.call = client.duplex('Watch', 'Watch');
    this.call.on('data', (m: Message) => {
      for (const e of (m.events as Message[] | undefined) ?? []) {
        const kv = e.kv as Message;
        this.events.push({
          type: String(e.type),
          value: Buffer.from(kv.value as Buffer).toString(),
          modRevision: Number(kv.mod_revision),
          atMs: now(),
        });
      }
    });
    this.call.on('error', () => undefined);
    this.call.write({
      create_request: { key: Buffer.from(key), start_revision: String(startRevision) },
    });
  }

  firstDeleteMs(): number | undefined {
    return this.events.find((e) => e.type === 'DELETE')?.atMs;
  }

  close(): void {
    this.call.cancel();
  }
}

/** A call whose answer is recorded with the time it came. */
function timed(p: Promise<Outcome>): { outcome?: Outcome; atMs?: number; done: Promise<void> } {
  const r: { outcome?: Outcome; atMs?: number; done: Promise<void> } = { done: Promise.resolve() };
  r.done = p.then((o) => {
    r.outcome = o;
    r.atMs = now();
  });
  return r;
}

async function grant(client: EtcdGrpc, ttlS: number): Promise<string> {
  return String(ok(await client.unary('Lease', 'LeaseGrant', { TTL: ttlS }), 'LeaseGrant').ID);
}

function lock(client: EtcdGrpc, name: string, lease: string, deadlineMs: number) {
  return client.unary('v3lockpb.Lock', 'Lock', { name: Buffer.from(name), lease }, deadlineMs);
}

function others(leader: number): [number, number] {
  const rest = Array.from({ length: MEMBERS }, (_, i) => i).filter((i) => i !== leader);
  return [rest[0] ?? 0, rest[1] ?? 0];
}

/** At most this many violations are listed; the count says how many there were. */
const LISTED_MAX = 5;

async function renewals(c: NsCluster): Promise<Verdict> {
  const L = await c.leader();
  const [p, q] = others(L);
  const onL = c.clients[L] as EtcdGrpc;
  const onP = c.clients[p] as EtcdGrpc;
  const lease = await grant(onL, LEASE_TTL_S);
  const held = ok(await lock(onL, 'renewed', lease, LONG_CALL_MS), 'Lock');
  const key = Buffer.from(held.key as Buffer).toString();
  const startRevision = Number(header(held).revision) + 1;
  const watches = [p, q].map((i) => new KeyWatch(c.clients[i] as EtcdGrpc, key, startRevision));
  const renewer = new Renewer(onL, lease);
  // The next waiter queues through a member of the majority.
  const other = timed(lock(onP, 'renewed', await grant(onP, 60), LONG_CALL_MS));
  await sleep(1_000);

  log(`cut m${L + 1} (the leader) from its peers; starve it for ${STARVE_FOR_MS} ms`);
  const cutMs = now();
  c.cut(L);
  while (now() < cutMs + STARVE_FOR_MS) {
    c.signal(L, 'SIGSTOP');
    await sleep(STARVE_STOP_MS);
    c.signal(L, 'SIGCONT');
    await sleep(STARVE_RUN_MS);
  }
  c.heal();
  const healMs = now();
  renewer.stop();
  log('healed; renewals stopped');

  const gone = (): number | undefined => {
    const t = watches.map((w) => w.firstDeleteMs()).filter((x) => x !== undefined);
    return t.length > 0 ? Math.min(...t) : undefined;
  };
  await waitAtMost(() => gone() !== undefined && other.atMs !== undefined, EXPIRY_WAIT_MS);
  for (const w of watches) w.close();
  const goneMs = gone();
  const grantedMs = other.outcome && 'ok' in other.outcome ? other.atMs : undefined;

  const violations: string[] = [];
  let worstEarlyMs = 0;
  for (const a of renewer.answers) {
    if (a.ttl <= 0) continue;
    const promisedMs = a.sentMs + a.ttl * 1000;
    for (const [what, atMs] of [
      ['the key was gone', goneMs],
      ['the next waiter held the lock', grantedMs],
    ] as const) {
      if (atMs === undefined || atMs >= promisedMs) continue;
      worstEarlyMs = Math.max(worstEarlyMs, promisedMs - atMs);
      violations.push(
        `a renewal sent ${(a.sentMs - cutMs).toFixed(0)} ms after the cut was answered TTL ` +
          `${a.ttl}, but ${what} ${(promisedMs - atMs).toFixed(0)} ms before it ran out`,
      );
    }
  }
  if (goneMs === undefined)
    violations.push(`the lease never expired (${EXPIRY_WAIT_MS} ms after the heal)`);
  const during = renewer.answers.filter((a) => a.atMs >= cutMs && a.atMs < healMs);
  return {
    scenario: 'renewals',
    violations: summarize(violations),
    figures: {
      renewalsAnswered: renewer.answers.length,
      renewalsAnsweredBeforeCut: renewer.answers.filter((a) => a.atMs < cutMs).length,
      renewalsAnsweredDuringCut: during.length,
      renewalsAnsweredDuringCutWithTtl: during.filter((a) => a.ttl > 0).length,
      keepaliveStreamErrors: renewer.streamErrors,
      keyGoneAfterCutMs: goneMs === undefined ? 'never' : Math.round(goneMs - cutMs),
      nextHolderAfterCutMs: grantedMs === undefined ? 'never' : Math.round(grantedMs - cutMs),
      worstEarlyMs: Math.round(worstEarlyMs),
    },
  };
}

function describe(o: Outcome | undefined): string {
  if (o === undefined) return 'no answer';
  return 'ok' in o ? 'ok' : `${o.error.code}: ${o.error.details}`;
}

/** A failure that says nothing was done, in the words etcd clients take at face value. */
function definiteFailure(o: Outcome | undefined): boolean {
  return o !== undefined && 'error' in o && REFUSAL_MESSAGES.has(o.error.details);
}

async function forwardedWrite(c: NsCluster): Promise<Verdict> {
  const L = await c.leader();
  const [f] = others(L);
  const onL = c.clients[L] as EtcdGrpc;
  const onF = c.clients[f] as EtcdGrpc;
  const put = (client: EtcdGrpc, value: string, deadlineMs = LONG_CALL_MS) =>
    client.unary('KV', 'Put', { key: Buffer.from('k'), value: Buffer.from(value) }, deadlineMs);
  const first = ok(await put(onL, 'v0'), 'Put v0');
  const watch = new KeyWatch(onL, 'k', Number(header(first).revision) + 1);

  log(`cut m${f + 1} (a follower) from its peers for ${WRITE_CUT_MS} ms`);
  const cutMs = now();
  c.cut(f);
  await sleep(100);
  const sentMs = now();
  const late = timed(put(onF, 'v1', 2 * REQUEST_TIMEOUT_MS));
  await sleep(1_500);
  const newer = ok(await put(onL, 'v2'), 'Put v2 through the leader');
  await sleep(Math.max(0, cutMs + WRITE_CUT_MS - now()));
  c.heal();
  const healMs = now();
  log('healed');
  const applied = () => watch.events.find((e) => e.value === 'v1');
  await waitAtMost(() => applied() !== undefined, HELD_DELIVERY_WAIT_MS);
  await late.done;
  watch.close();

  const v1 = applied();
  const v2Revision = Number(header(newer).revision);
  const violations: string[] = [];
  if (v1 !== undefined && definiteFailure(late.outcome))
    violations.push(
      `the write was answered "${describe(late.outcome)}" and applied at revision ` +
        `${v1.modRevision}, ${(v1.atMs - sentMs).toFixed(0)} ms after it was sent`,
    );
  if (v1 !== undefined && v1.atMs > sentMs + REQUEST_TIMEOUT_MS + 3_000)
    violations.push(
      `the write was applied ${(v1.atMs - sentMs).toFixed(0)} ms after it was sent, long past ` +
        `the member's ${REQUEST_TIMEOUT_MS} ms request timeout` +
        (v1.modRevision > v2Revision ? ', over a newer acknowledged write' : ''),
    );
  return {
    scenario: 'forwarded-write',
    violations,
    figures: {
      answer: describe(late.outcome),
      answeredAfterMs: late.atMs === undefined ? 'never' : Math.round(late.atMs - sentMs),
      applied: v1 !== undefined,
      appliedAfterMs: v1 === undefined ? 'never' : Math.round(v1.atMs - sentMs),
      appliedOverNewerWrite: v1 !== undefined && v1.modRevision > v2Revision,
      healedAfterMs: Math.round(healMs - sentMs),
    },
  };
}

/**
 * `abandon`: the client gives up on its first Unlock by a timer of its own and leaves the call
 * open, instead of the call's deadline ending it on the member too.
 */
async function lateUnlock(c: NsCluster, abandon: boolean): Promise<Verdict> {
  const L = await c.leader();
  const [f, p] = others(L);
  const onL = c.clients[L] as EtcdGrpc;
  const onF = c.clients[f] as EtcdGrpc;
  const lease = await grant(onL, 60);
  const held = ok(await lock(onL, 'mtx', lease, LONG_CALL_MS), 'Lock');
  const key = held.key as Buffer;

  log(`cut m${f + 1} (a follower) from its peers for ${UNLOCK_CUT_MS} ms`);
  const cutMs = now();
  c.cut(f);
  await sleep(100);
  const unlockDeadlineMs = abandon ? LONG_CALL_MS : UNLOCK_DEADLINE_MS;
  const firstUnlock = timed(onF.unary('v3lockpb.Lock', 'Unlock', { key }, unlockDeadlineMs));
  await Promise.race([firstUnlock.done, sleep(UNLOCK_DEADLINE_MS)]);
  // Told nothing definite, or told it failed, the client unlocks through the leader and locks
  // again with the same lease: the same key name, a newer key.
  ok(await onL.unary('v3lockpb.Lock', 'Unlock', { key }), 'Unlock through the leader');
  const again = ok(await lock(onL, 'mtx', lease, LONG_CALL_MS), 'Lock again');
  const againRevision = Number(header(again).revision);
  const next = timed(lock(c.clients[p] as EtcdGrpc, 'mtx', await grant(onL, 60), LONG_CALL_MS));
  await sleep(Math.max(0, cutMs + UNLOCK_CUT_MS - now()));
  c.heal();
  const healMs = now();
  log('healed');
  await waitAtMost(() => next.atMs !== undefined, HELD_AFTER_SHORT_CUT_WAIT_MS);
  await Promise.race([firstUnlock.done, sleep(HELD_AFTER_SHORT_CUT_WAIT_MS)]);
  const range = ok(await onL.unary('KV', 'Range', { key }), 'Range');
  const kv = ((range.kvs as Message[] | undefined) ?? [])[0];

  const violations: string[] = [];
  if (kv === undefined || Number(kv.create_revision) !== againRevision)
    violations.push(
      `the holder's key (created at revision ${againRevision}, its lease alive, never unlocked) ` +
        `is ${kv === undefined ? 'gone' : `now created at ${String(kv.create_revision)}`}`,
    );
  if (next.outcome !== undefined && 'ok' in next.outcome && next.atMs !== undefined)
    violations.push(
      `the next waiter was granted the lock ${(next.atMs - healMs).toFixed(0)} ms after the ` +
        `heal, while the holder's lease was alive`,
    );
  return {
    scenario: abandon ? 'abandoned-unlock' : 'late-unlock',
    violations,
    figures: {
      firstUnlock: describe(firstUnlock.outcome),
      firstUnlockAnsweredAfterHealMs:
        firstUnlock.atMs === undefined ? 'never' : Math.round(firstUnlock.atMs - healMs),
      holderKeyKept: kv !== undefined && Number(kv.create_revision) === againRevision,
      nextWaiterGranted: next.outcome !== undefined && 'ok' in next.outcome,
    },
  };
}

function summarize(violations: readonly string[]): string[] {
  if (violations.length <= LISTED_MAX) return [...violations];
  return [
    ...violations.slice(0, LISTED_MAX),
    `… ${violations.length - LISTED_MAX} more of the same kind`,
  ];
}

const RUN: Record<Scenario, (c: NsCluster) => Promise<Verdict>> = {
  renewals,
  'forwarded-write': forwardedWrite,
  'late-unlock': (c) => lateUnlock(c, false),
  'abandoned-unlock': (c) => lateUnlock(c, true),
};

async function main(): Promise<void> {
  const [name, ...rest] = process.argv.slice(2);
  if (!SCENARIOS.includes(name as Scenario))
    throw new Error(`usage: deposed-leader-scenarios ${SCENARIOS.join('|')} [--tenure BIN]`);
  const at = rest.indexOf('--tenure');
  const bin = at >= 0 ? rest[at + 1] : join(repoRoot(), 'bin', 'tenure');
  if (bin === undefined) throw new Error('--tenure needs a path to bin/tenure');
  log(`starting 3 members of ${bin}`);
  const c = await NsCluster.start(bin);
  try {
    const verdict = await RUN[name as Scenario](c);
    if (verdict.violations.length > 0) process.stderr.write(c.logTails() + '\n');
    process.stdout.write(JSON.stringify(verdict) + '\n');
  } catch (e) {
    process.stderr.write(c.logTails() + '\n');
    throw e;
  } finally {
    await c.stop();
  }
}

// Run as a script, not when the test imports the scenario names.
if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
