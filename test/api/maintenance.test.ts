// Maintenance Snapshot, HashKV and Alarm over gRPC on an in-memory member (etcd's
// server/etcdserver/api/v3rpc/maintenance.go): the snapshot stream's chunks, remaining_bytes and
// SHA-256 trailer, its envelope (backup-file.ts) and that its payload restores; that the stream
// waits for the transport instead of queueing; HashKV's answers and errors; alarms raised,
// listed, shown by Status, refusing writes, cleared.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ServerMachine } from '../../src/replica/member/server-machine.js';
import {
  backupChunks,
  BackupFileError,
  BACKUP_ALIGN_BYTES,
  encodeBackupHeader,
  SHA256_BYTES,
  verifyBackup,
} from '../../src/server/backup-file.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
import {
  maintenanceHandlers,
  SNAPSHOT_CHUNK_BYTES,
} from '../../src/server/api/maintenance-service.js';
import { serviceDefinition } from '../../src/server/api/protos.js';
import type { Fixture, Obj } from './api-fixture.js';
import { startFixture } from './api-fixture.js';

let f: Fixture;
before(async () => {
  f = await startFixture();
  // About 3 MiB: a hundred chunks and more.
  for (let i = 0; i < 300; i++)
    await f.client.ok('/etcdserverpb.KV/Put', {
      key: Buffer.from(`big/${String(i).padStart(4, '0')}`),
      value: Buffer.alloc(10_000, i % 251),
    });
});
after(() => f.close());

function snapshotStream(): Promise<{ messages: Obj[]; status: grpc.StatusObject }> {
  const m = serviceDefinition('etcdserverpb.Maintenance')['Snapshot'];
  assert.ok(m !== undefined);
  const call = f.client.raw.makeServerStreamRequest(
    m.path,
    (v: object) => m.requestSerialize(v),
    (b: Buffer) => m.responseDeserialize(b) as Obj,
    {},
  );
  const messages: Obj[] = [];
  return new Promise((resolve) => {
    call.on('data', (d: Obj) => messages.push(d));
    call.on('error', () => undefined);
    call.on('status', (status: grpc.StatusObject) => resolve({ messages, status }));
  });
}

test('Snapshot streams 32 KiB chunks, remaining_bytes, then the sha256 of them all', async () => {
  const { messages, status } = await snapshotStream();
  assert.equal(status.code, grpc.status.OK);
  const blobs = messages.map((m) => m['blob'] as Buffer);
  const data = Buffer.concat(blobs.slice(0, -1));
  const digest = blobs[blobs.length - 1] as Buffer;
  assert.equal(digest.length, SHA256_BYTES);
  assert.ok(digest.equals(createHash('sha256').update(data).digest()));
  let remaining = data.length;
  for (const [i, m] of messages.slice(0, -1).entries()) {
    const blob = m['blob'] as Buffer;
    assert.ok(blob.length > 0 && blob.length <= SNAPSHOT_CHUNK_BYTES, `chunk ${i}`);
    remaining -= blob.length;
    assert.equal(m['remaining_bytes'], String(remaining));
  }
  assert.equal(messages[messages.length - 1]?.['remaining_bytes'], '0');
  assert.ok(messages.length > 90, `${messages.length} messages`);
  assert.ok(messages[0]?.['header'] !== null, 'the first chunk carries the header');
  // What etcdctl 3.4.23 checks of the file it wrote: 32 bytes past a multiple of 512.
  const file = Buffer.concat(blobs);
  assert.equal(file.length % BACKUP_ALIGN_BYTES, SHA256_BYTES);
  const { header, payload } = verifyBackup(file);
  assert.equal(header.revision, f.backend.machine.revision);
  const sm = new ServerMachine();
  sm.restore(payload);
  assert.equal(sm.etcd.revision, f.backend.machine.revision);
  assert.equal(sm.etcd.digest(), f.backend.machine.digest());
});

test('the snapshot handler waits for the transport when it says so', async () => {
  const handler = maintenanceHandlers(f.backend).serverStream['/etcdserverpb.Maintenance/Snapshot'];
  assert.ok(handler !== undefined);
  let sent = 0;
  let open: () => void = () => undefined;
  const waiting: Promise<void>[] = [];
  const controller = new AbortController();
  const done = handler({}, { signal: controller.signal, metadata: new Map() }, () => {
    sent++;
    // "enough queued": the handler must wait until the transport resolves each send
    const p = new Promise<void>((resolve) => (open = resolve));
    waiting.push(p);
    return p;
  });
  await new Promise((r) => setImmediate(r));
  assert.equal(sent, 1, 'one chunk, then a wait');
  open();
  await new Promise((r) => setImmediate(r));
  assert.equal(sent, 2);
  controller.abort();
  open();
  await done;
  assert.equal(sent, 2, 'nothing more once the call is gone');
});

