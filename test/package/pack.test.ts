// The package people install: `npm pack` ships the compiled code, the protos and the CLI but no
// test code; the tarball installs into a scratch project, where the root and each subpath import
// (and type-check) and `tenure up` starts a cluster that `tenure down` stops; publint finds
// nothing wrong with its exports.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { freePorts } from '../../src/launcher/ports.js';
import { isAlive, readState } from '../../src/cli/local-cluster.js';
import { repoRoot } from '../support/paths.js';

const run = promisify(execFile);
/** npm install from the local cache, tsc and a cluster start each take a few seconds here. */
const STEP_TIMEOUT_MS = 180_000;

interface PackedFile {
  readonly path: string;
}

test('npm pack ships the code and no tests; the tarball installs, imports and runs', async () => {
  const root = repoRoot();
  const dir = mkdtempSync(join(tmpdir(), 'tenure-pack-'));
  const dataDir = join(dir, 'data');
  try {
    // The suite has built dist/ already; packing must not rebuild it under the other suites.
    const packed = await run(
      'npm',
      ['pack', '--json', '--ignore-scripts', '--pack-destination', dir],
      { cwd: root, timeout: STEP_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
    );
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: PackedFile[] }[];
    assert.ok(info, packed.stdout);
    const files = info.files.map((f) => f.path);
    for (const want of [
      'bin/tenure',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/client/index.d.ts',
      'dist/src/fence/index.js',
      'dist/src/membership/index.js',
      'proto/etcdserverpb/rpc.proto',
      'ui/index.html',
      'ui/app.js',
      'ui/style.css',
    ])
      assert.ok(files.includes(want), `the tarball lacks ${want}`);
    const tests = files.filter((f) => /\.test\.|^test\/|^dist\/test\//.test(f));
    assert.deepEqual(tests, [], 'test code is not shipped');
    const tarball = join(dir, info.filename);

    const lint = await run(
      process.execPath,
      [join(root, 'node_modules', 'publint', 'src', 'cli.js'), 'run', tarball, '--strict'],
      { cwd: dir, timeout: STEP_TIMEOUT_MS },
    );
    assert.match(lint.stdout, /All good/, lint.stdout + lint.stderr);

    const app = join(dir, 'app');
    await run('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch', type: 'module' }));
    await run(
      'npm',
      ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'],
      { cwd: app, timeout: STEP_TIMEOUT_MS },
    );

    writeFileSync(
      join(app, 'imports.mjs'),
      [
        "import * as root from 'tenure';",
        "import * as client from 'tenure/client';",
        "import * as fence from 'tenure/fence';",
        "import * as membership from 'tenure/membership';",
        'console.log(JSON.stringify({',
        '  root: typeof root.connect, client: typeof client.connect,',
        '  fence: Object.keys(fence).length, membership: Object.keys(membership).length,',
        '}));',
      ].join('\n'),
    );
    const imported = await run(process.execPath, ['imports.mjs'], { cwd: app });
    assert.deepEqual(
      { ...(JSON.parse(imported.stdout) as object), fence: 'n', membership: 'n' },
      { root: 'function', client: 'function', fence: 'n', membership: 'n' },
    );
    const counts = JSON.parse(imported.stdout) as { fence: number; membership: number };
    assert.ok(counts.fence > 0 && counts.membership > 0, imported.stdout);

    // The types resolve from the installed package alone (Node's own types from this repo).
    writeFileSync(
      join(app, 'types.ts'),
      [
        "import { connect, type ClientOptions } from 'tenure/client';",
        "import * as fence from 'tenure/fence';",
        "import * as membership from 'tenure/membership';",
        "const options: ClientOptions = { endpoints: ['127.0.0.1:2379'] };",
        'export const parts = [connect, options, fence, membership];',
      ].join('\n'),
    );
    await run(
      process.execPath,
      [
        join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--typeRoots',
        join(root, 'node_modules', '@types'),
        '--types',
        'node',
        'types.ts',
      ],
      { cwd: app, timeout: STEP_TIMEOUT_MS },
    );

    // The installed CLI starts a local cluster and stops it.
    const ports = await freePorts(6);
    const bin = join(app, 'node_modules', '.bin', 'tenure');
    const up = await run(
      bin,
      [
        'up',
        '--detach',
        '--data-dir',
        dataDir,
        '--client-ports',
        ports.slice(0, 3).join(','),
        '--peer-ports',
        ports.slice(3).join(','),
      ],
      { cwd: app, timeout: STEP_TIMEOUT_MS },
    );
    assert.match(up.stdout, /3-member cluster is up/);
    // The dashboard's page and uPlot, resolved from the installed package's own dependencies.
    const first = readState(dataDir)?.members[0]?.clientUrl;
    assert.ok(first !== undefined, 'no member in the state file');
    assert.ok(up.stdout.includes(`${first}/ui/`), up.stdout);
    for (const path of ['/ui/', '/ui/app.js', '/ui/vendor/uPlot.iife.min.js']) {
      const r = await fetch(`${first}${path}`);
      assert.equal(r.status, 200, path);
    }
    const down = await run(bin, ['down', '--data-dir', dataDir], { cwd: app, timeout: 60_000 });
    assert.match(down.stdout, /stopped/);
  } finally {
    for (const m of readState(dataDir)?.members ?? [])
      if (isAlive(m.pid)) process.kill(m.pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
