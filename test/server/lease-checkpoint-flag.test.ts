// Lease checkpoints are on by default (lease-clock.ts); tenure's --no-lease-checkpoint and etcd's
// --experimental-enable-lease-checkpoint (a Go bool: bare, =true, =false) set them, as parsed by
// the real `tenure start` command line and resolved by resolveStartOptions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { registerStart } from '../../src/cli/start.js';
import { ConfigError, resolveStartOptions, type StartFlags } from '../../src/server/config.js';

/** The flags `tenure start` hands over for `args`, its action replaced so that nothing starts. */
function startFlags(args: readonly string[]): StartFlags {
  const program = new Command().exitOverride();
  registerStart(program);
  const start = program.commands.find((c) => c.name() === 'start');
  assert.ok(start);
  let flags: StartFlags | undefined;
  start.action((f: StartFlags) => {
    flags = f;
  });
  program.parse(['node', 'tenure', 'start', ...args]);
  assert.ok(flags);
  return flags;
}

const checkpoint = (args: readonly string[]): boolean =>
  resolveStartOptions(startFlags(args)).leaseCheckpoint;

test('lease checkpoints are on by default and with either flag saying so', () => {
  assert.equal(checkpoint([]), true);
  assert.equal(checkpoint(['--experimental-enable-lease-checkpoint']), true);
  assert.equal(checkpoint(['--experimental-enable-lease-checkpoint=true']), true);
});

test("--no-lease-checkpoint and etcd's flag =false turn them off", () => {
  assert.equal(checkpoint(['--no-lease-checkpoint']), false);
  assert.equal(checkpoint(['--experimental-enable-lease-checkpoint=false']), false);
  assert.equal(checkpoint(['--experimental-enable-lease-checkpoint=False']), false);
});

test('a value that is no bool, or the two flags disagreeing, is a config error', () => {
  assert.throws(() => checkpoint(['--experimental-enable-lease-checkpoint=maybe']), ConfigError);
  assert.throws(
    () => checkpoint(['--no-lease-checkpoint', '--experimental-enable-lease-checkpoint']),
    ConfigError,
  );
});
