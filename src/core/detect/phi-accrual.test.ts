import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { akkaPhiConfig, cassandraPhiConfig, PhiAccrualDetector } from './phi-accrual.js';
import { FixedTimeoutDetector, fixedTimeoutLevel, fixedTimeoutMs } from './fixed-timeout.js';

describe('PhiAccrualDetector (Akka defaults)', () => {
  it('bootstraps at mean ± mean/4: mean 1000, σ 250', () => {
    const d = new PhiAccrualDetector(akkaPhiConfig(1000));
    assert.equal(d.sampleCount, 2);
    assert.equal(d.meanMs, 1000);
    assert.equal(d.stdDevMs, 250);
  });
  it('reports 0 and available before the first heartbeat', () => {
    const d = new PhiAccrualDetector(akkaPhiConfig(1000));
    assert.equal(d.level(123_456), 0);
    assert.ok(d.isAvailable(123_456));
  });
  it('turns unavailable between 5.2 s and 5.4 s of silence on bootstrap statistics', () => {
    const d = new PhiAccrualDetector(akkaPhiConfig(1000));
    d.heartbeat(0);
    assert.ok(d.isAvailable(5200));
    assert.ok(!d.isAvailable(5400));
  });
  it('with steady 1 s heartbeats fires ≈ 4.5 s after the last one (σ floor 100 ms)', () => {
    const d = new PhiAccrualDetector(akkaPhiConfig(1000));
    for (let t = 0; t <= 200_000; t += 1000) d.heartbeat(t);
    assert.ok(d.isAvailable(200_000 + 4400));
    assert.ok(!d.isAvailable(200_000 + 4700));
  });
  it('does not learn an interval from a heartbeat that arrives after it gave up', () => {
    const d = new PhiAccrualDetector(akkaPhiConfig(1000));
    d.heartbeat(0);
    d.heartbeat(1000);
    const n = d.sampleCount;
    d.heartbeat(60_000);
    assert.equal(d.sampleCount, n);
    assert.ok(d.isAvailable(60_500));
  });
  it('shift() moves the silence back by a stall, reset() forgets', () => {
    const d = new PhiAccrualDetector(akkaPhiConfig(1000));
    d.heartbeat(0);
    d.shift(30_000);
    assert.ok(d.isAvailable(31_000));
    d.reset();
    assert.equal(d.lastHeartbeatMs, undefined);
    assert.equal(d.sampleCount, 2);
  });
});

describe('PhiAccrualDetector (Cassandra defaults)', () => {
  it('seeds 2 s and ignores intervals above MAX_INTERVAL (2 s)', () => {
    const d = new PhiAccrualDetector(cassandraPhiConfig(1000));
    assert.equal(d.meanMs, 2000);
    d.heartbeat(0);
    d.heartbeat(5000);
    assert.equal(d.sampleCount, 1);
    d.heartbeat(6000);
    assert.equal(d.sampleCount, 2);
    assert.equal(d.meanMs, 1500);
  });
  it('convicts after 18.42 mean intervals of silence', () => {
    const d = new PhiAccrualDetector({ ...cassandraPhiConfig(1000), bootstrapIntervalsMs: [1000] });
    for (let t = 0; t <= 100_000; t += 1000) d.heartbeat(t);
    assert.ok(d.isAvailable(100_000 + 18_400));
    assert.ok(!d.isAvailable(100_000 + 18_440));
  });
});

describe('FixedTimeoutDetector', () => {
  it('timeout = k × interval', () => {
    assert.equal(fixedTimeoutMs({ heartbeatIntervalMs: 1000, k: 4, thresholdLevel: 8 }), 4000);
    assert.equal(fixedTimeoutMs({ heartbeatIntervalMs: 250, k: 3, thresholdLevel: 8 }), 750);
  });
  it('level is a linear ramp reaching the threshold at the timeout', () => {
    const table: [number, number][] = [
      [0, 0],
      [1000, 2],
      [2000, 4],
      [4000, 8],
      [8000, 16],
    ];
    for (const [silence, level] of table) assert.equal(fixedTimeoutLevel(silence, 4000, 8), level);
  });
  it('is available until the timeout', () => {
    const d = new FixedTimeoutDetector();
    d.heartbeat(1000);
    assert.ok(d.isAvailable(4999));
    assert.ok(!d.isAvailable(5000));
  });
});
