// The progress watchdog (src/client/progress-watchdog.ts) on a ManualClock: it fires once, the
// deadline after the start or the latest progress(), and never after stop().
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/client/index.js';
import { ProgressWatchdog } from '../../src/client/progress-watchdog.js';

test('fires the deadline after the start when progress() is never called; once', () => {
  const clock = new ManualClock();
  let fired = 0;
  const w = new ProgressWatchdog(clock, 1_000, () => fired++);
  clock.advance(999);
  assert.equal(fired, 0);
  assert.equal(w.stuck, false);
  clock.advance(1);
  assert.equal(fired, 1);
  assert.equal(w.stuck, true);
  w.progress(); // too late: stuck for good
  clock.advance(5_000);
  assert.equal(fired, 1);
});

test('each progress() restarts the count; the deadline counts from the latest call', () => {
  const clock = new ManualClock();
  let fired = 0;
  const w = new ProgressWatchdog(clock, 1_000, () => fired++);
  for (let i = 0; i < 10; i++) {
    clock.advance(900);
    w.progress();
  }
  assert.equal(fired, 0, 'ten steps of 900 ms, each under the deadline');
  clock.advance(999);
  assert.equal(fired, 0);
  clock.advance(1);
  assert.equal(fired, 1);
});

test('stop() ends the watch: no verdict afterwards, no timer left', () => {
  const clock = new ManualClock();
  let fired = 0;
  const w = new ProgressWatchdog(clock, 1_000, () => fired++);
  clock.advance(500);
  w.stop();
  assert.equal(clock.pendingTimers, 0);
  clock.advance(5_000);
  assert.equal(fired, 0);
  assert.equal(w.stuck, false);
});

test('rejects a deadline that is not a finite number > 0', () => {
  const clock = new ManualClock();
  for (const d of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => new ProgressWatchdog(clock, d, () => {}), RangeError);
  }
});
