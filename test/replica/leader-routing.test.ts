// LeaderRouting while leadership moves, on a hand-driven clock: a request the leader refuses
// because its own transfer is under way goes to the successor the moment the successor is
// known, not a heartbeat later (issue 19: every write of a SIGTERM hand-off stalled 100 ms),
// and one refused with no leader change in sight is asked again after a heartbeat.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MUTANTS } from '../../src/core/base/mutants.js';
import { NONE, type NodeId } from '../../src/core/base/units.js';
import { ERR_NOT_LEADER } from '../../src/core/state/etcd-errors.js';
import type { ForwardAnswer, ForwardOp } from '../../src/replica/member/forward-frame.js';
import type { Forwarder } from '../../src/replica/member/forwarder.js';
import { LeaderRouting } from '../../src/replica/member/leader-routing.js';
import { Waiters } from '../../src/replica/member/waiters.js';
import type { PeerChannel } from '../../src/replica/io.js';
import type { Replica } from '../../src/replica/replica.js';
import type { ServerResult } from '../../src/replica/member/server-machine.js';
import { HandClock } from '../support/hand-clock.js';

const HEARTBEAT_MS = 100;
const SELF = 1 as NodeId;
const SUCCESSOR = 2 as NodeId;

const op: ForwardOp = { op: 'keepAlive', id: 7n };

function routing(clock: HandClock) {
  const raft = { role: 'leader' as 'leader' | 'follower', leader: SELF, leaderSuspected: false };
  const waiters = new Waiters(clock);
  const forwardedAtMs: number[] = [];
  const localAtMs: number[] = [];
  const forwarder = {
    request(to: NodeId): Promise<ForwardAnswer> {
      assert.equal(to, SUCCESSOR);
      forwardedAtMs.push(clock.nowMs());
      return Promise.resolve({ kind: 'done', value: 'ok', index: 1 });
    },
  } as unknown as Forwarder;
  const peers = {
    heard: () => ({ peerMs: clock.nowMs(), localMs: clock.nowMs() }),
  } as unknown as PeerChannel;
  const r = new LeaderRouting({
    replica: () => ({ raft }) as unknown as Replica<ServerResult>,
    forwarder,
    peers,
    waiters,
    clock,
    requestTimeoutMs: 5_000,
    heartbeatMs: HEARTBEAT_MS,
    isStopped: () => false,
    mutants: NO_MUTANTS,
    serveLocal: () => {
      localAtMs.push(clock.nowMs());
      // Our own transfer is under way: proposals are refused while we still lead.
      return Promise.resolve({ kind: 'refused', error: ERR_NOT_LEADER });
    },
  });
  const moveTo = (leader: NodeId): void => {
    raft.role = leader === SELF ? 'leader' : 'follower';
    raft.leader = leader;
    waiters.onLeaderChange();
  };
  return { r, moveTo, forwardedAtMs, localAtMs };
}

test('a request refused during our transfer goes to the successor as soon as it is known', async () => {
  const clock = new HandClock();
  const { r, moveTo, forwardedAtMs, localAtMs } = routing(clock);
  const answer = r.run(op, undefined, 'safe');
  await clock.advanceTo(5);
  assert.deepEqual(localAtMs, [0]);
  // The transfer's step-down (no leader for a moment), then the successor's election.
  moveTo(NONE);
  await clock.advanceTo(8);
  moveTo(SUCCESSOR);
  await clock.advanceTo(12);
  assert.equal(await answer, 'ok');
  assert.deepEqual(
    forwardedAtMs,
    [8],
    'forwarded when the successor was known, not a heartbeat on',
  );
});

test('a refusal with no leader change in sight is asked again after a heartbeat', async () => {
  const clock = new HandClock();
  const { r, moveTo, forwardedAtMs, localAtMs } = routing(clock);
  const answer = r.run(op, undefined, 'safe');
  await clock.advanceTo(HEARTBEAT_MS - 1);
  assert.deepEqual(localAtMs, [0]);
  await clock.advanceTo(HEARTBEAT_MS);
  assert.deepEqual(localAtMs, [0, HEARTBEAT_MS]);
  await clock.advanceTo(HEARTBEAT_MS + 30);
  moveTo(SUCCESSOR);
  await clock.advanceTo(HEARTBEAT_MS + 50);
  assert.equal(await answer, 'ok');
  assert.deepEqual(forwardedAtMs, [HEARTBEAT_MS + 30]);
});
