// tenure's own .proto files against the etcd v3 wire format (etcd's api/etcdserverpb/rpc.proto,
// api/mvccpb/kv.proto, and the v3election.proto and v3lock.proto of its Election and Lock
// services): every gRPC method path exists with the right streaming kind; messages encode to
// bytes whose tags are worked out by hand from etcd's field numbers (tag = field_number << 3 |
// wire_type), so a wrong number, wire type or enum value fails here; and a loopback server
// answers KV.Range.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { repoRoot } from '../support/paths.js';

const protoDir = join(repoRoot(), 'proto');

const protoFiles = [
  'etcdserverpb/rpc.proto',
  'mvccpb/kv.proto',
  'v3electionpb/v3election.proto',
  'v3lockpb/v3lock.proto',
  'grpc/health/v1/health.proto',
];

// Loader options for tenure's protos: proto field names kept (the JSON gateway uses them), 64-bit
// integers as decimal strings, enums by name, oneofs named by a virtual field.
const loaderOptions: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [protoDir],
};

const packageDefinition = protoLoader.loadSync(protoFiles, loaderOptions);

function serviceOf(fullName: string): protoLoader.ServiceDefinition {
  const def = packageDefinition[fullName];
  assert.ok(def !== undefined, `${fullName} is defined`);
  assert.ok(!('format' in def), `${fullName} is a service, not a message or enum`);
  return def;
}

// Encoding goes through protobufjs reflection (the parser proto-loader is built on), so the
// expected bytes below are compared against what the .proto files actually declare.
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => join(protoDir, target);
root.loadSync(protoFiles, { keepCase: true });

function encodeHex(typeName: string, value: Record<string, unknown>): string {
  const type = root.lookupType(typeName);
  for (const name of Object.keys(value)) {
    assert.ok(type.fields[name] !== undefined, `${typeName} has a field named ${name}`);
  }
  const message = type.fromObject(value);
  const problem = type.verify(message);
  assert.equal(problem, null, `${typeName}: ${problem}`);
  return Buffer.from(type.encode(message).finish()).toString('hex');
}

/** Hex of space-separated byte groups, so expectations can be written field by field. */
const hex = (bytes: string): string => bytes.replace(/\s+/g, '');
const b = (text: string): Buffer => Buffer.from(text, 'utf8');

// ---------------------------------------------------------------------------------------------
// Services and method paths (/<package>.<Service>/<Method>, as etcd's protos declare them)

type Kind = 'unary' | 'server' | 'client' | 'bidi';

const methods: ReadonlyArray<readonly [service: string, method: string, kind: Kind]> = [
  ['etcdserverpb.KV', 'Range', 'unary'],
  ['etcdserverpb.KV', 'Put', 'unary'],
  ['etcdserverpb.KV', 'DeleteRange', 'unary'],
  ['etcdserverpb.KV', 'Txn', 'unary'],
  ['etcdserverpb.KV', 'Compact', 'unary'],
  ['etcdserverpb.Watch', 'Watch', 'bidi'],
  ['etcdserverpb.Lease', 'LeaseGrant', 'unary'],
  ['etcdserverpb.Lease', 'LeaseRevoke', 'unary'],
  ['etcdserverpb.Lease', 'LeaseKeepAlive', 'bidi'],
  ['etcdserverpb.Lease', 'LeaseTimeToLive', 'unary'],
  ['etcdserverpb.Lease', 'LeaseLeases', 'unary'],
  ['etcdserverpb.Cluster', 'MemberAdd', 'unary'],
  ['etcdserverpb.Cluster', 'MemberRemove', 'unary'],
  ['etcdserverpb.Cluster', 'MemberUpdate', 'unary'],
  ['etcdserverpb.Cluster', 'MemberList', 'unary'],
  ['etcdserverpb.Cluster', 'MemberPromote', 'unary'],
  ['etcdserverpb.Maintenance', 'Alarm', 'unary'],
  ['etcdserverpb.Maintenance', 'Status', 'unary'],
  ['etcdserverpb.Maintenance', 'Defragment', 'unary'],
  ['etcdserverpb.Maintenance', 'Hash', 'unary'],
  ['etcdserverpb.Maintenance', 'HashKV', 'unary'],
  ['etcdserverpb.Maintenance', 'MoveLeader', 'unary'],
  ['etcdserverpb.Maintenance', 'Downgrade', 'unary'],
  ['etcdserverpb.Maintenance', 'Snapshot', 'server'],
  ['v3electionpb.Election', 'Campaign', 'unary'],
  ['v3electionpb.Election', 'Proclaim', 'unary'],
  ['v3electionpb.Election', 'Leader', 'unary'],
  ['v3electionpb.Election', 'Observe', 'server'],
  ['v3electionpb.Election', 'Resign', 'unary'],
  ['v3lockpb.Lock', 'Lock', 'unary'],
  ['v3lockpb.Lock', 'Unlock', 'unary'],
  ['grpc.health.v1.Health', 'Check', 'unary'],
  ['grpc.health.v1.Health', 'Watch', 'server'],
];

