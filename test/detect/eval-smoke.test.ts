// Smoke test of `tenure detect eval`: the harness on a tiny configuration, through the same code
// the command runs (worker pool included), checking the shape of the JSON it prints. No timing.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runDetectEval } from '../../src/cli/detect.js';
import { jsonReport, markdownReport, svgPlot } from '../../src/detect-eval/index.js';

describe('detect eval (smoke)', () => {
  it('produces {"rows":[…]} with every field the issue names, for every detector', async () => {
    const report = await runDetectEval({
      sizes: [5],
      scenarios: ['silent-crash', 'crash-with-evidence', 'quiet-lan'],
      seed: 3,
      scale: 0.07,
      jobs: 2,
    });
    const parsed = JSON.parse(jsonReport(report)) as { rows: Record<string, unknown>[] };
    assert.ok(Array.isArray(parsed.rows));
    assert.equal(parsed.rows.length, 3 * 6);
    const detectors = new Set(parsed.rows.map((r) => r['detector']));
    assert.deepEqual([...detectors].sort(), [
      'akka-phi',
      'cassandra-phi',
      'fixed-timeout',
      'memberlist',
      'swim',
      'tenure',
    ]);
    for (const r of parsed.rows) {
      assert.equal(typeof r['scenario'], 'string');
      assert.equal(typeof r['detector'], 'string');
      assert.equal(r['n'], 5);
      for (const k of ['detectionP50Ms', 'detectionP99Ms']) {
        assert.ok(r[k] === null || typeof r[k] === 'number', `${k} of ${JSON.stringify(r)}`);
      }
      assert.equal(typeof r['falseDeadPerNodeHour'], 'number');
      assert.equal(typeof r['packetsPerNodePerSecond'], 'number');
      assert.ok((r['packetsPerNodePerSecond'] as number) > 0);
    }
    const crash = parsed.rows.find(
      (r) => r['scenario'] === 'silent-crash' && r['detector'] === 'tenure',
    );
    assert.equal(typeof crash?.['detectionP99Ms'], 'number');
    assert.ok(parsed.rows.some((r) => r['scenario'] === 'crash-with-evidence'));
    assert.ok(markdownReport(report).includes('| tenure |'));
    assert.ok(svgPlot(report).startsWith('<svg'));
    assert.ok(report.targets.length > 0);
  });
});
