// Cluster configuration: which nodes vote and which only learn. Single-server changes (thesis
// §4.1) take effect as soon as a node appends the entry, committed or not, and are undone if the
// entry is truncated; that is why only one change may be pending at a time.
import { assert } from '../base/assert.js';
import type { LogIndex, NodeId } from '../base/units.js';
import type { ConfChange, ConfState } from './types.js';

export interface ConfAt {
  readonly index: LogIndex;
  readonly conf: ConfState;
}

export function isVoter(c: ConfState, id: NodeId): boolean {
  return c.voters.includes(id);
}

export function applyConfChange(c: ConfState, cc: ConfChange): ConfState {
  const voters = c.voters.filter((v) => v !== cc.nodeId);
  const learners = c.learners.filter((l) => l !== cc.nodeId);
  switch (cc.type) {
    case 'addVoter':
      voters.push(cc.nodeId);
      break;
    case 'addLearner':
      // Demoting a voter to a learner is allowed; adding an existing learner is a no-op.
      learners.push(cc.nodeId);
      break;
    case 'removeNode':
      break;
  }
  voters.sort((a, b) => a - b);
  learners.sort((a, b) => a - b);
  return { voters, learners };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeConfChange(cc: ConfChange): Uint8Array {
  return encoder.encode(JSON.stringify({ t: cc.type, n: cc.nodeId }));
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  const o = JSON.parse(decoder.decode(data)) as { t: ConfChange['type']; n: NodeId };
  assert(o.t === 'addVoter' || o.t === 'addLearner' || o.t === 'removeNode', 'bad conf change');
  return { type: o.t, nodeId: o.n };
}

export function describeConf(c: ConfState): string {
  const l = c.learners.length > 0 ? ` learners=(${c.learners.join(' ')})` : '';
  return `voters=(${c.voters.join(' ')})${l}`;
}
