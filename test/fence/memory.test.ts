// The in-memory fence against the contract suite, and table tests of the shared contract helpers.
import assert from 'node:assert/strict';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { describe, test } from 'node:test';
import {
  InvalidScopeError,
  InvalidTokenError,
  MemoryFence,
  StaleTokenError,
  admits,
  parseToken,
  tokenMax,
} from '../../src/fence/index.js';
import { KeyedMutex } from '../../src/fence/mutex.js';
import { fenceContract, tokenCounter, type ContractSubject } from './contract-suite.js';

function memorySubject(): ContractSubject {
  const fence = new MemoryFence();
  const logs = new Map<string, string[]>();
  return {
    issue: tokenCounter(),
    append: (scope, token, value) =>
      fence.write(scope, token, async () => {
        // Yield inside the effect so that an unserialised fence would let others interleave.
        await yieldTurn();
        logs.set(scope, [...(logs.get(scope) ?? []), value]);
      }),
    log: (scope) => Promise.resolve(logs.get(scope) ?? []),
    current: (scope) => fence.current(scope),
    close: () => Promise.resolve(),
  };
}

fenceContract('memory', () => Promise.resolve(memorySubject()));

describe('contract helpers', () => {
  test('admits: nothing seen, equal and higher pass; lower fails', () => {
    const cases: [bigint | undefined, bigint, boolean][] = [
      [undefined, 0n, true],
      [5n, 5n, true],
      [5n, 6n, true],
      [5n, 4n, false],
    ];
    for (const [mark, token, want] of cases) assert.equal(admits(mark, token), want);
  });

  test('parseToken accepts canonical decimals in range and nothing else', () => {
    assert.equal(parseToken('0'), 0n);
    assert.equal(parseToken('42'), 42n);
    assert.equal(parseToken(tokenMax.toString()), tokenMax);
    for (const bad of [
      '',
      '-1',
      '+1',
      '01',
      '1.0',
      ' 1',
      '0x10',
      '1e3',
      (tokenMax + 1n).toString(),
    ]) {
      assert.throws(() => parseToken(bad), InvalidTokenError, bad);
    }
  });

  test('memory fence validates scope and token before anything else', async () => {
    const fence = new MemoryFence();
    await assert.rejects(
      fence.write('', 1n, () => 1),
      InvalidScopeError,
    );
    await assert.rejects(
      fence.write('s', tokenMax + 1n, () => 1),
      InvalidTokenError,
    );
    assert.equal(await fence.current('s'), undefined);
  });

  test('a failed effect keeps the raised mark, and the same token may retry', async () => {
    const fence = new MemoryFence();
    await assert.rejects(
      fence.write('s', 7n, () => {
        throw new Error('half-way');
      }),
      /half-way/,
    );
    assert.equal(await fence.current('s'), 7n);
    await assert.rejects(
      fence.write('s', 6n, () => 1),
      StaleTokenError,
    );
    assert.equal(await fence.write('s', 7n, () => 'retried'), 'retried');
  });
});

describe('KeyedMutex', () => {
  test('serialises one key, not different keys, and forgets idle keys', async () => {
    const m = new KeyedMutex();
    const order: string[] = [];
    let releaseA!: () => void;
    const gate = new Promise<void>((r) => (releaseA = r));
    const a = m.run('k', async () => {
      order.push('a start');
      await gate;
      order.push('a end');
    });
    const b = m.run('k', () => Promise.resolve(void order.push('b')));
    const c = m.run('other', () => Promise.resolve(void order.push('c')));
    await c;
    releaseA();
    await Promise.all([a, b]);
    assert.deepEqual(order, ['a start', 'c', 'a end', 'b']);
    assert.equal(m.size, 0);
  });

  test('an abort while waiting rejects with the reason and never runs the function', async () => {
    const m = new KeyedMutex();
    let releaseA!: () => void;
    const a = m.run('k', () => new Promise<void>((r) => (releaseA = r)));
    const ac = new AbortController();
    let ran = false;
    const b = m.run('k', () => Promise.resolve(void (ran = true)), ac.signal);
    const c = m.run('k', () => Promise.resolve('c'));
    ac.abort(new Error('gave up'));
    await assert.rejects(b, /gave up/);
    releaseA();
    await a;
    assert.equal(await c, 'c');
    assert.equal(ran, false);
    assert.equal(m.size, 0);
  });
});
