// Golden interaction scripts for the Raft core (testdata/raft/*.txt). Each script is run through
// the harness and its regenerated text compared with the file. With REWRITE=1 the regenerated
// text is written back instead, to be reviewed as a diff before it is committed.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runScript } from './interaction-harness.js';
import { repoRoot } from '../support/paths.js';

/** A line diff (longest common subsequence), with a few lines of context around each change. */
function lineDiff(expected: string, actual: string, context = 3): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () =>
    new Array<number>(b.length + 1).fill(0),
  );
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      const row = lcs[i] as number[];
      const next = lcs[i + 1] as number[];
      row[j] =
        a[i] === b[j]
          ? (next[j + 1] as number) + 1
          : Math.max(next[j] as number, row[j + 1] as number);
    }
  }
  const ops: { kind: ' ' | '-' | '+'; text: string; line: number }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ kind: ' ', text: a[i] as string, line: i + 1 });
      i++;
      j++;
    } else if (j < b.length && (i >= a.length || (lcs[i]?.[j + 1] ?? 0) > (lcs[i + 1]?.[j] ?? 0))) {
      ops.push({ kind: '+', text: b[j] as string, line: i + 1 });
      j++;
    } else {
      ops.push({ kind: '-', text: a[i] as string, line: i + 1 });
      i++;
    }
  }
  const show = new Set<number>();
  ops.forEach((op, k) => {
    if (op.kind === ' ') return;
    for (let c = Math.max(0, k - context); c <= Math.min(ops.length - 1, k + context); c++)
      show.add(c);
  });
  const out: string[] = [];
  let last = -2;
  ops.forEach((op, k) => {
    if (!show.has(k)) return;
    if (k !== last + 1) out.push(`@@ near line ${op.line} of the file`);
    out.push(`${op.kind} ${op.text}`);
    last = k;
  });
  return out.join('\n');
}

const dir = join(repoRoot(), 'testdata', 'raft');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.txt'))
  .sort();
const rewrite = process.env.REWRITE === '1';

void test('there are golden scripts to run', () => {
  assert.ok(files.length > 0, `no scripts in ${dir}`);
});

for (const f of files) {
  void test(`testdata/raft/${f}`, () => {
    const path = join(dir, f);
    const want = readFileSync(path, 'utf8');
    const got = runScript(want);
    if (rewrite) {
      if (got !== want) writeFileSync(path, got);
      return;
    }
    if (got !== want) {
      assert.fail(
        `${f}: output differs from the golden file (- file, + harness); ` +
          `run with REWRITE=1 to accept:\n${lineDiff(want, got)}`,
      );
    }
  });
}
