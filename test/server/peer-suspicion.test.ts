// PeerSuspicion: φ per peer from arrival times, and the bands the dashboard and metrics show.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeId } from '../../src/core/base/units.js';
import {
  PEER_PHI_LATE,
  PEER_PHI_SUSPECT,
  PeerSuspicion,
  suspicionOf,
} from '../../src/server/peer-suspicion.js';

const HEARTBEAT_MS = 100;
const peer = 2 as NodeId;

function regular(s: PeerSuspicion, untilMs: number): void {
  for (let t = 0; t <= untilMs; t += HEARTBEAT_MS) s.heard(peer, t);
}

test('nothing is known of a peer before it sends', () => {
  const s = new PeerSuspicion(HEARTBEAT_MS);
  assert.equal(s.phi(peer, 1000), undefined);
});

test('a regular peer is ok; silence raises φ to late, then suspect', () => {
  const s = new PeerSuspicion(HEARTBEAT_MS);
  regular(s, 10_000);
  const last = 10_000;
  const at = (silenceMs: number): number => s.phi(peer, last + silenceMs) ?? NaN;
  assert.equal(suspicionOf(at(HEARTBEAT_MS)), 'ok');
  assert.ok(at(200) < PEER_PHI_LATE, 'a heartbeat late by one interval is not yet late');
  assert.equal(suspicionOf(at(500)), 'late');
  assert.equal(suspicionOf(at(800)), 'suspect');
  assert.ok(at(800) >= PEER_PHI_SUSPECT);
  // φ only grows with silence.
  let prev = -Infinity;
  for (let ms = 0; ms <= 5000; ms += 50) {
    assert.ok(at(ms) >= prev, `monotonic at ${ms} ms`);
    prev = at(ms);
  }
});

test('one arrival after a long silence clears suspicion and teaches nothing', () => {
  const s = new PeerSuspicion(HEARTBEAT_MS);
  regular(s, 5000);
  const back = 5000 + 3000;
  assert.equal(suspicionOf(s.phi(peer, back) ?? NaN), 'suspect');
  s.heard(peer, back);
  assert.equal(suspicionOf(s.phi(peer, back + HEARTBEAT_MS) ?? NaN), 'ok');
  // The 3 s gap was not learned as a normal interval: 500 ms of silence is still late.
  assert.equal(suspicionOf(s.phi(peer, back + 500) ?? NaN), 'late');
});

test('peers are judged apart', () => {
  const s = new PeerSuspicion(HEARTBEAT_MS);
  const other = 3 as NodeId;
  regular(s, 2000);
  s.heard(other, 0);
  assert.equal(suspicionOf(s.phi(peer, 2100) ?? NaN), 'ok');
  assert.equal(suspicionOf(s.phi(other, 2100) ?? NaN), 'suspect');
});
