// The file fence against the contract suite, plus its own properties: the mark is durable (a new
// instance, as after a crash and restart, enforces it), files are replaced atomically and no temp
// files are left, a leaked handle is dead, and unsafe names are refused.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  FenceError,
  FileFence,
  InvalidScopeError,
  StaleTokenError,
  markDirName,
  type FencedFiles,
} from '../../src/fence/index.js';
import { fenceContract, tokenCounter, type ContractSubject } from './contract-suite.js';

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tenure-fence-files-'));
  roots.push(d);
  return d;
}

/** The log of scope s is the file `log-<hex(s)>`, one value per line, rewritten per append. */
const logName = (scope: string): string => `log-${Buffer.from(scope).toString('hex')}`;

async function filesSubject(dir: string, issue = tokenCounter()): Promise<ContractSubject> {
  const fence = await FileFence.open(dir);
  return {
    issue,
    append: (scope, token, value) =>
      fence.write(scope, token, async (files) => {
        const before = (await files.readFile(logName(scope)))?.toString() ?? '';
        await files.writeFile(logName(scope), `${before}${value}\n`);
      }),
    log: async (scope) =>
      ((await fence.readFile(logName(scope)))?.toString() ?? '').split('\n').filter(Boolean),
    current: (scope) => fence.current(scope),
    reopen: () => filesSubject(dir, issue),
    close: () => Promise.resolve(),
  };
}

fenceContract('files', () => filesSubject(tempDir()), { durable: true });

describe('file fence', () => {
  test('a new instance (a restart) reads the durable mark and refuses a lower token', async () => {
    const dir = tempDir();
    const first = await FileFence.open(dir);
    await first.write('report', 10n, (f) => f.writeFile('report.json', '{"v":10}'));
    // A different path to the same directory: the mark lives on disk, not in the instance.
    const second = await FileFence.open(join(dir, '.', markDirName, '..'));
    assert.equal(await second.current('report'), 10n);
    await assert.rejects(
      second.write('report', 9n, (f) => f.writeFile('report.json', '{"v":9}')),
      (e: unknown) => e instanceof StaleTokenError && e.presented === 9n && e.current === 10n,
    );
    assert.equal(readFileSync(join(dir, 'report.json'), 'utf8'), '{"v":10}');
    const markFile = readdirSync(join(dir, markDirName));
    assert.deepEqual(markFile, [`${Buffer.from('report').toString('base64url')}.token`]);
    assert.equal(readFileSync(join(dir, markDirName, markFile[0] ?? ''), 'utf8'), '10\n');
  });

  test('leaves no temp files and removes files durably', async () => {
    const dir = tempDir();
    const fence = await FileFence.open(dir);
    await fence.write('s', 1n, async (f) => {
      await f.writeFile('a', 'x');
      await f.writeFile('b', new Uint8Array([1, 2]));
      await f.removeFile('a');
      await f.removeFile('never-existed');
    });
    assert.deepEqual(readdirSync(dir).sort(), [markDirName, 'b']);
    assert.deepEqual(readdirSync(join(dir, markDirName)).length, 1);
  });

  test('a handle leaked out of the effect cannot write after it ended', async () => {
    const fence = await FileFence.open(tempDir());
    let leaked: FencedFiles | undefined;
    await fence.write('s', 1n, (f) => void (leaked = f));
    await assert.rejects(
      leaked?.writeFile('late', 'x') ?? Promise.resolve(),
      (e: unknown) => e instanceof FenceError && e.code === 'FENCE_HANDLE_CLOSED',
    );
  });

  test('refuses names outside the flat namespace and odd scopes map to safe mark names', async () => {
    const dir = tempDir();
    const fence = await FileFence.open(dir);
    for (const bad of ['../x', 'a/b', '.fence', '.hidden', '']) {
      await assert.rejects(
        fence.write('s', 1n, (f) => f.writeFile(bad, 'x')),
        InvalidScopeError,
        bad,
      );
    }
    await fence.write('../../etc/passwd', 1n, () => undefined);
    assert.equal(await fence.current('../../etc/passwd'), 1n);
    assert.equal(readdirSync(dir).filter((n) => n !== markDirName).length, 0);
  });
});
