#!/usr/bin/env node
// Branch coverage of the code the simulator attacks, under a sweep:
//
//   node scripts/sim-coverage.mjs [--seeds 600] [--list]
//
// runs `bin/tenure sim --seeds N --no-shrink` with NODE_V8_COVERAGE (its worker threads write
// their coverage too) and counts V8's block ranges — one per branch arm, loop body and function —
// in dist/src/core/raft, dist/src/replica and dist/src/core/state: a block is covered if any
// thread ran it. These are blocks of the compiled JavaScript (tsc keeps the source's branches),
// and they include the planted mutants' branches, which a sweep without mutants never takes.
// `--list` prints each uncovered block's source line.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const seedsAt = args.indexOf('--seeds');
const seeds = seedsAt >= 0 ? Number(args[seedsAt + 1]) : 600;
if (!Number.isInteger(seeds) || seeds < 1) {
  console.error('usage: node scripts/sim-coverage.mjs [--seeds N] [--list]');
  process.exit(2);
}
const list = args.includes('--list');
const AREAS = ['core/raft', 'replica/member', 'replica', 'core/state'];

const dir = mkdtempSync(join(tmpdir(), 'tenure-coverage-'));
try {
  process.stderr.write(`running ${seeds} seeds with coverage on…\n`);
  const r = spawnSync(
    process.execPath,
    [join(root, 'bin', 'tenure'), 'sim', '--seeds', String(seeds), '--json', '--no-shrink'],
    { env: { ...process.env, NODE_V8_COVERAGE: dir }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (r.status !== 0) {
    console.error(`the sweep failed (exit ${r.status}); coverage of a failing run means little`);
    process.exit(1);
  }
  /** url -> range key -> { count, start } */
  const files = new Map();
  for (const f of readdirSync(dir)) {
    const { result } = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    for (const script of result) {
      if (!AREAS.some((a) => script.url.includes(`/dist/src/${a}/`))) continue;
      const blocks = files.get(script.url) ?? new Map();
      files.set(script.url, blocks);
      for (const fn of script.functions)
        for (const range of fn.ranges) {
          const key = `${range.startOffset}-${range.endOffset}`;
          const prev = blocks.get(key);
          blocks.set(key, {
            count: Math.max(prev?.count ?? 0, range.count),
            start: range.startOffset,
          });
        }
    }
  }
  const areaOf = (url) => AREAS.find((a) => new RegExp(`/dist/src/${a}/[^/]+$`).test(url));
  const totals = new Map(AREAS.map((a) => [a, { hit: 0, all: 0 }]));
  for (const [url, blocks] of files) {
    const t = totals.get(areaOf(url));
    if (!t) continue;
    const missed = [...blocks.values()].filter((b) => b.count === 0);
    t.all += blocks.size;
    t.hit += blocks.size - missed.length;
    if (list && missed.length > 0) {
      const source = readFileSync(fileURLToPath(url), 'utf8');
      const lineOf = (offset) => source.slice(0, offset).split('\n').length;
      for (const b of missed.sort((x, y) => x.start - y.start))
        console.log(`${url.split('/dist/')[1]}:${lineOf(b.start)}`);
    }
  }
  for (const [area, t] of totals)
    console.log(
      `${area}: ${t.hit} of ${t.all} blocks covered (${((100 * t.hit) / t.all).toFixed(1)} %)`,
    );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