test('HashKV: the hash at a revision; compacted and future revisions as etcd', async () => {
  const now = await f.client.ok('/etcdserverpb.Maintenance/HashKV', { revision: 0 });
  const rev = Number((now['header'] as Obj)['revision']);
  assert.equal(now['compact_revision'], '-1');
  const same = await f.client.ok('/etcdserverpb.Maintenance/HashKV', { revision: rev });
  assert.equal(same['hash'], now['hash']);
  const older = await f.client.ok('/etcdserverpb.Maintenance/HashKV', { revision: 10 });
  assert.notEqual(older['hash'], now['hash']);
  assert.equal((older['header'] as Obj)['revision'], String(rev), 'the header has the current');
  const future = await f.client.unary('/etcdserverpb.Maintenance/HashKV', { revision: rev + 5 });
  assert.deepEqual(future.error, {
    code: grpc.status.OUT_OF_RANGE,
    details: 'etcdserver: mvcc: required revision is a future revision',
  });
  await f.client.ok('/etcdserverpb.KV/Compact', { revision: 20 });
  const compacted = await f.client.unary('/etcdserverpb.Maintenance/HashKV', { revision: 20 });
  assert.deepEqual(compacted.error, {
    code: grpc.status.OUT_OF_RANGE,
    details: 'etcdserver: mvcc: required revision has been compacted',
  });
  const after = await f.client.ok('/etcdserverpb.Maintenance/HashKV', { revision: 21 });
  assert.equal(after['compact_revision'], '20');
});

test('a CORRUPT alarm: listed, in Status, writes refused with DataLoss, reads served', async () => {
  const raised = await f.client.ok('/etcdserverpb.Maintenance/Alarm', {
    action: 'ACTIVATE',
    memberID: '7',
    alarm: 'CORRUPT',
  });
  assert.deepEqual(raised['alarms'], [{ memberID: '7', alarm: 'CORRUPT' }]);
  assert.equal(raised['header'], null, 'etcd sends no header with Alarm');
  const list = await f.client.ok('/etcdserverpb.Maintenance/Alarm', { action: 'GET' });
  assert.deepEqual(list['alarms'], [{ memberID: '7', alarm: 'CORRUPT' }]);
  const status = await f.client.ok('/etcdserverpb.Maintenance/Status', {});
  assert.deepEqual(status['errors'], ['memberID:7 alarm:CORRUPT ']);
  const put = await f.client.unary('/etcdserverpb.KV/Put', { key: Buffer.from('x') });
  assert.deepEqual(put.error, {
    code: grpc.status.DATA_LOSS,
    details: 'etcdserver: corrupt cluster',
  });
  const get = await f.client.ok('/etcdserverpb.KV/Range', { key: Buffer.from('big/0001') });
  assert.equal(get['count'], '1');
  const cleared = await f.client.ok('/etcdserverpb.Maintenance/Alarm', {
    action: 'DEACTIVATE',
    memberID: '7',
    alarm: 'CORRUPT',
  });
  assert.deepEqual(cleared['alarms'], [{ memberID: '7', alarm: 'CORRUPT' }]);
  await f.client.ok('/etcdserverpb.KV/Put', { key: Buffer.from('x') });
  const empty = await f.client.ok('/etcdserverpb.Maintenance/Alarm', {});
  assert.deepEqual(empty['alarms'], []);
});

test('backup chunks cover header, payload and padding; a chunk never exceeds the size', () => {
  const payload = Buffer.alloc(100_000, 7);
  const header = encodeBackupHeader({
    payloadBytes: payload.length,
    revision: 3,
    appliedIndex: 9,
    createdAtMs: 0,
  });
  for (const size of [1000, 32 * 1024, 64]) {
    const chunks = [...backupChunks(header, payload, size)];
    const all = Buffer.concat(chunks);
    assert.equal(all.length % BACKUP_ALIGN_BYTES, 0);
    assert.ok(chunks.every((c) => c.length <= size));
    assert.ok(chunks.slice(0, -1).every((c) => c.length === size));
    const file = Buffer.concat([all, createHash('sha256').update(all).digest()]);
    assert.ok(Buffer.from(verifyBackup(file).payload).equals(payload));
  }
});

test('verifyBackup refuses a cut, a flipped byte, another magic', () => {
  const payload = Buffer.alloc(5000, 1);
  const header = encodeBackupHeader({
    payloadBytes: payload.length,
    revision: 3,
    appliedIndex: 9,
    createdAtMs: 0,
  });
  const body = Buffer.concat([...backupChunks(header, payload, 4096)]);
  const file = Buffer.concat([body, createHash('sha256').update(body).digest()]);
  assert.throws(() => verifyBackup(file.subarray(0, file.length - 1)), /sha256 checksum not found/);
  assert.throws(() => verifyBackup(file.subarray(0, 512 + 32)), BackupFileError);
  const flipped = Buffer.from(file);
  flipped[1000] = (flipped[1000] as number) ^ 0x10;
  assert.throws(() => verifyBackup(flipped), /sha256 mismatch/);
  const bbolt = Buffer.from(file);
  bbolt.write('\x00\x00\x00\x00', 0, 'latin1');
  assert.throws(() => verifyBackup(bbolt), /not a tenure snapshot/);
});

test('a memory backend snapshot restores the same key space', () => {
  const b = new MemoryBackend();
  const snap = b.backupSnapshot();
  const sm = new ServerMachine();
  sm.restore(snap.data);
  assert.equal(sm.etcd.revision, 1);
});
