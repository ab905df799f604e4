// Disk faults on one member's data directory, through the sync shim (sync-shim.ts).
//
// wal-tail: a torn write. The member is restarted over the shim and, under load, its disk stops
// taking syncs (mode 'hang': every fsync and fdatasync from then on never returns, as when the
// power goes); it is killed (-9), and the part of its WAL that no sync ever covered is cut at a
// random byte (truncated) or zeroed from there to the end of the records; then it is started
// again. The WAL's framing ([length][crc][payload], wal.ts) exists for this: recovery must find a
// damaged last record with nothing valid after it, cut it off, and the member must catch up from
// the leader with no anomaly in the workloads. Zeroing models the same tear on a preallocated file
// (file-disk.ts): past the last record the file is zeros already, so the zeros end the log there.
//
// Why only what no sync covered. A torn write can only damage what was not yet durable: bytes
// whose fdatasync returned are on the disk, that is what the sync promised. Raft assumes a member
// keeps what it made durable: its vote (HardState) and the entries it acknowledged, which the
// leader counted toward a commit and remembers as the member's match index. A member that lost a
// durable suffix and still votes can elect a leader without committed entries, or vote twice in
// one term ("Protocol-Aware Recovery for Consensus-Based Storage", Alagappan et al., FAST'18);
// and a leader whose follower lost acknowledged entries ignores its rejections as stale (etcd
// raft's maybeDecrTo: a rejected index at or below Match) and never sends them again. That is
// disk corruption, a different fault, which Raft is not built to survive. A first version of this
// fault cut into the last record after a plain kill -9, which a kill does not tear (the page cache
// keeps every written byte) and whose sync had often returned: the restarted member sat forever
// below the leader's match index for it (seed 14), exactly as that analysis says. Hence the shim:
// its record says how far the last successful sync reached, and the cut starts past it.
//
// fsync-fail: a disk whose fsync fails (fail-stop). The member is restarted over the shim in mode
// 'fail': once triggered, every fsync and fdatasync fails with EIO. tenure's file disk then stops
// the process with exit code 70 (file-disk.ts: after a failed writeback Linux may mark the pages
// clean, so no retry; "fsyncgate", PostgreSQL, 2018); nothing whose sync failed was acknowledged
// (the workloads' checkers judge that). What such a disk held is in doubt, so the disk is
// "replaced": the member is removed, its data wiped, and it is added again (faults-membership.ts).
// A loop-mounted ext4 on a small tmpfs that fills (a real kernel EIO path) was the first choice
// but does not fail on time: tenure preallocates its WAL in 1 MiB steps of zeros and overwrites
// them in place, so a sync needs no new backing pages until the next step, which at the chaos
// load can be minutes away; the shim fails the next sync.
import { existsSync, openSync, closeSync, readFileSync, rmSync, statSync } from 'node:fs';
import { truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { pollUntil, sleep } from '../launcher/poll.js';
import { probeStatus } from '../launcher/readiness.js';
import { currentLeader, exitedWithin, otherThan, uniform } from './fault-kit.js';
import { replaceMember } from './faults-membership.js';
import type { NemesisContext } from './nemesis.js';
import { syncShim, syncShimEnv, type SyncShimMode } from './sync-shim.js';

/**
 * The WAL's file in the data dir and its framing, [length u32 LE][crc32 u32 LE][payload] (wal.ts,
 * file-disk.ts), read here from the outside: the chaos layer runs members, it does not import
 * their code.
 */
const walFile = 'wal';
const headerBytes = 8;
/** Hang guards, not speed checks. */
const failStopTimeoutMs = 30_000;
const upTimeoutMs = 30_000;
const hangSeenTimeoutMs = 15_000;
const pollMs = 100;
/** The member's exit code on a disk failure (src/server/node.ts EXIT_DISK_FAILURE). */
const exitDiskFailure = 70;

/** Where the valid records of a WAL end (at the first damaged one or the zeros). */
export function recordsEnd(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  while (pos + headerBytes <= bytes.length) {
    const len = view.getUint32(pos, true);
    const end = pos + headerBytes + len;
    if (len === 0 || end > bytes.length) break;
    const crc = crc32(bytes.subarray(pos + headerBytes, end)) >>> 0;
    if (crc !== view.getUint32(pos + 4, true)) break;
    pos = end;
  }
  return pos;
}

/** How far the last successful sync of the file with inode `ino` reached, from the record. */
export function syncedEnd(record: string, ino: number): number | undefined {
  if (!existsSync(record)) return undefined;
  let end: number | undefined;
  for (const line of readFileSync(record, 'utf8').split('\n')) {
    const [i, e] = line.trim().split(/\s+/);
    if (Number(i) === ino && e !== undefined) end = Math.max(end ?? 0, Number(e));
  }
  return end;
}

interface Shimmed {
  readonly trigger: string;
  readonly record: string;
}

/** Kill member x and start it again over the shim; resolve once it answers, and a while later. */
async function restartShimmed(ctx: NemesisContext, x: number, mode: SyncShimMode) {
  const c = ctx.members.cluster;
  const name = ctx.members.names[x] ?? String(x);
  const trigger = join(c.dir, `sync-${mode}-${name}`);
  const record = `${trigger}.record`;
  for (const f of [trigger, `${trigger}.hung`, record]) rmSync(f, { force: true });
  await c.kill(x, 'SIGKILL');
  await c.restart(x, syncShimEnv(syncShim(c.dir), mode, trigger, record));
  const endpoint = c.endpoints[x] ?? '';
  await pollUntil(
    `${name} to answer`,
    async () => (await probeStatus(endpoint, ctx.signal).catch(() => undefined)) !== undefined,
    { timeoutMs: upTimeoutMs, intervalMs: pollMs, signal: ctx.signal },
  ).catch(() => undefined);
  await sleep(uniform(ctx.prng, 1_000, 3_000), ctx.signal);
  return { trigger, record } satisfies Shimmed;
}

/** Cut or zero `file` from a random byte of [fromByte, toByte) on; what was done. */
function tear(ctx: NemesisContext, file: string, fromByte: number, toByte: number): string {
  const zero = ctx.prng.next() < 0.5;
  const at = ctx.prng.int(fromByte, toByte);
  if (!zero) {
    truncateSync(file, at);
    return `truncated at ${at}`;
  }
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, Buffer.alloc(toByte - at), 0, toByte - at, at);
  } finally {
    closeSync(fd);
  }
  return `zeroed from ${at} to ${toByte}`;
}