const kindOf = (m: protoLoader.MethodDefinition<object, object>): Kind =>
  m.requestStream ? (m.responseStream ? 'bidi' : 'client') : m.responseStream ? 'server' : 'unary';

test('every method has the etcd gRPC path and streaming kind', () => {
  for (const [service, method, kind] of methods) {
    const m = serviceOf(service)[method];
    assert.ok(m !== undefined, `${service}.${method} is declared`);
    assert.equal(m.path, `/${service}/${method}`);
    assert.equal(kindOf(m), kind, `${m.path} is ${kind}`);
  }
});

test('each service declares exactly the listed methods', () => {
  const services = new Set(methods.map(([s]) => s));
  for (const service of services) {
    const listed = methods.filter(([s]) => s === service).map(([, m]) => m);
    assert.deepEqual(Object.keys(serviceOf(service)).sort(), [...listed].sort(), service);
  }
});

test('methods carry the request and response messages the etcd protos name', () => {
  const pairs: ReadonlyArray<readonly [string, string, string, string]> = [
    ['etcdserverpb.KV', 'Range', 'RangeRequest', 'RangeResponse'],
    ['etcdserverpb.KV', 'Compact', 'CompactionRequest', 'CompactionResponse'],
    ['etcdserverpb.Watch', 'Watch', 'WatchRequest', 'WatchResponse'],
    ['etcdserverpb.Lease', 'LeaseKeepAlive', 'LeaseKeepAliveRequest', 'LeaseKeepAliveResponse'],
    ['etcdserverpb.Maintenance', 'Status', 'StatusRequest', 'StatusResponse'],
    ['v3electionpb.Election', 'Observe', 'LeaderRequest', 'LeaderResponse'],
    ['v3lockpb.Lock', 'Lock', 'LockRequest', 'LockResponse'],
  ];
  for (const [service, method, request, response] of pairs) {
    const m = serviceOf(service)[method];
    assert.ok(m !== undefined);
    // proto-loader types the descriptor as `object`; it is a DescriptorProto with a name.
    assert.equal((m.requestType.type as { name?: string }).name, request);
    assert.equal((m.responseType.type as { name?: string }).name, response);
  }
});

// ---------------------------------------------------------------------------------------------
// Field numbers, wire types and enum values, by encoding

test('ResponseHeader: cluster_id=1 u64, member_id=2 u64, revision=3 i64, raft_term=4 u64', () => {
  const got = encodeHex('etcdserverpb.ResponseHeader', {
    cluster_id: '18446744073709551615',
    member_id: 128,
    revision: 300,
    raft_term: 7,
  });
  // 0x08 = 1<<3|0, 0x10 = 2<<3|0, 0x18 = 3<<3|0, 0x20 = 4<<3|0. 2^64-1 is ten varint bytes.
  assert.equal(got, hex('08 ffffffffffffffffff01  10 8001  18 ac02  20 07'));
});

