// Table tests for the majority arithmetic of src/core/raft/quorum.ts (Raft §5.2, §5.3).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex, nodeId, type LogIndex, type NodeId } from '../../src/core/base/units.js';
import { quorumIndex, voteResult } from '../../src/core/raft/quorum.js';

const ids = (...xs: number[]): NodeId[] => xs.map(nodeId);

function matches(o: Record<number, number>): Map<NodeId, LogIndex> {
  return new Map(Object.entries(o).map(([k, v]) => [nodeId(Number(k)), logIndex(v)]));
}

function votes(o: Record<number, boolean>): Map<NodeId, boolean> {
  return new Map(Object.entries(o).map(([k, v]) => [nodeId(Number(k)), v]));
}

void test('quorumIndex: the largest index a majority of voters has reached', () => {
  const cases: { name: string; voters: NodeId[]; match: Record<number, number>; want: number }[] = [
    { name: 'no voters', voters: [], match: {}, want: 0 },
    { name: 'single voter', voters: ids(1), match: { 1: 5 }, want: 5 },
    { name: 'three voters', voters: ids(1, 2, 3), match: { 1: 5, 2: 3, 3: 1 }, want: 3 },
    { name: 'missing voters count as 0', voters: ids(1, 2, 3), match: { 1: 5 }, want: 0 },
    { name: 'two of three suffice', voters: ids(1, 2, 3), match: { 1: 7, 2: 7 }, want: 7 },
    {
      name: 'four voters need three',
      voters: ids(1, 2, 3, 4),
      match: { 1: 4, 2: 3, 3: 2, 4: 1 },
      want: 2,
    },
    {
      name: 'five voters need three',
      voters: ids(1, 2, 3, 4, 5),
      match: { 1: 9, 2: 7, 3: 5, 4: 3, 5: 1 },
      want: 5,
    },
    {
      name: 'non-voters are ignored',
      voters: ids(1, 2, 3),
      match: { 1: 9, 3: 0, 4: 9, 5: 9 },
      want: 0,
    },
    {
      name: 'order of voters does not matter',
      voters: ids(3, 1, 2),
      match: { 1: 2, 2: 8, 3: 5 },
      want: 5,
    },
  ];
  for (const c of cases) {
    assert.equal(quorumIndex(c.voters, matches(c.match)), c.want, c.name);
  }
});

void test('voteResult: won at a majority of grants, lost once a majority is out of reach', () => {
  const cases: {
    name: string;
    voters: NodeId[];
    votes: Record<number, boolean>;
    want: 'won' | 'lost' | 'pending';
  }[] = [
    { name: 'no voters can never win', voters: [], votes: {}, want: 'lost' },
    { name: 'single voter, own vote', voters: ids(1), votes: { 1: true }, want: 'won' },
    { name: 'single voter, no answer yet', voters: ids(1), votes: {}, want: 'pending' },
    { name: 'one of three', voters: ids(1, 2, 3), votes: { 1: true }, want: 'pending' },
    { name: 'two of three', voters: ids(1, 2, 3), votes: { 1: true, 2: true }, want: 'won' },
    {
      name: 'one grant one refusal',
      voters: ids(1, 2, 3),
      votes: { 1: true, 2: false },
      want: 'pending',
    },
    {
      name: 'two refusals of three',
      voters: ids(1, 2, 3),
      votes: { 1: true, 2: false, 3: false },
      want: 'lost',
    },
    {
      name: 'two of four is not enough',
      voters: ids(1, 2, 3, 4),
      votes: { 1: true, 2: true },
      want: 'pending',
    },
    {
      name: 'three of four',
      voters: ids(1, 2, 3, 4),
      votes: { 1: true, 2: true, 3: true },
      want: 'won',
    },
    {
      name: 'two refusals of four',
      voters: ids(1, 2, 3, 4),
      votes: { 1: true, 3: false, 4: false },
      want: 'lost',
    },
    {
      name: 'split 2-2 of five, one silent',
      voters: ids(1, 2, 3, 4, 5),
      votes: { 1: true, 3: true, 2: false, 4: false },
      want: 'pending',
    },
    {
      name: 'grants from non-voters do not count',
      voters: ids(1, 2, 3),
      votes: { 1: true, 4: true, 5: true },
      want: 'pending',
    },
  ];
  for (const c of cases) {
    assert.equal(voteResult(c.voters, votes(c.votes)), c.want, c.name);
  }
});
