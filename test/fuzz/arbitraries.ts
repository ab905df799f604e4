// Valid values of the peer wire formats for the fuzz suites: Raft messages as the core sends
// them, and forwarding frames as the forwarder sends them. The suites mutate their encodings.
import fc from 'fast-check';
import type { AuthOp } from '../../src/core/state/auth-ops.js';
import type { Permission } from '../../src/core/state/auth-perms.js';
import { SERVER_AS, type AuthAs } from '../../src/core/state/auth-store.js';
import { logIndex, nodeId, term } from '../../src/core/base/units.js';
import type { ConfState, Entry, Message, Snapshot } from '../../src/core/raft/types.js';
import type { Command } from '../../src/core/state/command.js';
import type { Compare, RequestOp, TxnRequest } from '../../src/core/state/kv-types.js';
import type { Frame, ForwardAnswer, ForwardOp } from '../../src/replica/member/forward-frame.js';
import type { MemberCommand } from '../../src/replica/member/server-machine.js';

/** fc.record with plain objects (not null-prototype ones), as decoders build them. */
const record: typeof fc.record = ((model: never, constraints?: object) =>
  fc.record(model, { ...constraints, noNullPrototype: true })) as typeof fc.record;

/** Member IDs are below 2^48 (12 hex digits, member-id.ts). */
export const memberIdArb = fc.integer({ min: 1, max: 2 ** 48 - 1 }).map(nodeId);
const termArb = fc.integer({ min: 0, max: 1_000_000 }).map(term);
const indexArb = fc.integer({ min: 0, max: 1_000_000 }).map(logIndex);
const contextArb = fc.integer({ min: 0, max: 2 ** 47 });
const bytesArb = (max = 64): fc.Arbitrary<Uint8Array> => fc.uint8Array({ maxLength: max });

const confArb: fc.Arbitrary<ConfState> = record({
  voters: fc.array(memberIdArb, { maxLength: 5 }),
  learners: fc.array(memberIdArb, { maxLength: 2 }),
});

export const snapshotArb: fc.Arbitrary<Snapshot> = record({
  index: indexArb,
  term: termArb,
  conf: confArb,
  data: bytesArb(128),
});

const envelope = record({ from: memberIdArb, to: memberIdArb, term: termArb });

/** Entries continuing the log after `prevIndex`, as a leader sends them. */
function entriesAfter(prevIndex: number, t: number): fc.Arbitrary<Entry[]> {
  return fc.array(record({ conf: fc.boolean(), data: bytesArb(48) }), { maxLength: 4 }).map((xs) =>
    xs.map((x, i) => ({
      index: logIndex(prevIndex + 1 + i),
      term: term(t),
      type: x.conf ? ('conf' as const) : ('normal' as const),
      data: x.data,
    })),
  );
}

export const messageArb: fc.Arbitrary<Message> = fc.oneof(
  record({
    env: envelope,
    type: fc.constantFrom('vote' as const, 'preVote' as const),
    lastIndex: indexArb,
    lastTerm: termArb,
    transfer: fc.boolean(),
  }).map(({ env, ...m }) => ({ ...env, ...m })),
  record({
    env: envelope,
    type: fc.constantFrom('voteResp' as const, 'preVoteResp' as const),
    reject: fc.boolean(),
  }).map(({ env, ...m }) => ({ ...env, ...m })),
  record({ env: envelope, prevIndex: indexArb, prevTerm: termArb, commit: indexArb }).chain(
    ({ env, prevIndex, prevTerm, commit }) =>
      entriesAfter(prevIndex, env.term).map((entries): Message => ({
        type: 'app',
        ...env,
        prevIndex,
        prevTerm,
        commit,
        entries,
      })),
  ),
  record({
    env: envelope,
    index: indexArb,
    reject: fc.boolean(),
    hintIndex: indexArb,
    hintTerm: termArb,
  }).map(({ env, ...m }): Message => ({ type: 'appResp', ...env, ...m })),
  record({ env: envelope, commit: indexArb, context: contextArb }).map(
    ({ env, ...m }): Message => ({ type: 'heartbeat', ...env, ...m }),
  ),
  record({
    env: envelope,
    type: fc.constantFrom('heartbeatResp' as const, 'readIndex' as const),
    context: contextArb,
  }).map(({ env, ...m }) => ({ ...env, ...m })),
  record({ env: envelope, context: contextArb, index: indexArb }).map(({ env, ...m }): Message => ({
    type: 'readIndexResp',
    ...env,
    ...m,
  })),
  record({ env: envelope, snapshot: snapshotArb }).map(({ env, snapshot }): Message => ({
    type: 'snap',
    ...env,
    snapshot,
  })),
  envelope.map((env): Message => ({ type: 'timeoutNow', ...env })),
);

// ---- key-space commands, as the API layer builds them (kv-types.ts)

const keyArb = fc.uint8Array({ minLength: 1, maxLength: 16 });
const leaseIdArb = fc.bigInt({ min: 0n, max: 2n ** 63n - 1n });

