// A member's log (member-log.ts): JSON lines with etcd's field names (level as a word, ts in
// ISO 8601, msg), or with --log-format text one readable line per record; written
// synchronously, so the lines are in the file when the call returns.
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, resolveStartOptions } from '../../src/server/config.js';
import { memberLog } from '../../src/server/member-log.js';

function written(format: 'json' | 'text'): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenure-log-'));
  const file = join(dir, 'log');
  const fd = openSync(file, 'w');
  try {
    const log = memberLog({ name: 'n1', level: 'info', format, fd, colorize: false });
    log.info({ term: 7 }, 'became leader');
    log.debug({}, 'not at info');
    log.warn({ peer: 'n2' }, 'peer is suspect');
    return readFileSync(file, 'utf8');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('json: one object per line with level, ts, member and msg', () => {
  const lines = written('json').trim().split('\n');
  assert.equal(lines.length, 2);
  const first = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
  assert.equal(first.level, 'info');
  assert.equal(first.msg, 'became leader');
  assert.equal(first.member, 'n1');
  assert.equal(first.term, 7);
  assert.ok(!Number.isNaN(Date.parse(String(first.ts))), String(first.ts));
  assert.equal((JSON.parse(lines[1] ?? '') as { level: string }).level, 'warn');
});

test('text: a readable line per record, not JSON', () => {
  const lines = written('text').trim().split('\n');
  assert.ok(lines.length >= 2, lines.join('\n'));
  assert.match(lines[0] ?? '', /\d\d:\d\d:\d\d\.\d{3}\] INFO.*became leader/);
  assert.ok(
    lines.some((l) => /WARN.*peer is suspect/.test(l)),
    lines.join('\n'),
  );
  assert.throws(() => JSON.parse(lines[0] ?? ''));
});

test('--log-format takes json or text only', () => {
  assert.equal(resolveStartOptions({ name: 'n1' }).logFormat, 'json');
  assert.equal(resolveStartOptions({ name: 'n1', logFormat: 'text' }).logFormat, 'text');
  assert.throws(
    () => resolveStartOptions({ name: 'n1', logFormat: 'yaml' }),
    (e: unknown) => e instanceof ConfigError && /--log-format must be json or text/.test(e.message),
  );
});