test('PutRequest: key=1, value=2, lease=3, prev_kv=4, ignore_value=5, ignore_lease=6', () => {
  const got = encodeHex('etcdserverpb.PutRequest', {
    key: b('a'),
    value: b('b'),
    lease: 5,
    prev_kv: true,
    ignore_value: true,
    ignore_lease: true,
  });
  assert.equal(got, hex('0a 01 61  12 01 62  18 05  20 01  28 01  30 01'));
});

test('PutResponse: header=1, prev_kv=2', () => {
  const got = encodeHex('etcdserverpb.PutResponse', {
    header: { revision: 2 },
    prev_kv: { key: b('a') },
  });
  assert.equal(got, hex('0a 02 1802  12 03 0a0161'));
});

test('RangeRequest: all thirteen fields and both sort enums', () => {
  const got = encodeHex('etcdserverpb.RangeRequest', {
    key: b('a'),
    range_end: b('b'),
    limit: 3,
    revision: 4,
    sort_order: 'DESCEND',
    sort_target: 'VALUE',
    serializable: true,
    keys_only: true,
    count_only: true,
    min_mod_revision: 10,
    max_mod_revision: 11,
    min_create_revision: 12,
    max_create_revision: 13,
  });
  const expected = [
    '0a 01 61', // key = 1, length-delimited
    '12 01 62', // range_end = 2
    '18 03', // limit = 3
    '20 04', // revision = 4
    '28 02', // sort_order = 5, DESCEND = 2
    '30 04', // sort_target = 6, VALUE = 4
    '38 01', // serializable = 7
    '40 01', // keys_only = 8
    '48 01', // count_only = 9
    '50 0a', // min_mod_revision = 10: 10<<3 = 0x50
    '58 0b', // max_mod_revision = 11: 0x58
    '60 0c', // min_create_revision = 12: 0x60
    '68 0d', // max_create_revision = 13: 0x68
  ];
  assert.equal(got, hex(expected.join(' ')));
  assert.equal(
    encodeHex('etcdserverpb.RangeRequest', { sort_order: 'ASCEND', sort_target: 'MOD' }),
    hex('28 01  30 03'),
  );
  assert.equal(encodeHex('etcdserverpb.RangeRequest', { sort_target: 'VERSION' }), hex('30 01'));
  assert.equal(encodeHex('etcdserverpb.RangeRequest', { sort_target: 'CREATE' }), hex('30 02'));
});

test('RangeResponse: header=1, kvs=2, more=3, count=4', () => {
  const got = encodeHex('etcdserverpb.RangeResponse', {
    header: { member_id: 1 },
    kvs: [{ key: b('a') }, { key: b('b') }],
    more: true,
    count: 9,
  });
  assert.equal(got, hex('0a 02 1001  12 03 0a0161  12 03 0a0162  18 01  20 09'));
});

test('DeleteRangeRequest/Response: key=1, range_end=2, prev_kv=3; deleted=2, prev_kvs=3', () => {
  assert.equal(
    encodeHex('etcdserverpb.DeleteRangeRequest', {
      key: b('a'),
      range_end: b('b'),
      prev_kv: true,
    }),
    hex('0a 01 61  12 01 62  18 01'),
  );
  assert.equal(
    encodeHex('etcdserverpb.DeleteRangeResponse', {
      header: { revision: 5 },
      deleted: 2,
      prev_kvs: [{ key: b('a') }],
    }),
    hex('0a 02 1805  10 02  1a 03 0a0161'),
  );
});

test('KeyValue: key=1, create_revision=2, mod_revision=3, version=4, value=5, lease=6', () => {
  const got = encodeHex('mvccpb.KeyValue', {
    key: b('k'),
    create_revision: 2,
    mod_revision: 3,
    version: 4,
    value: b('v'),
    lease: 6,
  });
  assert.equal(got, hex('0a 01 6b  10 02  18 03  20 04  2a 01 76  30 06'));
});