const putArb = record(
  {
    key: keyArb,
    value: bytesArb(32),
    lease: leaseIdArb,
    prevKv: fc.boolean(),
    ignoreValue: fc.boolean(),
    ignoreLease: fc.boolean(),
  },
  { requiredKeys: ['key', 'value'] },
);

const deleteArb = record(
  { key: keyArb, rangeEnd: keyArb, prevKv: fc.boolean() },
  { requiredKeys: ['key'] },
);

const compareResult = fc.constantFrom(
  'EQUAL' as const,
  'GREATER' as const,
  'LESS' as const,
  'NOT_EQUAL' as const,
);
const revisionOperand = fc.integer({ min: 0, max: 1000 });

const compareArb: fc.Arbitrary<Compare> = record({
  key: keyArb,
  result: compareResult,
  operand: fc.oneof(
    revisionOperand.map((version) => ({ target: 'VERSION' as const, version })),
    revisionOperand.map((createRevision) => ({ target: 'CREATE' as const, createRevision })),
    revisionOperand.map((modRevision) => ({ target: 'MOD' as const, modRevision })),
    bytesArb(8).map((value) => ({ target: 'VALUE' as const, value })),
    leaseIdArb.map((lease) => ({ target: 'LEASE' as const, lease })),
  ),
}).map(({ key, result, operand }): Compare => ({ key, result, ...operand }));

const rangeArb = record(
  {
    key: keyArb,
    rangeEnd: keyArb,
    limit: fc.integer({ min: 0, max: 10 }),
    countOnly: fc.boolean(),
  },
  { requiredKeys: ['key'] },
);

const { txn: txnArb } = fc.letrec<{ txn: TxnRequest; op: RequestOp }>((tie) => ({
  txn: record({
    compare: fc.array(compareArb, { maxLength: 3 }),
    success: fc.array(tie('op'), { maxLength: 3 }),
    failure: fc.array(tie('op'), { maxLength: 2 }),
  }),
  op: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    rangeArb.map((request) => ({ type: 'range' as const, request })),
    putArb.map((request) => ({ type: 'put' as const, request })),
    deleteArb.map((request) => ({ type: 'deleteRange' as const, request })),
    tie('txn').map((request) => ({ type: 'txn' as const, request })),
    fc.constant({ type: 'empty' as const }),
  ),
})) as unknown as { txn: fc.Arbitrary<TxnRequest> };

/** Who a request runs as while auth is on (auth-store.ts AuthAs), or nobody. */
const asArb: fc.Arbitrary<AuthAs | undefined> = fc.option(
  fc.oneof(
    record({ user: fc.constantFrom('root', 'alice', ''), revision: fc.nat({ max: 50 }) }),
    fc.constant(SERVER_AS),
  ),
  { nil: undefined },
);
const withAs = <C extends object>(c: C, as: AuthAs | undefined): C =>
  as === undefined ? c : { ...c, as };

const nameArb = fc.constantFrom('root', 'alice', 'bob', 'r1', '');
const permArb: fc.Arbitrary<Permission> = record({
  permType: fc.constantFrom('READ' as const, 'WRITE' as const, 'READWRITE' as const),
  key: keyArb,
  rangeEnd: fc.oneof(fc.constant(new Uint8Array(0)), fc.constant(new Uint8Array([0])), keyArb),
});
const authOpArb: fc.Arbitrary<AuthOp> = fc.oneof(
  fc.constantFrom<AuthOp>(
    { op: 'authEnable' },
    { op: 'authDisable' },
    { op: 'userList' },
    { op: 'roleList' },
  ),
  fc
    .tuple(nameArb, fc.option(fc.constant('$2b$04$abcdefghijklmnopqrstuu'), { nil: null }))
    .map(([name, passwordHash]): AuthOp => ({ op: 'userAdd', name, passwordHash })),
  nameArb.map((name): AuthOp => ({ op: 'userDelete', name })),
  nameArb.map((role): AuthOp => ({ op: 'roleAdd', name: role })),
  nameArb.map((role): AuthOp => ({ op: 'roleDelete', role })),
  fc.tuple(nameArb, nameArb).map(([user, role]): AuthOp => ({ op: 'userGrantRole', user, role })),
  fc.tuple(nameArb, nameArb).map(([name, role]): AuthOp => ({ op: 'userRevokeRole', name, role })),
  fc
    .tuple(nameArb, fc.option(permArb, { nil: null }))
    .map(([name, perm]): AuthOp => ({ op: 'roleGrantPermission', name, perm })),
  fc.tuple(nameArb, permArb).map(([role, p]): AuthOp => ({
    op: 'roleRevokePermission',
    role,
    key: p.key,
    rangeEnd: p.rangeEnd,
  })),
);

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc
    .tuple(putArb, asArb)
    .map(([request, as]): Command => withAs({ type: 'put' as const, request }, as)),
  fc
    .tuple(deleteArb, asArb)
    .map(([request, as]): Command => withAs({ type: 'deleteRange' as const, request }, as)),
  fc
    .tuple(txnArb, asArb)
    .map(([request, as]): Command => withAs({ type: 'txn' as const, request }, as)),
  fc.tuple(authOpArb, asArb).map(([op, as]): Command => withAs({ type: 'auth' as const, op }, as)),
  record({
    name: nameArb,
    tokenPrefix: fc.string({ maxLength: 16 }),
    checkedRevision: fc.nat({ max: 50 }),
  }).map((c): Command => ({ type: 'authenticate', ...c })),
  record({ revision: fc.integer({ min: 1, max: 1000 }), physical: fc.boolean() }).map(
    (request): Command => ({ type: 'compact', request }),
  ),
  record({ id: leaseIdArb, ttlSeconds: fc.integer({ min: 1, max: 3600 }), nowMs: fc.nat() }).map(
    (c): Command => ({ type: 'leaseGrant', ...c }),
  ),
  leaseIdArb.map((id): Command => ({ type: 'leaseRevoke', id })),
  record({ id: leaseIdArb, nowMs: fc.nat() }).map((c): Command => ({
    type: 'leaseKeepAlive',
    ...c,
  })),
  fc
    .array(
      record({
        id: leaseIdArb,
        // null: the reset a renewal of a checkpointed lease commits first.
        remainingTtlSeconds: fc.option(
          fc.integer({ min: 0, max: 60_000 }).map((ms) => ms / 1000),
          { nil: null },
        ),
      }),
      { maxLength: 3 },
    )
    .map((checkpoints): Command => ({ type: 'leaseCheckpoint', checkpoints })),
  record({ nowMs: fc.nat(), extraMs: fc.nat({ max: 10_000 }) }).map((c): Command => ({
    type: 'leaseRefreshAll',
    ...c,
  })),
);

