// Clock faults through libfaketime (Debian's `faketime` package: an LD_PRELOAD library that
// wraps clock_gettime, gettimeofday, time and the sleeps). A member is killed (-9) and started
// again under it, run so for a while under the workloads' load, then killed and started again
// with a true clock. Two classes:
//
//   clock-rate  FAKETIME='+0 xR', R 0.5 or 2: every clock of the member, CLOCK_MONOTONIC
//               included, runs at R times true time. libuv's timers (Node's setTimeout, hence
//               tenure's ticks, election timeouts and lease expiry) run off CLOCK_MONOTONIC, so
//               at ×2 the member's election timeout is half as long in true time and the TTLs it
//               grants as leader end twice as early. A lease is a promise made with clocks, so the
//               window goes to ctx.clocks for the lease checkers (clock-windows.ts); safety that
//               does not rest on clocks must hold as in any other step. The leader is the victim
//               sometimes (a third of the steps): the restarted member may win a later election
//               while skewed (its timeouts fire early at ×2), which is what the lease bound is
//               about (Raft thesis §6.4.1: leases rest on a bounded clock drift).
//   clock-jump  FAKETIME_TIMESTAMP_FILE with FAKETIME_NO_CACHE=1 (the file is read at every
//               clock call) and FAKETIME_DONT_FAKE_MONOTONIC=1: only the wall clock moves, by
//               what the file says, rewritten during the run (+100 s, −30 s, +1 h, then a
//               strobe between +1 h and −1 h). tenure orders by terms and indexes and measures
//               durations with the monotonic clock (src/server/clock.ts), so a wall clock jump
//               must change nothing. The member's log lines carry that wrong wall clock in
//               `time`; the report (report.ts) picks log lines by wall time, so during the window
//               this member's lines land in the wrong place in an anomaly's excerpt, or outside it.
//
// Each step first checks that the skew takes, in a throwaway process with the same environment
// (a library that did not load would leave the step a plain restart and the run green for
// nothing): for a rate, that a timer of 2 s there lasts 2/R s here; for a jump, that `date`
// there says our wall clock plus the offset.
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { faketimeLibraryName, findFaketimeLibrary } from '../launcher/faketime.js';
import { sleep } from '../launcher/poll.js';
import { ChaosError } from './errors.js';
import { currentLeader, otherThan, uniform } from './fault-kit.js';
import type { NemesisContext } from './nemesis.js';

/** How long the throwaway process's timer runs by its own (skewed) clock. */
const rateProbeTimerMs = 2_000;
/** A hang guard for the throwaway process. */
const rateProbeTimeoutMs = 30_000;
/** `date` there against our clock, plus the offset, may differ this much (start-up, rounding). */
const jumpToleranceS = 5;

/** The library's path (src/launcher/faketime.ts); a ChaosError naming the package if missing. */
export function faketimeLibrary(): string {
  const found = findFaketimeLibrary();
  if (found === undefined)
    throw new ChaosError(
      'SETUP',
      `the clock faults need ${faketimeLibraryName} from Debian's faketime package: apt-get install -y faketime`,
    );
  return found;
}

/** Seconds a throwaway process under `env` takes, on our clock, for a timer of its own 2 s. */
function rateProbe(env: Readonly<Record<string, string>>): Promise<number> {
  const script = `process.stdout.write('a');setTimeout(()=>process.stdout.write('b'),${rateProbeTimerMs})`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let startMs: number | undefined;
    const guard = setTimeout(() => child.kill('SIGKILL'), rateProbeTimeoutMs);
    child.stdout.on('data', (b: Buffer) => {
      const s = b.toString();
      if (s.includes('a')) startMs = performance.now();
      if (s.includes('b') && startMs !== undefined)
        resolve((performance.now() - startMs) / rateProbeTimerMs);
    });
    child.on('error', reject);
    child.on('exit', () => {
      clearTimeout(guard);
      reject(new Error('the rate probe ended without its timer'));
    });
  });
}

function skewNotSeen(ctx: NemesisContext, message: string): void {
  ctx.anomaly({
    workload: 'cluster',
    kind: 'skew-not-seen',
    message,
    atMs: performance.now(),
    excerpt: [],
  });
}

