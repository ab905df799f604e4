// The split-brain demo (issue 6): a lock holder frozen past its lease keeps writing after its
// successor has, and only a fence at the store stops it.
//
//   1. worker-1 takes the lock (token N) and writes part 1 of its record;
//   2. the demo freezes it with SIGSTOP before it writes part 2, like a long GC pause;
//   3. its lease runs out, the lock passes to worker-2 (token N+1), which writes every part;
//   4. the demo resumes worker-1 with SIGCONT: it goes on with parts 2.. as planned, without
//      looking at its session — a zombie.
//
// Run once against a fenced store and once against an unfenced one: fenced, the zombie's writes
// are refused (StaleTokenError with both tokens) and the record is worker-2's alone; unfenced,
// they are accepted and the record mixes parts of worker-1 and worker-2. The pause is not a sleep
// of a chosen length: worker-1 stays frozen until worker-2 has been granted the lock (which the
// cluster allows only once worker-1's lease has expired) and has written.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Observed, WorkerMessage } from './protocol.js';
import {
  FileRecordStore,
  PostgresRecordStore,
  partsMax,
  type RecordPart,
  type RecordStore,
  type StoreBackend,
} from './record-store.js';
import { checkHistory, describeHolder, type AcceptedWrite } from './stale-writes.js';
import type { Timeline } from './timeline.js';
import { DemoWorker } from './worker-process.js';

// Named limits.
/** Bound on each step of a worker that does not wait for the lock (start, write, release). */
const stepTimeoutMs = 15_000;
/** Bound on worker-2's wait for the lock, on top of the lease TTL. */
const takeoverSlackMs = 15_000;

export interface ScenarioOptions {
  readonly endpoints: readonly string[];
  readonly store: RecordStore;
  readonly lockName: string;
  /** Lease TTL of the workers' sessions, in seconds (the server's minimum is 2). */
  readonly ttlSeconds: number;
  /** Parts of the record, ≥ 2 (the zombie must have a part left after its pause). */
  readonly parts: number;
  readonly timeline: Timeline;
  readonly signal?: AbortSignal;
}

/** One write as the store saw it. */
export interface WriteAttempt {
  readonly writer: string;
  readonly token: bigint;
  readonly part: number;
  readonly accepted: boolean;
  /** Sent after the lock had been granted to a higher token: a zombie's write. */
  readonly zombie: boolean;
  /** For a refused write, the StaleTokenError's tokens. */
  readonly rejection?: { readonly presented: bigint; readonly current: bigint };
  /** What the SDK said in the writer just before it sent the write. */
  readonly observed: Observed;
}