test('Event: type=1 (PUT=0, DELETE=1), kv=2, prev_kv=3', () => {
  const got = encodeHex('mvccpb.Event', {
    type: 'DELETE',
    kv: { key: b('a'), mod_revision: 5 },
    prev_kv: { key: b('a'), create_revision: 2, mod_revision: 4, version: 3, value: b('v') },
  });
  // kv is 5 bytes (0a0161 1805); prev_kv is 12 bytes.
  assert.equal(got, hex('08 01  12 05 0a0161 1805  1a 0c 0a0161 1002 1804 2003 2a0176'));
  // PUT is 0. (protobufjs writes a field that is set explicitly even when it is zero; decoders
  // read the bytes the same either way.)
  assert.equal(
    encodeHex('mvccpb.Event', { type: 'PUT', kv: { version: 1 } }),
    hex('08 00  12 02 2001'),
  );
});

test('Compare: result=1, target=2, key=3, oneof target_union 4..8, range_end=64', () => {
  assert.equal(
    encodeHex('etcdserverpb.Compare', {
      result: 'NOT_EQUAL',
      target: 'MOD',
      key: b('k'),
      mod_revision: 9,
      range_end: b('z'),
    }),
    // range_end: 64<<3|2 = 514, varint 0x82 0x04.
    hex('08 03  10 02  1a 01 6b  30 09  8204 01 7a'),
  );
  // "CREATE == 0" (key absent) must still name its oneof member on the wire: field 5, value 0.
  assert.equal(
    encodeHex('etcdserverpb.Compare', { target: 'CREATE', key: b('k'), create_revision: 0 }),
    hex('10 01  1a 01 6b  28 00'),
  );
  assert.equal(
    encodeHex('etcdserverpb.Compare', { result: 'GREATER', version: 2 }),
    hex('08 01  20 02'),
  );
  assert.equal(
    encodeHex('etcdserverpb.Compare', { result: 'LESS', target: 'VALUE', value: b('v') }),
    hex('08 02  10 03  3a 01 76'),
  );
  assert.equal(
    encodeHex('etcdserverpb.Compare', { target: 'LEASE', lease: 5 }),
    hex('10 04  40 05'),
  );
  const compare = root.lookupType('etcdserverpb.Compare');
  const oneof = compare.oneofs['target_union'];
  assert.ok(oneof !== undefined, 'Compare has the target_union oneof');
  assert.deepEqual(
    oneof.fieldsArray.map((f) => [f.name, f.id]),
    [
      ['version', 4],
      ['create_revision', 5],
      ['mod_revision', 6],
      ['value', 7],
      ['lease', 8],
    ],
  );
});

test('TxnRequest/RequestOp/TxnResponse/ResponseOp numbers, nested txn included', () => {
  assert.equal(
    encodeHex('etcdserverpb.TxnRequest', {
      compare: [{ key: b('k') }],
      success: [{ request_put: { key: b('k') } }, { request_txn: {} }],
      failure: [{ request_range: { key: b('k') } }, { request_delete_range: { key: b('k') } }],
    }),
    hex('0a 03 1a016b  12 05 12 03 0a016b  12 02 22 00  1a 05 0a 03 0a016b  1a 05 1a 03 0a016b'),
  );
  assert.equal(
    encodeHex('etcdserverpb.TxnResponse', {
      header: { revision: 3 },
      succeeded: true,
      responses: [
        { response_range: { count: 1 } },
        { response_put: {} },
        { response_delete_range: { deleted: 1 } },
        { response_txn: { succeeded: true } },
      ],
    }),
    hex('0a 02 1803  10 01  1a 04 0a 02 2001  1a 02 12 00  1a 04 1a 02 1001  1a 04 22 02 1001'),
  );
});

test('CompactionRequest/Response: revision=1, physical=2; header=1', () => {
  assert.equal(
    encodeHex('etcdserverpb.CompactionRequest', { revision: 7, physical: true }),
    hex('08 07  10 01'),
  );
  assert.equal(
    encodeHex('etcdserverpb.CompactionResponse', { header: { revision: 7 } }),
    hex('0a 02 1807'),
  );
});

