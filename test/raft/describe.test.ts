// The canonical text forms of src/core/raft/describe.ts, pinned: golden scripts, logs and the CLI
// all depend on them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex, nodeId, term } from '../../src/core/base/units.js';
import { encodeConfChange } from '../../src/core/raft/conf.js';
import {
  describeData,
  describeEntry,
  describeHardState,
  describeMessage,
  describeReady,
} from '../../src/core/raft/describe.js';
import type { Entry, Message } from '../../src/core/raft/types.js';

const enc = new TextEncoder();
const e = (i: number, t: number, text = ''): Entry => ({
  index: logIndex(i),
  term: term(t),
  type: 'normal',
  data: enc.encode(text),
});
const env = { from: nodeId(1), to: nodeId(2), term: term(1) };

void test('describeEntry', () => {
  assert.equal(describeEntry(e(4, 1)), '4/1 noop');
  assert.equal(describeEntry(e(5, 1, 'put-x')), '5/1 put-x');
  assert.equal(describeEntry(e(5, 1, 'a b')), '5/1 "a b"');
  const cc: Entry = {
    index: logIndex(6),
    term: term(2),
    type: 'conf',
    data: encodeConfChange({ type: 'addVoter', nodeId: nodeId(4) }),
  };
  assert.equal(describeEntry(cc), '6/2 conf addVoter 4');
});

void test('describeData: short printable text as is, anything else by size', () => {
  assert.equal(describeData(new Uint8Array([0xff, 0x00])), '<2 bytes>');
  assert.equal(describeData(enc.encode('x'.repeat(40))), '<40 bytes>');
  assert.equal(describeData(enc.encode('say "hi"')), '"say \\"hi\\""');
});

void test('describeMessage', () => {
  const cases: [Message, string][] = [
    [
      {
        ...env,
        type: 'app',
        prevIndex: logIndex(3),
        prevTerm: term(1),
        entries: [e(4, 1), e(5, 1)],
        commit: logIndex(3),
      },
      '1->2 app term=1 prev=3/1 entries=[4/1 5/1] commit=3',
    ],
    [
      {
        ...env,
        type: 'appResp',
        index: logIndex(5),
        reject: false,
        hintIndex: logIndex(0),
        hintTerm: term(0),
      },
      '1->2 appResp term=1 index=5',
    ],
    [
      {
        ...env,
        type: 'appResp',
        index: logIndex(5),
        reject: true,
        hintIndex: logIndex(3),
        hintTerm: term(1),
      },
      '1->2 appResp term=1 index=5 reject hint=3/1',
    ],
    [
      { ...env, type: 'vote', lastIndex: logIndex(7), lastTerm: term(2), transfer: true },
      '1->2 vote term=1 last=7/2 transfer',
    ],
    [{ ...env, type: 'preVoteResp', reject: true }, '1->2 preVoteResp term=1 reject'],
    [
      { ...env, type: 'heartbeat', commit: logIndex(4), context: 0 },
      '1->2 heartbeat term=1 commit=4',
    ],
    [{ ...env, type: 'heartbeatResp', context: 9 }, '1->2 heartbeatResp term=1 ctx=9'],
    [
      {
        ...env,
        type: 'snap',
        snapshot: {
          index: logIndex(6),
          term: term(2),
          conf: { voters: [nodeId(1), nodeId(2)], learners: [nodeId(3)] },
          data: new Uint8Array(0),
        },
      },
      '1->2 snap term=1 snap=6/2 voters=(1 2) learners=(3)',
    ],
    [
      { ...env, type: 'readIndexResp', context: 7, index: logIndex(5) },
      '1->2 readIndexResp term=1 ctx=7 index=5',
    ],
    [{ ...env, type: 'timeoutNow' }, '1->2 timeoutNow term=1'],
  ];
  for (const [m, want] of cases) assert.equal(describeMessage(m), want);
});

void test('describeReady lists only what is set, in handling order', () => {
  assert.equal(
    describeReady({
      softState: undefined,
      hardState: { term: term(2), vote: nodeId(1), commit: logIndex(3) },
      snapshot: undefined,
      entries: [e(4, 2)],
      mustSync: true,
      committedEntries: [e(3, 2, 'x')],
      messages: [{ ...env, type: 'timeoutNow' }],
      readStates: [{ index: logIndex(3), context: 5 }],
    }),
    [
      'hard: term=2 vote=1 commit=3',
      'entries:',
      '  4/2 noop',
      'messages:',
      '  1->2 timeoutNow term=1',
      'committed:',
      '  3/2 x',
      'reads: ctx=5 index=3',
    ].join('\n'),
  );
  assert.equal(
    describeHardState({ term: term(1), vote: nodeId(0), commit: logIndex(0) }),
    'term=1 vote=0 commit=0',
  );
});