export interface ScenarioResult {
  readonly fenced: boolean;
  readonly store: string;
  readonly lockName: string;
  /** Fencing tokens in the order the lock granted them (worker-1's, worker-2's). */
  readonly tokens: readonly bigint[];
  readonly writes: readonly WriteAttempt[];
  /** Zombie writes sent (accepted or not). */
  readonly zombieWrites: number;
  /** Accepted writes with a token below one accepted before them (stale-writes.ts). */
  readonly staleWritesAccepted: number;
  /** Writes the store refused with StaleTokenError. */
  readonly staleWritesRejected: number;
  /** Accepted writes of one holder landing inside another's run of writes (stale-writes.ts). */
  readonly interleavings: number;
  readonly finalRecord: readonly RecordPart[];
  /** The final record holds parts of more than one holder. */
  readonly finalRecordMixed: boolean;
  /** How long worker-1 was frozen, in ms. */
  readonly frozenMs: number;
  /** What worker-1's SDK said on its first write after the pause. */
  readonly observedOnResume: Observed | undefined;
}

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  if (!(o.parts >= 2 && o.parts <= partsMax)) {
    throw new RangeError(`split-brain: parts must be in [2, ${partsMax}] (got ${o.parts})`);
  }
  const t = o.timeline;
  const workers: DemoWorker[] = [];
  const grants: bigint[] = [];
  const writes: WriteAttempt[] = [];
  const highestGrant = (): bigint => grants.reduce((a, b) => (b > a ? b : a), 0n);

  const start = (name: string): DemoWorker => {
    const w = DemoWorker.start({
      name,
      endpoints: o.endpoints,
      lockName: o.lockName,
      ttlSeconds: o.ttlSeconds,
      parts: o.parts,
      acquireTimeoutMs: o.ttlSeconds * 1000 + takeoverSlackMs,
    });
    workers.push(w);
    t.event(name, `started (pid ${w.pid}), asks for lock "${o.lockName}"`);
    return w;
  };

  const awaitGrant = async (w: DemoWorker, timeoutMs: number): Promise<bigint> => {
    for (;;) {
      const m: WorkerMessage = await w.next(timeoutMs, o.signal);
      if (m.type === 'queued') {
        if (m.predecessor !== undefined) {
          t.event(w.name, `queued (key revision ${m.token}), waits for ${m.predecessor} to go`);
        }
        continue;
      }
      if (m.type !== 'granted') throw new Error(`${w.name}: expected granted, got ${m.type}`);
      const token = BigInt(m.token);
      grants.push(token);
      t.event(w.name, `holds the lock: token ${token}, lease TTL ${m.ttlSeconds} s`);
      return token;
    }
  };

  /** Take one write from `w`, apply it, report it; `beforeReply` runs between apply and reply. */
  const serveWrite = async (w: DemoWorker, beforeReply?: () => void): Promise<WriteAttempt> => {
    const m = await w.expect('write', stepTimeoutMs, o.signal);
    const token = BigInt(m.token);
    const zombie = token < highestGrant();
    const outcome = await o.store.write(m.part, w.name, token);
    const attempt: WriteAttempt = outcome.accepted
      ? { writer: w.name, token, part: m.part, accepted: true, zombie, observed: m.observed }
      : {
          writer: w.name,
          token,
          part: m.part,
          accepted: false,
          zombie,
          rejection: { presented: outcome.error.presented, current: outcome.error.current },
          observed: m.observed,
        };
    writes.push(attempt);
    const what = `writes part ${m.part}/${o.parts} with token ${token}`;
    if (outcome.accepted) {
      t.event(w.name, `${what}: ${zombie ? 'ACCEPTED (a stale write)' : 'accepted'}`);
    } else {
      const e = outcome.error;
      t.event(
        w.name,
        `${what}: REJECTED, ${e.name} ${e.code} (presented ${e.presented}, current ${e.current})`,
      );
    }
    if (zombie) {
      t.note(
        `a zombie: the lock is at token ${highestGrant()} now. It did not look; had it looked, ` +
          `grant.signal.aborted=${m.observed.signalAborted}, session.valid()=${m.observed.sessionValid}`,
      );
    }
    beforeReply?.();
    w.send({
      type: 'write-result',
      part: m.part,
      reply: outcome.accepted
        ? { type: 'accepted' }
        : {
            type: 'rejected',
            code: outcome.error.code,
            presented: outcome.error.presented.toString(),
            current: outcome.error.current.toString(),
          },
    });
    return attempt;
  };

  let frozenMs = 0;
  try {
    t.event('store', o.store.description);
    const w1 = start('worker-1');
    await awaitGrant(w1, stepTimeoutMs);
    let frozenAtMs = 0;
    await serveWrite(w1, () => {
      w1.freeze();
      frozenAtMs = t.elapsedMs();
      t.event(
        'demo',
        `SIGSTOP worker-1 (pid ${w1.pid}) before part 2: frozen as in a long GC pause, ` +
          `while its lease runs out`,
      );
    });
    const w2 = start('worker-2');
    await awaitGrant(w2, o.ttlSeconds * 1000 + takeoverSlackMs);
    t.note(`(the cluster let worker-1's lease expire and deleted its lock key)`);
    for (let part = 1; part <= o.parts; part++) await serveWrite(w2);
    await w2.expect('wrote-all', stepTimeoutMs, o.signal);
    t.event('worker-2', `has written its whole record and still holds the lock`);
    w1.resume();
    frozenMs = t.elapsedMs() - frozenAtMs;
    t.event(
      'demo',
      `SIGCONT worker-1 after ${(frozenMs / 1000).toFixed(2)} s frozen (lease TTL ` +
        `${o.ttlSeconds} s): it carries on with part 2 as it had decided to`,
    );
    for (let part = 2; part <= o.parts; part++) await serveWrite(w1);
    await w1.expect('wrote-all', stepTimeoutMs, o.signal);
    for (const w of workers) w.send({ type: 'release' });
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
  t.event('demo', `workers stopped (pids ${workers.map((w) => w.pid).join(', ')})`);

  const finalRecord = await o.store.read();
  const accepted: AcceptedWrite[] = writes
    .filter((w) => w.accepted)
    .map((w) => ({ writer: w.writer, token: w.token, seq: w.part }));
  const verdict = checkHistory(accepted);
  const holders = new Set(finalRecord.map((p) => describeHolder(p)));
  const result: ScenarioResult = {
    fenced: o.store.fenced,
    store: o.store.description,
    lockName: o.lockName,
    tokens: grants,
    writes,
    zombieWrites: writes.filter((w) => w.zombie).length,
    staleWritesAccepted: verdict.staleWrites.length,
    staleWritesRejected: writes.filter((w) => !w.accepted).length,
    interleavings: verdict.interleavings.length,
    finalRecord,
    finalRecordMixed: holders.size > 1,
    frozenMs: Math.round(frozenMs),
    observedOnResume: writes.find((w) => w.zombie)?.observed,
  };
  const parts = finalRecord.map((p) => `part ${p.part} ${describeHolder(p)}`).join(' | ');
  t.event('store', `final record: ${parts}`);
  t.note(
    result.finalRecordMixed
      ? `CORRUPT: the record mixes parts of ${[...holders].join(' and ')}`
      : `consistent: every part from ${[...holders].join('')}`,
  );
  t.note(
    `stale writes: ${result.staleWritesAccepted} accepted, ${result.staleWritesRejected} rejected ` +
      `(of ${result.zombieWrites} zombie writes)`,
  );
  return result;
}