export async function clockRate(ctx: NemesisContext): Promise<void> {
  const c = ctx.members.cluster;
  const library = faketimeLibrary();
  const leader = await currentLeader(ctx);
  const x =
    leader !== undefined && ctx.prng.next() < 1 / 3 ? leader : otherThan(ctx.prng, c.size, leader);
  const rate = ctx.prng.next() < 0.5 ? 0.5 : 2;
  const ms = uniform(ctx.prng, 5_000, 12_000);
  const name = ctx.members.names[x] ?? String(x);
  const env = { LD_PRELOAD: library, FAKETIME: `+0 x${rate}` };
  const role = x === leader ? 'the leader ' : '';
  ctx.timeline.add(
    'clock-rate',
    `kill -9 ${role}${name}, restart at ×${rate} for ${ms.toFixed(0)} ms`,
  );
  // Started now, read once the member runs: the probe takes 2/R s either way.
  const probe = rateProbe(env).catch((e: unknown) =>
    e instanceof Error ? e : new Error(String(e)),
  );
  await c.kill(x, 'SIGKILL');
  ctx.clocks.begin(x, rate);
  try {
    // Inside the try: a window left open would judge every later lease at ×2's drift.
    await c.restart(x, env);
    // Real seconds per skewed second: 1/rate when the library took.
    const realPerSkewed = await probe;
    if (realPerSkewed instanceof Error) {
      skewNotSeen(ctx, `clock-rate ×${rate}: the probe failed: ${realPerSkewed.message}`);
    } else {
      const seen = 1 / realPerSkewed;
      // Nearer (in ratio) to the rate asked than to a true clock.
      const took = Math.abs(Math.log(seen / rate)) < Math.abs(Math.log(seen));
      ctx.timeline.add('note', `skew probe: clock ran at ×${seen.toFixed(2)} (asked ×${rate})`);
      if (!took) skewNotSeen(ctx, `clock-rate ×${rate} did not take: a probe ran at ×${seen}`);
    }
    await sleep(Math.max(0, ms - rateProbeTimerMs / rate), ctx.signal);
  } finally {
    await c.kill(x, 'SIGKILL');
    ctx.clocks.end(x);
    await c.restart(x);
    ctx.timeline.add('heal', `restarted ${name} with a true clock`);
  }
}

/** The wall clock offsets a clock-jump step goes through, in the timestamp file's syntax. */
function jumpPlan(ctx: NemesisContext): string[] {
  const strobe = Array.from({ length: ctx.prng.int(4, 9) }, (_, k) =>
    k % 2 === 0 ? '-3600' : '+3600',
  );
  return ['+100', '-30', '+3600', ...strobe, '+0'];
}

/** `date +%s` under `env` minus ours: the offset a process there sees, in seconds. */
function offsetSeenS(env: Readonly<Record<string, string>>): number {
  const out = execFileSync('date', ['+%s'], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return Number(out.trim()) - Date.now() / 1000;
}

export async function clockJump(ctx: NemesisContext): Promise<void> {
  const c = ctx.members.cluster;
  const x = ctx.prng.int(0, c.size);
  const name = ctx.members.names[x] ?? String(x);
  const file = join(c.dir, `faketime-${name}`);
  writeFileSync(file, '+0\n');
  const env = {
    LD_PRELOAD: faketimeLibrary(),
    FAKETIME_TIMESTAMP_FILE: file,
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
  const plan = jumpPlan(ctx);
  ctx.timeline.add(
    'clock-jump',
    `kill -9 ${name}, restart with its wall clock at ${plan.join(', ')} s`,
  );
  await c.kill(x, 'SIGKILL');
  await c.restart(x, env);
  try {
    for (const [k, offset] of plan.entries()) {
      // The first jumps held a while, the strobe fast.
      await sleep(
        k < 3 ? uniform(ctx.prng, 1_000, 3_000) : uniform(ctx.prng, 200, 600),
        ctx.signal,
      );
      writeFileSync(file, `${offset}\n`);
      const seen = offsetSeenS(env);
      if (Math.abs(seen - Number(offset)) > jumpToleranceS)
        skewNotSeen(
          ctx,
          `clock-jump to ${offset} s did not take: a probe saw ${seen.toFixed(1)} s`,
        );
    }
    ctx.timeline.add('note', `wall clock of ${name} jumped ${plan.length} times (probed each)`);
    await sleep(uniform(ctx.prng, 500, 2_000), ctx.signal);
  } finally {
    await c.kill(x, 'SIGKILL');
    await c.restart(x);
    ctx.timeline.add('heal', `restarted ${name} with a true clock`);
  }
}
