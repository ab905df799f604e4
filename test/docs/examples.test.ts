// The examples in README.md and docs/ run as written on Node 20: every ```js block is saved as an
// ES module inside the package (so `import … from 'tenure/client'` resolves to this repository)
// and run against a real 3-member cluster, its endpoints put where the example names the default
// ports, with a throwaway PostgreSQL server as DATABASE_URL. A TypeScript block (`await using`,
// which Node 20 cannot run as JavaScript, or the short form of a program) is shown only beside
// the runnable JavaScript one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { freePorts } from '../../src/launcher/ports.js';
import { isAlive, readState } from '../../src/cli/local-cluster.js';
import { startPostgres, type PostgresServer } from '../fence/postgres-server.js';
import { runCli } from '../support/run-child.js';
import { repoRoot } from '../support/paths.js';

const run = promisify(execFile);
/** One example's whole run, generous: a lock taken and released on a loopback cluster. */
const EXAMPLE_TIMEOUT_MS = 60_000;
/** The default client ports the examples name, in `tenure up`'s order. */
const DEFAULT_PORTS = ['2379', '22379', '32379'];

interface Block {
  readonly file: string;
  readonly line: number;
  readonly lang: string;
  readonly code: string;
}

function blocks(file: string): Block[] {
  const out: Block[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w+)\s*$/.exec(lines[i] ?? '');
    if (!open) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== '```') end++;
    out.push({
      file,
      line: start,
      lang: open[1] ?? '',
      code: lines.slice(start, end).join('\n'),
    });
    i = end;
  }
  return out;
}

function docFiles(root: string): string[] {
  const docs = join(root, 'docs');
  return [
    join(root, 'README.md'),
    ...readdirSync(docs)
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join(docs, f)),
  ];
}

test('every JavaScript example in README.md and docs/ runs against a real cluster', async () => {
  const root = repoRoot();
  const all = docFiles(root).flatMap(blocks);
  const js = all.filter((b) => b.lang === 'js' || b.lang === 'mjs');
  assert.ok(
    js.some((b) => b.file.endsWith('README.md')),
    'the README shows a runnable example',
  );
  for (const b of all.filter((x) => x.lang === 'ts' || x.lang === 'typescript')) {
    const beside = js.some((j) => j.file === b.file && Math.abs(j.line - b.line) < 60);
    assert.ok(
      beside,
      `${b.file}:${b.line}: a TypeScript example needs a runnable JavaScript one beside it`,
    );
  }
  for (const b of js)
    assert.doesNotMatch(b.code, /await using/, `${b.file}:${b.line} cannot run on Node 20`);

  const dataDir = join(root, '.tenure', `examples-${process.pid}`);
  const ports = await freePorts(6);
  const clientPorts = ports.slice(0, 3).map(String);
  let pg: PostgresServer | undefined;
  try {
    if (js.some((b) => b.code.includes('DATABASE_URL'))) pg = await startPostgres();
    const up = await runCli(
      [
        'up',
        '--detach',
        '--data-dir',
        join(dataDir, 'cluster'),
        '--client-ports',
        clientPorts.join(','),
        '--peer-ports',
        ports.slice(3).join(','),
      ],
      60_000,
    );
    assert.equal(up.code, 0, up.stderr);
    for (const [i, b] of js.entries()) {
      const code = b.code.replace(
        /127\.0\.0\.1:(2379|22379|32379)\b/g,
        (_, p: string) => `127.0.0.1:${clientPorts[DEFAULT_PORTS.indexOf(p)] ?? p}`,
      );
      const path = join(dataDir, `example-${i}.mjs`);
      mkdirSync(dataDir, { recursive: true });
      writeFileSync(path, code);
      const where = `${b.file.slice(root.length + 1)}:${b.line}`;
      const env = { ...process.env, ...(pg ? { DATABASE_URL: pg.url } : {}) };
      const r = await run(process.execPath, [path], {
        cwd: root,
        env,
        timeout: EXAMPLE_TIMEOUT_MS,
      });
      assert.ok(r.stdout.length > 0 || r.stderr.length === 0, `${where}: ${r.stderr}`);
      if (/holding jobs with token/.test(code))
        assert.match(r.stdout, /holding jobs with token \d+/, `${where} printed ${r.stdout}`);
      if (/invoice 1 sent/.test(code))
        assert.match(
          r.stdout,
          /invoice 1 sent by the leader with token \d+/,
          `${where}: ${r.stdout}`,
        );
      if (/Membership/.test(code))
        assert.match(r.stdout, /alive web-2\nleft web-2/, `${where} printed ${r.stdout}`);
    }
  } finally {
    await pg?.stop();
    await runCli(['down', '--data-dir', join(dataDir, 'cluster')], 30_000);
    for (const m of readState(join(dataDir, 'cluster'))?.members ?? [])
      if (isAlive(m.pid)) process.kill(m.pid, 'SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