test('WatchCreateRequest: fields 1..8, filters packed (NOPUT=0, NODELETE=1)', () => {
  const got = encodeHex('etcdserverpb.WatchCreateRequest', {
    key: b('a'),
    range_end: b('b'),
    start_revision: 3,
    progress_notify: true,
    filters: ['NOPUT', 'NODELETE'],
    prev_kv: true,
    watch_id: 7,
    fragment: true,
  });
  // filters: 5<<3|2 = 0x2a, two one-byte values.
  assert.equal(got, hex('0a 01 61  12 01 62  18 03  20 01  2a 02 00 01  30 01  38 07  40 01'));
});

test('WatchRequest oneof: create_request=1, cancel_request=2 {watch_id=1}, progress_request=3', () => {
  assert.equal(
    encodeHex('etcdserverpb.WatchRequest', { create_request: { key: b('a') } }),
    hex('0a 03 0a0161'),
  );
  assert.equal(
    encodeHex('etcdserverpb.WatchRequest', { cancel_request: { watch_id: 5 } }),
    hex('12 02 0805'),
  );
  assert.equal(encodeHex('etcdserverpb.WatchRequest', { progress_request: {} }), hex('1a 00'));
});

test('WatchResponse: header=1 .. fragment=7, events=11', () => {
  const got = encodeHex('etcdserverpb.WatchResponse', {
    header: { revision: 1 },
    watch_id: 2,
    created: true,
    canceled: true,
    compact_revision: 5,
    cancel_reason: 'x',
    fragment: true,
    events: [{ type: 'DELETE', kv: { key: b('a'), mod_revision: 9 } }],
  });
  // events: 11<<3|2 = 0x5a.
  assert.equal(
    got,
    hex('0a 02 1801  10 02  18 01  20 01  28 05  32 01 78  38 01  5a 09 0801 12 05 0a0161 1809'),
  );
  // watch_id is a plain int64: -1 is ten varint bytes, not a zigzag 0x01.
  assert.equal(
    encodeHex('etcdserverpb.WatchResponse', { watch_id: -1 }),
    hex('10 ffffffffffffffffff01'),
  );
});

test('LeaseGrantRequest/Response: TTL=1, ID=2; header=1, ID=2, TTL=3, error=4', () => {
  assert.equal(
    encodeHex('etcdserverpb.LeaseGrantRequest', { TTL: 60, ID: 1000 }),
    hex('08 3c  10 e807'),
  );
  assert.equal(
    encodeHex('etcdserverpb.LeaseGrantResponse', {
      header: { revision: 1 },
      ID: 2,
      TTL: 3,
      error: 'e',
    }),
    hex('0a 02 1801  10 02  18 03  22 01 65'),
  );
});

test('Lease revoke, keepalive, time-to-live and leases messages', () => {
  assert.equal(encodeHex('etcdserverpb.LeaseRevokeRequest', { ID: 4 }), hex('08 04'));
  assert.equal(
    encodeHex('etcdserverpb.LeaseRevokeResponse', { header: { revision: 4 } }),
    hex('0a 02 1804'),
  );
  assert.equal(encodeHex('etcdserverpb.LeaseKeepAliveRequest', { ID: 4 }), hex('08 04'));
  assert.equal(
    encodeHex('etcdserverpb.LeaseKeepAliveResponse', { header: { raft_term: 1 }, ID: 4, TTL: 9 }),
    hex('0a 02 2001  10 04  18 09'),
  );
  assert.equal(
    encodeHex('etcdserverpb.LeaseTimeToLiveRequest', { ID: 4, keys: true }),
    hex('08 04  10 01'),
  );
  assert.equal(
    encodeHex('etcdserverpb.LeaseTimeToLiveResponse', {
      ID: 4,
      TTL: -1,
      grantedTTL: 3,
      keys: [b('a')],
    }),
    hex('10 04  18 ffffffffffffffffff01  20 03  2a 01 61'),
  );
  assert.equal(
    encodeHex('etcdserverpb.LeaseLeasesResponse', { header: {}, leases: [{ ID: 4 }] }),
    hex('0a 00  12 02 0804'),
  );
});

