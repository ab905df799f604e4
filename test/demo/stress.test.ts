// The split-brain stress test (issue 6): five worker processes contend for one lock with a 2 s
// lease and write rows (writer, token, seq) to PostgreSQL while the test freezes them with
// SIGSTOP at random for 0.5–4 s, many pauses longer than the lease. A worker resumed after its
// lease expired writes as a zombie: it never checks its session first (stress-worker.ts).
//
// Through the fence (fencedTransaction) the accepted history, read back from PostgreSQL in the
// order the rows were accepted, must have no stale write and no interleaving (stale-writes.ts
// defines both). The same load with a plain INSERT must show a stale write — if it does not, the
// test cannot see the problem it guards against, and fails.
//
// Acceptance order is the `id` (bigserial) order. Through the fence it is exact: the id is drawn
// inside the transaction after the fence row is locked, and that lock is held to the commit, so
// the transactions of the scope draw ids in commit order. Unfenced, each INSERT commits on its
// own; two concurrent ones may commit in the other order of their ids, which is microseconds,
// against the seconds between a zombie's write and its successor's.
//
// Durations: the fenced run lasts FENCED_RUN_MS (60 s, as the issue asks). The unfenced run stops
// at its first stale write and lasts at most UNFENCED_RUN_MS_MAX (30 s). Pauses are random, from a
// seeded PRNG (the seed is printed; STRESS_SEED=<seed> replays the pause schedule, though not the
// processes' timing), and biased towards the current holder so that the runs contain many zombies.
import assert from 'node:assert/strict';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { prng, type Prng } from '../../src/core/base/index.js';
import { createFenceTable } from '../../src/fence/index.js';
import {
  checkHistory,
  describeWrite,
  type AcceptedWrite,
  type HistoryVerdict,
} from '../../src/demo/stale-writes.js';
import { running, track } from '../../src/launcher/processes.js';
import { startCluster } from '../cluster/cluster.js';
import { startPostgres } from '../fence/postgres-server.js';
import type {
  StressHostMessage,
  StressWorkerConfig,
  StressWorkerMessage,
  StressWorkerStats,
} from './stress-worker.js';

// The run's parameters, each with its reason.
/** The fenced run's length: the 60 s. */
const FENCED_RUN_MS = 60_000;
/** The unfenced run stops at its first stale write, or after this long (then the test fails). */
const UNFENCED_RUN_MS_MAX = 30_000;
/** How often the unfenced run looks for its first stale write. */
const UNFENCED_POLL_MS = 1_000;
const WORKERS = 5;
/** The lease TTL of every worker's session (the server's minimum). */
const TTL_SECONDS = 2;
/** Pause lengths: from shorter than a renewal interval to twice the TTL. */
const PAUSE_MS_MIN = 500;
const PAUSE_MS_MAX = 4_000;
/** Gap before each pause of one nemesis. */
const PAUSE_GAP_MS_MAX = 1_000;
/** Independent pausers: up to this many workers are frozen at once. */
const NEMESES = 2;
/** Chance that a pause goes to the worker that last reported holding the lock. */
const HOLDER_BIAS = 0.7;
const WRITES_PER_TENURE = 5;
/** Between two writes of a tenure: widens the window in which a pause makes a zombie. */
const WRITE_GAP_MS = 100;
/** After `stop`, how long a worker may take to exit before SIGKILL. */
const STOP_GRACE_MS = 20_000;
/** Examples of violations printed. */
const EXAMPLES_MAX = 5;

const workerPath = fileURLToPath(new URL('./stress-worker.js', import.meta.url));

interface LoadOptions {
  readonly label: 'fenced' | 'unfenced';
  readonly endpoints: readonly string[];
  readonly pgUrl: string;
  readonly pool: pg.Pool;
  readonly random: Prng;
  readonly durationMs: number;
  /** Polled every UNFENCED_POLL_MS; true ends the run early. */
  readonly stopWhen?: (history: AcceptedWrite[]) => boolean;
}

interface LoadResult {
  readonly history: AcceptedWrite[];
  readonly verdict: HistoryVerdict;
  readonly stats: StressWorkerStats[];
  readonly pauses: number;
  readonly pausesOverTtl: number;
  readonly elapsedMs: number;
}

async function readHistory(pool: pg.Pool, table: string): Promise<AcceptedWrite[]> {
  const r = await pool.query<{ writer: string; token: string; seq: number }>(
    `SELECT writer, token, seq FROM ${table} ORDER BY id`,
  );
  return r.rows.map((row) => ({ writer: row.writer, token: BigInt(row.token), seq: row.seq }));
}

