// The file-backed Disk: appends become durable with fdatasync, replace is atomic, and a node
// killed with SIGKILL in the middle of a write load restarts with every acknowledged write.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { RegisterMachine } from '../../src/core/state/registers.js';
import { logIndex, nodeId, term } from '../../src/core/base/units.js';
import { encodeHardState, recover, SNAP_FILE, WAL_FILE } from '../../src/replica/wal.js';
import { FileDisk, PENDING_BYTES_MAX, PREALLOCATE_BYTES } from '../../src/server/file-disk.js';
import { LineChild } from '../support/line-child.js';

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'tenure-disk-'));
const enc = new TextEncoder();

test('appends are read back; sync calls back; replace swaps the whole file', async () => {
  const dir = tempDir();
  try {
    const d = new FileDisk(dir);
    d.append('wal', enc.encode('abc'));
    d.append('wal', enc.encode('def'));
    await new Promise<void>((resolve) => d.sync('wal', resolve));
    assert.deepEqual(d.read('wal'), enc.encode('abcdef'));
    await new Promise<void>((resolve) => d.replace('wal', enc.encode('xy'), resolve));
    assert.deepEqual(d.read('wal'), enc.encode('xy'));
    d.append('wal', enc.encode('z'));
    await new Promise<void>((resolve) => d.sync('wal', resolve));
    assert.deepEqual(d.read('wal'), enc.encode('xyz'));
    assert.equal(d.read('missing'), undefined);
    assert.throws(() => d.read('../escape'), RangeError);
    d.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('truncate cuts a preallocated tail in place; appends continue from the cut', async () => {
  const dir = tempDir();
  try {
    const d = new FileDisk(dir);
    d.append(WAL_FILE, enc.encode('abcdef'));
    await new Promise<void>((resolve) => d.sync(WAL_FILE, resolve));
    d.close();
    const inode = statSync(join(dir, WAL_FILE)).ino;
    const after = new FileDisk(dir);
    assert.equal(after.read(WAL_FILE)?.length, PREALLOCATE_BYTES, 'the zero tail is read back');
    await new Promise<void>((resolve) => after.truncate(WAL_FILE, 4, resolve));
    assert.equal(statSync(join(dir, WAL_FILE)).size, 4);
    assert.equal(statSync(join(dir, WAL_FILE)).ino, inode, 'cut in place, not rewritten');
    after.append(WAL_FILE, enc.encode('XY'));
    await new Promise<void>((resolve) => after.sync(WAL_FILE, resolve));
    assert.deepEqual(after.read(WAL_FILE), enc.encode('abcdXY'));
    after.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('appends go into preallocated zeros, which recovery reads as the end of the log', async () => {
  const dir = tempDir();
  try {
    const d = new FileDisk(dir);
    const hs = encodeHardState({ term: term(3), vote: nodeId(2), commit: logIndex(0) });
    d.append(WAL_FILE, hs);
    await new Promise<void>((resolve) => d.sync(WAL_FILE, resolve));
    // A record that does not fit in what is left makes the file grow by whole steps.
    const big = new Uint8Array(PREALLOCATE_BYTES + 10).fill(7);
    d.append('blob', big);
    await new Promise<void>((resolve) => d.sync('blob', resolve));
    d.close();
    assert.equal(statSync(join(dir, WAL_FILE)).size, PREALLOCATE_BYTES);
    assert.equal(statSync(join(dir, 'blob')).size, 2 * PREALLOCATE_BYTES);
    const after = new FileDisk(dir);
    const wal = after.read(WAL_FILE);
    assert.ok(wal !== undefined && wal.length === PREALLOCATE_BYTES, 'a later run sees the zeros');
    const rec = recover(wal, undefined, { mutants: NO_MUTANTS });
    assert.deepEqual(rec.hardState, { term: 3, vote: 2, commit: 0 });
    assert.equal(rec.walValidBytes, hs.length);
    assert.equal(rec.tornTail, false);
    // A damaged record followed by zeros is still a torn tail (cut), not the end of a clean log.
    const torn = new Uint8Array(wal);
    torn[hs.length] = 9;
    const r2 = recover(torn, undefined, { mutants: NO_MUTANTS });
    assert.equal(r2.walValidBytes, hs.length);
    assert.equal(r2.tornTail, true);
    after.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('held appends keep their order across syncs, reads, truncates, zero steps, close', async () => {
  const dir = tempDir();
  try {
    const d = new FileDisk(dir);
    const want: number[] = [];
    const add = (n: number, v: number): void => {
      d.append(WAL_FILE, new Uint8Array(n).fill(v));
      for (let i = 0; i < n; i++) want.push(v);
    };
    // Past the held-bytes bound and past one zero step, with a sync in the middle.
    let v = 0;
    for (let sum = 0; sum < PREALLOCATE_BYTES + PENDING_BYTES_MAX; v++) {
      const n = 1 + ((v * 7919) % 9000);
      add(n, v % 251);
      sum += n;
      if (v === 100) await new Promise<void>((resolve) => d.sync(WAL_FILE, resolve));
    }
    assert.deepEqual(d.read(WAL_FILE), Uint8Array.from(want), 'read sees appends not yet synced');
    add(10, 1);
    await new Promise<void>((resolve) => d.truncate(WAL_FILE, want.length - 4, resolve));
    want.length -= 4;
    add(3, 2);
    // More appends than one writev(2) takes (IOV_MAX, 1024): libuv splits the call.
    for (let i = 0; i < 3000; i++) add(1, i % 251);
    d.close();
    const after = new FileDisk(dir);
    const back = after.read(WAL_FILE);
    assert.ok(back !== undefined);
    assert.deepEqual(back.subarray(0, want.length), Uint8Array.from(want), 'close writes them');
    assert.ok(
      back.subarray(want.length).every((b) => b === 0),
      'then the zero tail',
    );
    after.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Run the writer until it has acknowledged `acks` writes, then SIGKILL it; return the acks. */
async function runAndKill(dir: string, round: number, acks: number): Promise<number> {
  const script = fileURLToPath(new URL('./wal-writer.js', import.meta.url));
  let last = 0;
  const child: LineChild = new LineChild(process.execPath, [script, dir, String(round)], {
    onLine: (l) => {
      const m = /^ack (\d+)$/.exec(l);
      if (m) last = Number(m[1]);
      // Killed at once, on the line: the writer is in the middle of its next write.
      if (last >= acks && child.running) process.kill(child.pid, 'SIGKILL');
    },
  });
  try {
    await child.waitFor(
      `${acks} acknowledgements`,
      () => (last >= acks ? last : undefined),
      60_000,
    );
  } catch (e) {
    await child.stop('SIGKILL');
    throw new Error(`writer made only ${last} acknowledgements in 60 s: ${child.stderr}`, {
      cause: e,
    });
  }
  await child.exited();
  return last;
}

test(
  'kill -9 in the middle of a write load loses no acknowledged write (5 rounds)',
  { timeout: 300_000 },
  async () => {
    const dir = tempDir();
    try {
      let total = 0;
      for (let round = 0; round < 5; round++) {
        const acked = await runAndKill(dir, round, 150 + round * 37);
        total += acked;
        const disk = new FileDisk(dir);
        const rec = recover(disk.read(WAL_FILE), disk.read(SNAP_FILE), {
          mutants: NO_MUTANTS,
        });
        const sm = new RegisterMachine();
        if (rec.snapshot) sm.restore(rec.snapshot.data);
        for (const e of rec.entries) if (e.data.length > 0) sm.apply(e.index, e.data);
        for (let i = 1; i <= acked; i++) {
          const want = `v${i}-${round}`;
          assert.equal(
            sm.get(`k${i}`),
            want,
            `round ${round}: acknowledged write k${i}=${want} was lost`,
          );
        }
      }
      assert.ok(total > 500);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
