// ReadIndex must be confirmed by a heartbeat round sent after the read arrived (thesis §6.4).
// Regression for a reused context: a follower's read and the leader's own later read both used
// context 7, and a late answer to the follower's round confirmed the leader's read after a new
// leader had already committed a write — a stale read (the class of etcd#20418).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prng } from '../../src/core/base/prng.js';
import { nodeId, type NodeId } from '../../src/core/base/units.js';
import { Raft } from '../../src/core/raft/raft.js';
import type { Message, ReadState } from '../../src/core/raft/types.js';

const ids = [nodeId(1), nodeId(2), nodeId(3)];

function cluster() {
  const nodes = new Map<NodeId, Raft>();
  const reads = new Map<NodeId, ReadState[]>();
  for (const id of ids) {
    nodes.set(
      id,
      new Raft({
        id,
        initialConf: { voters: ids, learners: [] },
        electionTicks: 10,
        heartbeatTicks: 1,
        prng: prng(id * 7),
        storage: { hardState: undefined, snapshot: undefined, entries: [] },
      }),
    );
    reads.set(id, []);
  }
  const node = (id: number): Raft => nodes.get(nodeId(id)) as Raft;
  /** Persist, send and apply every Ready; deliver messages that `pass` lets through. */
  const run = (pass: (m: Message) => boolean = () => true): void => {
    for (let round = 0; round < 50; round++) {
      const out: Message[] = [];
      for (const r of nodes.values()) {
        while (r.hasReady()) {
          const rd = r.ready();
          out.push(...rd.messages);
          reads.get(r.id)?.push(...rd.readStates);
          r.advance();
        }
      }
      if (out.length === 0) return;
      for (const m of out) if (pass(m)) nodes.get(m.to)?.step(m);
    }
  };
  return { node, run, reads };
}

test("a late answer to another requester's round does not confirm a deposed leader's read", () => {
  const { node, run, reads } = cluster();
  node(1).hup();
  run();
  node(1).propose(new TextEncoder().encode('a'));
  run();
  // Follower 2 reads with context 7; node 3's answer to that round is held back.
  node(2).readIndex(7);
  const held: Message[] = [];
  run((m) => {
    if (m.type === 'heartbeatResp' && m.from === nodeId(3)) {
      held.push(m);
      return false;
    }
    return true;
  });
  assert.equal(reads.get(nodeId(2))?.length, 1, 'the follower read was served');
  // Node 1 is cut off; 2 and 3 elect 2 and commit W.
  const cut = (m: Message): boolean => m.from !== nodeId(1) && m.to !== nodeId(1);
  for (let i = 0; i < 25; i++) {
    // Past the election timeout, 2 and 3 no longer count node 1 as a live leader.
    node(2).tick();
    node(3).tick();
    run(cut);
  }
  if (node(2).role !== 'leader') node(2).hup();
  run(cut);
  assert.equal(node(2).role, 'leader');
  assert.ok(node(2).propose(new TextEncoder().encode('W')).ok);
  run(cut);
  // Node 1 still believes it leads and takes a local read, also with context 7.
  assert.equal(node(1).role, 'leader');
  node(1).readIndex(7);
  run(() => false);
  for (const m of held) node(1).step(m);
  run(() => false);
  assert.deepEqual(reads.get(nodeId(1)), [], 'a deposed leader released a read it never confirmed');
});