const urlArb = record({
  host: fc.constantFrom('127.0.0.1', '10.0.0.2', 'node-a'),
  port: fc.integer({ min: 1, max: 65535 }),
}).map(({ host, port }) => `http://${host}:${port}`);

export const memberCommandArb: fc.Arbitrary<MemberCommand> = fc.oneof(
  record(
    {
      id: memberIdArb.map(String),
      name: fc.string({ maxLength: 12 }),
      peerUrls: fc.array(urlArb, { minLength: 1, maxLength: 2 }),
      clientUrls: fc.array(urlArb, { maxLength: 2 }),
      logFormatMax: fc.constant(1),
    },
    { requiredKeys: ['id', 'name', 'peerUrls', 'clientUrls'] },
  ).map((member): MemberCommand => ({ type: 'memberSet', member })),
  memberIdArb.map((id): MemberCommand => ({ type: 'memberDelete', id: String(id) })),
);

const forwardOpArb: fc.Arbitrary<ForwardOp> = fc.oneof(
  commandArb.map((cmd): ForwardOp => ({ op: 'propose', cmd })),
  memberCommandArb.map((cmd): ForwardOp => ({ op: 'member', cmd })),
  record({ id: leaseIdArb, keys: fc.boolean() }).map(({ id, keys }): ForwardOp => ({
    op: 'timeToLive',
    id,
    keys,
  })),
  leaseIdArb.map((id): ForwardOp => ({ op: 'keepAlive', id })),
  record({
    peerUrls: fc.array(urlArb, { minLength: 1, maxLength: 2 }),
    isLearner: fc.boolean(),
  }).map(({ peerUrls, isLearner }): ForwardOp => ({ op: 'memberAdd', peerUrls, isLearner })),
  fc.bigInt({ min: 1n, max: 2n ** 48n }).map((id): ForwardOp => ({ op: 'memberRemove', id })),
  record({
    id: fc.bigInt({ min: 1n, max: 2n ** 48n }),
    peerUrls: fc.array(urlArb, { minLength: 1, maxLength: 2 }),
  }).map(({ id, peerUrls }): ForwardOp => ({ op: 'memberUpdate', id, peerUrls })),
  fc.bigInt({ min: 1n, max: 2n ** 48n }).map((id): ForwardOp => ({ op: 'memberPromote', id })),
);

const forwardAnswerArb: fc.Arbitrary<ForwardAnswer> = fc.oneof(
  record({
    value: fc.oneof(fc.constant(null), fc.string({ maxLength: 8 }), fc.nat()),
    index: fc.nat(),
  }).map(({ value, index }): ForwardAnswer => ({
    kind: 'done',
    value,
    index,
  })),
  record({
    kind: fc.constantFrom('refused' as const, 'unknown' as const),
    message: fc.string({ maxLength: 40 }),
  }).map(({ kind, message }): ForwardAnswer => ({ kind, error: { code: 'Unavailable', message } })),
);

export const forwardFrameArb: fc.Arbitrary<Frame> = fc.oneof(
  record({ id: fc.nat(), deadlineMs: fc.nat(), body: forwardOpArb }).map((f): Frame => ({
    kind: 'request',
    ...f,
  })),
  record({ id: fc.nat(), answer: forwardAnswerArb }).map((f): Frame => ({ kind: 'answer', ...f })),
);