test("StatusResponse: fields 1..12 as numbered in etcd's rpc.proto", () => {
  const got = encodeHex('etcdserverpb.StatusResponse', {
    header: { member_id: 1 },
    version: '3.5.0',
    dbSize: 3,
    leader: 1,
    raftIndex: 2,
    raftTerm: 3,
    raftAppliedIndex: 4,
    errors: ['x'],
    dbSizeInUse: 9,
    isLearner: true,
    storageVersion: 's',
    dbSizeQuota: 12,
  });
  const expected = [
    '0a 02 1001', // header = 1
    '12 05 332e352e30', // version = 2, "3.5.0"
    '18 03', // dbSize = 3
    '20 01', // leader = 4
    '28 02', // raftIndex = 5
    '30 03', // raftTerm = 6
    '38 04', // raftAppliedIndex = 7
    '42 01 78', // errors = 8
    '48 09', // dbSizeInUse = 9
    '50 01', // isLearner = 10
    '5a 01 73', // storageVersion = 11
    '60 0c', // dbSizeQuota = 12
  ];
  assert.equal(got, hex(expected.join(' ')));
});

test('Member and MemberListRequest; Alarm enums', () => {
  assert.equal(
    encodeHex('etcdserverpb.Member', {
      ID: 1,
      name: 'n',
      peerURLs: ['p'],
      clientURLs: ['c'],
      isLearner: true,
    }),
    hex('08 01  12 01 6e  1a 01 70  22 01 63  28 01'),
  );
  assert.equal(encodeHex('etcdserverpb.MemberListRequest', { linearizable: true }), hex('08 01'));
  assert.deepEqual(
    { ...root.lookupEnum('etcdserverpb.AlarmRequest.AlarmAction').values },
    {
      GET: 0,
      ACTIVATE: 1,
      DEACTIVATE: 2,
    },
  );
  assert.deepEqual(
    { ...root.lookupEnum('etcdserverpb.AlarmType').values },
    {
      NONE: 0,
      NOSPACE: 1,
      CORRUPT: 2,
    },
  );
});

test('Election messages: LeaderKey, Campaign, Proclaim, Leader, Resign', () => {
  const leader = { name: b('e'), key: b('k'), rev: 7, lease: 5 };
  const leaderHex = '0a0165 12016b 1807 2005'; // 10 bytes
  assert.equal(encodeHex('v3electionpb.LeaderKey', leader), hex(leaderHex));
  assert.equal(
    encodeHex('v3electionpb.CampaignRequest', { name: b('e'), lease: 5, value: b('v') }),
    hex('0a 01 65  10 05  1a 01 76'),
  );
  assert.equal(
    encodeHex('v3electionpb.CampaignResponse', { header: { revision: 7 }, leader }),
    hex(`0a 02 1807  12 0a ${leaderHex}`),
  );
  assert.equal(
    encodeHex('v3electionpb.ProclaimRequest', { leader, value: b('v') }),
    hex(`0a 0a ${leaderHex}  12 01 76`),
  );
  assert.equal(encodeHex('v3electionpb.LeaderRequest', { name: b('e') }), hex('0a 01 65'));
  assert.equal(
    encodeHex('v3electionpb.LeaderResponse', { header: {}, kv: { key: b('k') } }),
    hex('0a 00  12 03 0a016b'),
  );
  assert.equal(encodeHex('v3electionpb.ResignRequest', { leader }), hex(`0a 0a ${leaderHex}`));
  for (const name of ['ProclaimResponse', 'ResignResponse']) {
    assert.equal(encodeHex(`v3electionpb.${name}`, { header: {} }), hex('0a 00'));
  }
});

test('Lock messages: LockRequest{name=1, lease=2}, LockResponse{header=1, key=2}, Unlock', () => {
  assert.equal(
    encodeHex('v3lockpb.LockRequest', { name: b('l'), lease: 5 }),
    hex('0a 01 6c  10 05'),
  );
  assert.equal(
    encodeHex('v3lockpb.LockResponse', { header: {}, key: b('k') }),
    hex('0a 00  12 01 6b'),
  );
  assert.equal(encodeHex('v3lockpb.UnlockRequest', { key: b('k') }), hex('0a 01 6b'));
  assert.equal(encodeHex('v3lockpb.UnlockResponse', { header: {} }), hex('0a 00'));
});