export interface SplitBrainOptions {
  readonly endpoints: readonly string[];
  readonly backend: StoreBackend;
  /** PostgreSQL connection string, for backend 'postgres'. */
  readonly pgUrl?: string;
  readonly ttlSeconds: number;
  readonly parts: number;
  readonly timeline: Timeline;
  readonly signal?: AbortSignal;
}

export interface SplitBrainReport {
  readonly fenced: ScenarioResult;
  readonly unfenced: ScenarioResult;
}

/** The verdict the demo exits on: the fence stopped every stale write, and without it some landed. */
export function demoHolds(r: SplitBrainReport): boolean {
  return (
    r.fenced.staleWritesAccepted === 0 &&
    r.fenced.staleWritesRejected > 0 &&
    r.unfenced.staleWritesAccepted > 0
  );
}

async function openStore(o: SplitBrainOptions, dir: string, fenced: boolean): Promise<RecordStore> {
  if (o.backend === 'files') return FileRecordStore.open(dir, fenced);
  if (o.pgUrl === undefined) throw new RangeError('split-brain: the postgres store needs pgUrl');
  return PostgresRecordStore.open(o.pgUrl, fenced);
}

/** Both runs, fenced then unfenced, each with its own store and lock name. */
export async function runSplitBrain(o: SplitBrainOptions): Promise<SplitBrainReport> {
  const t = o.timeline;
  const run = randomBytes(3).toString('hex');
  const root = await mkdtemp(join(tmpdir(), 'tenure-split-brain-'));
  try {
    const scenario = async (fenced: boolean): Promise<ScenarioResult> => {
      const label = fenced ? 'fenced' : 'unfenced';
      const store = await openStore(o, join(root, label), fenced);
      try {
        return await runScenario({
          endpoints: o.endpoints,
          store,
          lockName: `tenure-demo/split-brain/${run}/${label}`,
          ttlSeconds: o.ttlSeconds,
          parts: o.parts,
          timeline: t,
          ...(o.signal === undefined ? {} : { signal: o.signal }),
        });
      } finally {
        await store.close();
      }
    };
    t.heading('== 1. With the fence: the store checks every write’s token');
    const fenced = await scenario(true);
    t.heading('== 2. Without the fence: the same scenario, the store writes what arrives');
    const unfenced = await scenario(false);
    return { fenced, unfenced };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/** The report as JSON-ready data (tokens as numbers: revisions are far below 2^53). */
export function reportJson(r: SplitBrainReport): Record<string, unknown> {
  const n = (b: bigint): number => {
    const v = Number(b);
    if (!Number.isSafeInteger(v)) throw new RangeError(`token ${b} does not fit a JSON number`);
    return v;
  };
  const scenario = (s: ScenarioResult): Record<string, unknown> => ({
    staleWritesAccepted: s.staleWritesAccepted,
    staleWritesRejected: s.staleWritesRejected,
    zombieWrites: s.zombieWrites,
    interleavings: s.interleavings,
    tokens: s.tokens.map(n),
    finalRecord: s.finalRecord.map((p) => ({ part: p.part, writer: p.writer, token: n(p.token) })),
    finalRecordMixed: s.finalRecordMixed,
    frozenMs: s.frozenMs,
    observedOnResume: s.observedOnResume ?? null,
    store: s.store,
    lockName: s.lockName,
    writes: s.writes.map((w) => ({
      writer: w.writer,
      token: n(w.token),
      part: w.part,
      accepted: w.accepted,
      zombie: w.zombie,
      ...(w.rejection === undefined
        ? {}
        : { rejection: { presented: n(w.rejection.presented), current: n(w.rejection.current) } }),
    })),
  });
  return { fenced: scenario(r.fenced), unfenced: scenario(r.unfenced) };
}
