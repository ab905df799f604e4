// Porcupine's six published kv histories must get their published verdicts. The corpus is read at
// run time from testdata/porcupine; a missing corpus fails the suite, it is never skipped.

import { strict as assert } from 'node:assert';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { defaultPorcupineDir, loadPorcupineKvCorpus } from './porcupine-corpus.js';
import { checkPorcupineKv, parsePorcupineKv, PorcupineParseError } from './porcupine.js';

/** Generous: the slowest file (c50-ok) takes about 0.3 s on one core. */
const PER_FILE_TIMEOUT_MS = 30_000;

void describe('Porcupine kv corpus', () => {
  const dir = defaultPorcupineDir();

  void it('is present', () => {
    assert.ok(
      existsSync(join(dir, 'verdicts.json')),
      `Porcupine corpus missing at ${dir}: expected testdata/porcupine in the repository`,
    );
  });

  void it('gets every published verdict', () => {
    const corpus = loadPorcupineKvCorpus(dir);
    assert.equal(corpus.length, 6, 'six kv files listed in verdicts.json');
    for (const c of corpus) {
      const started = performance.now();
      const result = checkPorcupineKv(c.history, { timeoutMs: PER_FILE_TIMEOUT_MS });
      const elapsedMs = performance.now() - started;
      assert.equal(
        result.verdict,
        c.linearizable ? 'ok' : 'illegal',
        `${c.name}: ${result.detail ?? ''} (${elapsedMs.toFixed(1)} ms)`,
      );
      assert.equal(result.partitions, new Set(c.history.map((op) => op.input.key)).size);
    }
  });

  void it('explains the stale read in c01-bad', () => {
    const c01 = loadPorcupineKvCorpus(dir).find((c) => c.name === 'kv/c01-bad.txt');
    assert.ok(c01 !== undefined);
    const result = checkPorcupineKv(c01.history);
    // README: line 60 is a get of key "7" returning "x 0 0 y" after "x 0 3 y" was appended.
    assert.equal(result.illegalKey, '7');
    assert.match(result.detail ?? '', /get\("7"\) → "x 0 0 y" \[59, 60\]/);
    assert.match(result.detail ?? '', /state "x 0 0 yx 0 3 y"/);
  });

  void it('fails loudly when the folder is missing', () => {
    assert.throws(() => loadPorcupineKvCorpus('/nonexistent/porcupine'), /corpus not found/);
  });
});

void describe('parsePorcupineKv', () => {
  const lines = [
    '{:process 0, :type :invoke, :f :put, :key "1", :value "x 0 0 y"}',
    '{:process 1, :type :invoke, :f :get, :key "1", :value nil}',
    '{:process 1, :type :ok, :f :get, :key "1", :value ""}',
    '{:process 0, :type :ok, :f :put, :key "1", :value "x 0 0 y"}',
    '{:process 1, :type :invoke, :f :append, :key "2", :value "x 1 1 y"}',
  ];

  void it('uses line numbers as times and pairs each :invoke with the next :ok', () => {
    const ops = parsePorcupineKv(lines.join('\n') + '\n');
    assert.deepEqual(ops, [
      {
        clientId: 0,
        input: { type: 'put', key: '1', value: 'x 0 0 y' },
        output: { type: 'put' },
        call: 1,
        return: 4,
      },
      {
        clientId: 1,
        input: { type: 'get', key: '1' },
        output: { type: 'get', value: '' },
        call: 2,
        return: 3,
      },
      {
        clientId: 1,
        input: { type: 'append', key: '2', value: 'x 1 1 y' },
        output: undefined,
        call: 5,
        return: Infinity,
      },
    ]);
  });

  void it('rejects malformed and unmatched lines with their line number', () => {
    assert.throws(() => parsePorcupineKv('{:process 0, :type :ok}'), PorcupineParseError);
    assert.throws(
      () => parsePorcupineKv(lines[2] as string),
      (e: unknown) => e instanceof PorcupineParseError && e.line === 1,
    );
    assert.throws(
      () => parsePorcupineKv([lines[0], lines[0]].join('\n')),
      /line 2: process 0 invoked twice/,
    );
    assert.throws(
      () =>
        parsePorcupineKv(
          [lines[0], '{:process 0, :type :ok, :f :put, :key "9", :value "x 0 0 y"}'].join('\n'),
        ),
      /does not match the :invoke on line 1/,
    );
  });
});