test('health: HealthCheckRequest{service=1}, HealthCheckResponse{status=1} and its enum', () => {
  assert.equal(encodeHex('grpc.health.v1.HealthCheckRequest', { service: 'x' }), hex('0a 01 78'));
  assert.equal(
    encodeHex('grpc.health.v1.HealthCheckResponse', { status: 'SERVING' }),
    hex('08 01'),
  );
  assert.deepEqual(
    { ...root.lookupEnum('grpc.health.v1.HealthCheckResponse.ServingStatus').values },
    {
      UNKNOWN: 0,
      SERVING: 1,
      NOT_SERVING: 2,
      SERVICE_UNKNOWN: 3,
    },
  );
});

test('proto-loader decodes Compare with the oneof name and string longs', () => {
  const txn = serviceOf('etcdserverpb.KV')['Txn'];
  assert.ok(txn !== undefined);
  const bytes = Buffer.from(hex('0a 07 10 01 1a 01 6b 28 00'), 'hex');
  const decoded = txn.requestDeserialize(bytes) as {
    compare: Array<Record<string, unknown>>;
  };
  const first = decoded.compare[0];
  assert.ok(first !== undefined);
  assert.equal(first['target'], 'CREATE');
  assert.equal(first['target_union'], 'create_revision');
  assert.equal(first['create_revision'], '0');
  assert.deepEqual(first['key'], b('k'));
});

// ---------------------------------------------------------------------------------------------
// A loopback round trip through grpc-js

interface RangeRequestObject {
  key: Buffer;
  limit: string;
  sort_order: string;
}

interface RangeResponseObject {
  header: { revision: string; member_id: string } | null;
  kvs: Array<{ key: Buffer; value: Buffer; create_revision: string }>;
  more: boolean;
  count: string;
}

test('a grpc-js server on 127.0.0.1 serves KV.Range to a grpc-js client', async () => {
  const kv = serviceOf('etcdserverpb.KV');
  const range = kv['Range'];
  assert.ok(range !== undefined);
  const server = new grpc.Server();
  let seen: RangeRequestObject | undefined;
  server.addService(kv, {
    Range: (
      call: grpc.ServerUnaryCall<RangeRequestObject, RangeResponseObject>,
      callback: grpc.sendUnaryData<RangeResponseObject>,
    ) => {
      seen = call.request;
      callback(null, {
        header: { revision: '42', member_id: '18446744073709551615' },
        kvs: [{ key: call.request.key, value: b('v'), create_revision: '2' }],
        more: false,
        count: '1',
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err === null ? resolve(p) : reject(err),
    );
  });
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    const response = await new Promise<RangeResponseObject>((resolve, reject) => {
      client.makeUnaryRequest(
        range.path,
        range.requestSerialize,
        (bytes: Buffer) => range.responseDeserialize(bytes) as RangeResponseObject,
        { key: b('foo'), limit: '10', sort_order: 'DESCEND' },
        new grpc.Metadata(),
        { deadline: Date.now() + 5_000 },
        (err, value) =>
          value !== undefined ? resolve(value) : reject(err ?? new Error('no response')),
      );
    });
    assert.ok(seen !== undefined);
    assert.deepEqual(seen.key, b('foo'));
    assert.equal(seen.limit, '10');
    assert.equal(seen.sort_order, 'DESCEND');
    assert.equal(response.header?.revision, '42');
    assert.equal(response.header?.member_id, '18446744073709551615');
    assert.equal(response.count, '1');
    assert.equal(response.more, false);
    assert.equal(response.kvs.length, 1);
    assert.deepEqual(response.kvs[0]?.key, b('foo'));
    assert.deepEqual(response.kvs[0]?.value, b('v'));
    assert.equal(response.kvs[0]?.create_revision, '2');
  } finally {
    client.close();
    server.forceShutdown();
  }
});
