// The chaos disk faults' sync shim (src/chaos/sync-shim.ts) in a real process: its record says
// how far the last successful sync reached, not counting the zeros a disk preallocates, and once
// triggered in mode 'fail' a sync fails with EIO. And the two readers wal-tail builds its cut
// from: where a WAL's valid records end, and the recorded synced offset of one inode. Needs gcc
// (npm test installs it).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { test } from 'node:test';
import { recordsEnd, syncedEnd } from '../../src/chaos/faults-disk.js';
import { syncShim, syncShimEnv } from '../../src/chaos/sync-shim.js';
import { runChild } from '../support/run-child.js';

const budgetMs = 60_000;

function frame(payload: Uint8Array): Buffer {
  const out = Buffer.alloc(8 + payload.length);
  out.writeUInt32LE(payload.length, 0);
  out.writeUInt32LE(crc32(payload) >>> 0, 4);
  out.set(payload, 8);
  return out;
}

test('recordsEnd stops at the zeros and at a torn record', () => {
  const a = frame(Buffer.from('first'));
  const b = frame(Buffer.from('second record'));
  const whole = Buffer.concat([a, b, Buffer.alloc(64)]);
  assert.equal(recordsEnd(whole), a.length + b.length);
  assert.equal(recordsEnd(whole.subarray(0, a.length + b.length - 3)), a.length);
  const zeroed = Buffer.from(whole);
  zeroed.fill(0, a.length + 10, a.length + b.length);
  assert.equal(recordsEnd(zeroed), a.length);
});

test('syncedEnd takes the furthest offset recorded for the inode asked', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-shim-'));
  try {
    const record = join(dir, 'record');
    writeFileSync(record, '  7  100\n  9  5000\n  7  250\n');
    assert.equal(syncedEnd(record, 7), 250);
    assert.equal(syncedEnd(record, 8), undefined);
    assert.equal(syncedEnd(join(dir, 'none'), 7), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the shim records synced offsets and fails syncs with EIO once triggered', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-shim-'));
  try {
    const file = join(dir, 'f');
    const trigger = join(dir, 'trigger');
    const record = join(dir, 'record');
    // 4 KiB of preallocated zeros, a 5-byte record and two more in one writev (FileDisk's way),
    // a sync; a further record, the trigger, a sync.
    const script = `
      const fs = require('node:fs');
      const fd = fs.openSync(${JSON.stringify(file)}, 'w+');
      fs.writeSync(fd, Buffer.alloc(4096), 0, 4096, 0);
      fs.writeSync(fd, Buffer.from('hello'), 0, 5, 0);
      fs.writevSync(fd, [Buffer.from('ab'), Buffer.from('cde')], 5);
      fs.fdatasync(fd, (e1) => {
        fs.writeSync(fd, Buffer.from('world'), 0, 5, 10);
        fs.writeFileSync(${JSON.stringify(trigger)}, '');
        fs.fdatasync(fd, (e2) => console.log(JSON.stringify([e1?.code ?? null, e2?.code ?? null])));
      });`;
    const env = { ...process.env, ...syncShimEnv(syncShim(dir), 'fail', trigger, record) };
    const r = await runChild(process.execPath, ['-e', script], budgetMs, { env });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), [null, 'EIO']);
    assert.equal(syncedEnd(record, statSync(file).ino), 10);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