class Worker {
  readonly index: number;
  readonly child: ChildProcess;
  readonly pid: number;
  stats: StressWorkerStats | undefined;
  frozen = false;
  output = '';
  readonly exited: Promise<void>;

  constructor(
    index: number,
    config: StressWorkerConfig,
    onMessage: (m: StressWorkerMessage) => void,
  ) {
    this.index = index;
    this.child = track(
      fork(workerPath, [JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] }),
    );
    if (this.child.pid === undefined) throw new Error(`worker ${index} did not start`);
    this.pid = this.child.pid;
    const keep = (b: Buffer): void => {
      this.output = (this.output + b.toString()).slice(-4_000);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.child.on('message', (m: StressWorkerMessage) => {
      if (m.type === 'stats') this.stats = m.stats;
      onMessage(m);
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  get running(): boolean {
    return running(this.child);
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT' | 'SIGKILL'): void {
    if (!this.running) return;
    try {
      process.kill(this.pid, sig);
    } catch {
      // exited between the check and the signal
    }
  }

  /** Resume, ask to stop, wait up to STOP_GRACE_MS, then SIGKILL by PID. */
  async stop(): Promise<void> {
    this.signal('SIGCONT');
    this.frozen = false;
    if (!this.running) return;
    this.child.send({ type: 'stop' } satisfies StressHostMessage);
    const late = await Promise.race([
      this.exited.then(() => false),
      sleep(STOP_GRACE_MS).then(() => true),
    ]);
    if (late) {
      this.signal('SIGKILL');
      await this.exited;
    }
  }
}

async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const run = randomBytes(3).toString('hex');
  const table = `stress_${o.label}_${run}`;
  await o.pool.query(
    `CREATE TABLE ${table} (id bigserial PRIMARY KEY, writer text NOT NULL, token bigint NOT NULL, seq int NOT NULL)`,
  );
  let holder: Worker | undefined;
  const workers: Worker[] = [];
  let pauses = 0;
  let pausesOverTtl = 0;
  const done = new AbortController();
  const started = performance.now();

  const nemesis = async (random: Prng): Promise<void> => {
    while (!done.signal.aborted) {
      await sleep(random.int(0, PAUSE_GAP_MS_MAX + 1), undefined, { signal: done.signal });
      const candidates = workers.filter((w) => w.running && !w.frozen);
      if (candidates.length === 0) continue;
      const target =
        holder !== undefined && candidates.includes(holder) && random.chance(HOLDER_BIAS)
          ? holder
          : random.pick(candidates);
      const pauseMs = random.int(PAUSE_MS_MIN, PAUSE_MS_MAX + 1);
      target.frozen = true;
      target.signal('SIGSTOP');
      pauses += 1;
      if (pauseMs > TTL_SECONDS * 1000) pausesOverTtl += 1;
      try {
        await sleep(pauseMs, undefined, { signal: done.signal });
      } finally {
        target.signal('SIGCONT');
        target.frozen = false;
      }
    }
  };

  const nemeses: Promise<void>[] = [];
  try {
    for (let i = 0; i < WORKERS; i++) {
      const config: StressWorkerConfig = {
        writer: `w${i + 1}`,
        endpoints: o.endpoints,
        pgUrl: o.pgUrl,
        lockName: `stress/${o.label}/${run}`,
        scope: `stress/${o.label}/${run}`,
        table,
        fenced: o.label === 'fenced',
        ttlSeconds: TTL_SECONDS,
        writesPerTenure: WRITES_PER_TENURE,
        writeGapMs: WRITE_GAP_MS,
      };
      const w: Worker = new Worker(i, config, (m) => {
        if (m.type === 'holding') holder = w;
        else if (m.type === 'released' && holder === w) holder = undefined;
      });
      workers.push(w);
    }
    for (let i = 0; i < NEMESES; i++) {
      nemeses.push(
        nemesis(o.random.fork(`nemesis-${i}`)).catch((e: unknown) => {
          if (!done.signal.aborted) throw e;
        }),
      );
    }
    while (performance.now() - started < o.durationMs) {
      await sleep(Math.min(UNFENCED_POLL_MS, o.durationMs));
      if (workers.every((w) => !w.running)) {
        throw new Error(`every worker exited early:\n${workers.map((w) => w.output).join('\n')}`);
      }
      if (o.stopWhen?.(await readHistory(o.pool, table))) break;
    }
  } finally {
    done.abort();
    await Promise.allSettled(nemeses);
    await Promise.all(workers.map((w) => w.stop()));
  }
  const elapsedMs = performance.now() - started;
  const history = await readHistory(o.pool, table);
  const stats = workers.map(
    (w) =>
      w.stats ?? {
        writer: `w${w.index + 1}`,
        tenures: 0,
        accepted: 0,
        rejected: 0,
        zombieAttempts: 0,
        errors: 0,
        lastError: `no stats (killed?) ${w.output}`,
      },
  );
  return { history, verdict: checkHistory(history), stats, pauses, pausesOverTtl, elapsedMs };
}

function report(t: TestContext, label: string, r: LoadResult): void {
  const sum = (f: (s: StressWorkerStats) => number): number =>
    r.stats.reduce((a, s) => a + f(s), 0);
  t.diagnostic(
    `${label}: ${(r.elapsedMs / 1000).toFixed(1)} s, ${sum((s) => s.tenures)} tenures ` +
      `(${r.verdict.holders} holders with accepted writes), ${r.history.length} writes accepted ` +
      `(workers counted ${sum((s) => s.accepted)}), ${sum((s) => s.rejected)} rejected ` +
      `(StaleTokenError), ${sum((s) => s.zombieAttempts)} writes sent by a holder whose grant was no longer valid (zombies), ` +
      `${r.pauses} pauses (${r.pausesOverTtl} longer than the ${TTL_SECONDS} s TTL), ` +
      `${sum((s) => s.errors)} worker errors`,
  );
  t.diagnostic(
    `${label}: ${r.verdict.staleWrites.length} stale writes accepted, ` +
      `${r.verdict.interleavings.length} interleaved writes`,
  );
  for (const s of r.verdict.staleWrites.slice(0, EXAMPLES_MAX)) {
    t.diagnostic(
      `${label}: stale write #${s.index} ${describeWrite(s.write)} after token ${s.highestBefore}`,
    );
  }
  for (const s of r.stats) {
    if (s.lastError !== '') t.diagnostic(`${label}: ${s.writer} last error: ${s.lastError}`);
  }
}

test(
  'stress: zombies frozen past their lease never get a stale write through the PostgreSQL fence; ' +
    'without the fence they do',
  { timeout: FENCED_RUN_MS + UNFENCED_RUN_MS_MAX + 180_000 },
  async (t) => {
    const seed = Number(process.env.STRESS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    t.diagnostic(`seed ${seed} (STRESS_SEED=${seed} replays the pause schedule)`);
    const random = prng(seed);
    await using cluster = await startCluster({ kind: 'tenure', size: 3 });
    await using pgServer = await startPostgres({ database: 'stress' });
    const pool = new pg.Pool({ connectionString: pgServer.url, max: 2 });
    pool.on('error', () => {});
    try {
      await createFenceTable(pool);
      const common = { endpoints: cluster.endpoints, pgUrl: pgServer.url, pool };

      const fenced = await runLoad({
        ...common,
        label: 'fenced',
        random: random.fork('fenced'),
        durationMs: FENCED_RUN_MS,
      });
      report(t, 'fenced', fenced);
      assert.ok(fenced.history.length > 0, 'the fenced run accepted no write at all');
      assert.ok(
        fenced.stats.some((s) => s.zombieAttempts > 0),
        'no worker wrote as a zombie: the fenced run did not exercise the hazard',
      );
      assert.deepEqual(
        fenced.verdict.staleWrites.slice(0, EXAMPLES_MAX).map((s) => describeWrite(s.write)),
        [],
        'the fence let stale writes through',
      );
      assert.equal(fenced.verdict.interleavings.length, 0, 'holders interleaved through the fence');

      const unfenced = await runLoad({
        ...common,
        label: 'unfenced',
        random: random.fork('unfenced'),
        durationMs: UNFENCED_RUN_MS_MAX,
        stopWhen: (history) => checkHistory(history).staleWrites.length > 0,
      });
      report(t, 'unfenced', unfenced);
      assert.ok(
        unfenced.verdict.staleWrites.length > 0,
        `the unfenced run showed no stale write in ${UNFENCED_RUN_MS_MAX} ms: the test cannot ` +
          'see the problem it guards against',
      );
    } finally {
      await pool.end();
    }
  },
);