export async function walTail(ctx: NemesisContext): Promise<void> {
  const c = ctx.members.cluster;
  const x = ctx.prng.int(0, c.size);
  const name = ctx.members.names[x] ?? String(x);
  const file = join(c.dataDirs[x] ?? '', walFile);
  ctx.timeline.add('wal-tail', `${name}'s disk will stop syncing; then kill -9, tear its WAL tail`);
  const { trigger, record } = await restartShimmed(ctx, x, 'hang');
  writeFileSync(trigger, '');
  // A sync must have stuck, so that something was written that no sync covers; then more.
  const hung = await pollUntil(`a sync of ${name} to hang`, () => existsSync(`${trigger}.hung`), {
    timeoutMs: hangSeenTimeoutMs,
    intervalMs: pollMs,
    signal: ctx.signal,
  }).then(
    () => true,
    () => false,
  );
  await sleep(uniform(ctx.prng, 100, 1_000), ctx.signal);
  await c.kill(x, 'SIGKILL');
  try {
    if (!hung || !existsSync(file)) {
      ctx.timeline.add('note', `${name} never synced after the trigger; its WAL left whole`);
      return;
    }
    const bytes = new Uint8Array(readFileSync(file));
    const end = recordsEnd(bytes);
    const synced = syncedEnd(record, statSync(file).ino);
    if (synced === undefined) {
      // The WAL was replaced (a snapshot) since its last recorded sync: nothing known unsynced.
      ctx.timeline.add('note', `${name}: no sync recorded for its WAL; left whole`);
    } else if (end <= synced) {
      ctx.timeline.add('note', `${name}: every record was synced (to ${synced}); left whole`);
    } else {
      const how = tear(ctx, file, synced, end);
      ctx.timeline.add('note', `${name}: unsynced WAL tail [${synced}, ${end}) ${how}`);
    }
  } finally {
    for (const f of [trigger, `${trigger}.hung`, record]) rmSync(f, { force: true });
    await c.restart(x);
    ctx.timeline.add('heal', `restarted ${name} on a healthy disk`);
  }
}

function failStopAnomaly(ctx: NemesisContext, kind: string, message: string): void {
  ctx.anomaly({ workload: 'cluster', kind, message, atMs: performance.now(), excerpt: [] });
}

export async function fsyncFail(ctx: NemesisContext): Promise<void> {
  const c = ctx.members.cluster;
  const leader = await currentLeader(ctx);
  const x =
    leader !== undefined && ctx.prng.next() < 1 / 3 ? leader : otherThan(ctx.prng, c.size, leader);
  const name = ctx.members.names[x] ?? String(x);
  const role = x === leader ? 'the leader ' : '';
  ctx.timeline.add('fsync-fail', `${role}${name}'s disk will fail its syncs (EIO)`);
  const { trigger, record } = await restartShimmed(ctx, x, 'fail');
  // From here the member's exit is the fault working, not a crash (awaitRecovery).
  c.expectExit(x);
  writeFileSync(trigger, '');
  ctx.timeline.add('note', `${name}'s fsync fails from now on`);
  try {
    if (!(await exitedWithin(ctx, x, failStopTimeoutMs))) {
      failStopAnomaly(
        ctx,
        'no-fail-stop',
        `${name} still ran ${failStopTimeoutMs} ms after its fsync began to fail`,
      );
      await c.kill(x, 'SIGKILL');
    } else if (!c.logTail(x, 40).includes(`exited with code ${exitDiskFailure}`)) {
      failStopAnomaly(
        ctx,
        'no-fail-stop',
        `${name} exited, but not with the disk-failure code ${exitDiskFailure}`,
      );
    } else {
      ctx.timeline.add('note', `${name} stopped (fail-stop, exit code ${exitDiskFailure})`);
    }
  } finally {
    for (const f of [trigger, record]) rmSync(f, { force: true });
  }
  await replaceMember(ctx, x, 'disk replaced');
}
