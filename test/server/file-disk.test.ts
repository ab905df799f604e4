// The file-backed Disk: appends become durable with fdatasync, replace is atomic, and a node
// killed with SIGKILL in the middle of a write load restarts with every acknowledged write.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { RegisterMachine } from '../../src/core/state/registers.js';
import { recover, SNAP_FILE, WAL_FILE } from '../../src/replica/wal.js';
import { FileDisk } from '../../src/server/file-disk.js';

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

/** Run the writer until it has acknowledged `acks` writes, then SIGKILL it; return the acks. */
function runAndKill(dir: string, round: number, acks: number): Promise<number> {
  const script = fileURLToPath(new URL('./wal-writer.js', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, dir, String(round)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let last = 0;
    let buf = '';
    let stderr = '';
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
      reject(new Error(`writer made only ${last} acknowledgements in 60 s: ${stderr}`));
    }, 60_000);
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.stdout.on('data', (b: Buffer) => {
      buf += b.toString();
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) {
        const m = /^ack (\d+)$/.exec(l);
        if (m) last = Number(m[1]);
      }
      if (last >= acks && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
    });
    child.on('close', () => {
      clearTimeout(timer);
      resolve(last);
    });
  });
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
