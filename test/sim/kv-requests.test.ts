// Every register operation of the workload, in every form it goes out in, does to the etcd key
// space what the checker's model says it does, and comes back as the output the model expects.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { logIndex } from '../../src/core/base/units.js';
import { isEtcdError } from '../../src/core/state/etcd-errors.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import type { KvInput, KvOutput, KvValue } from '../../src/check/history.js';
import { kvModel } from '../../src/check/kv-model.js';
import {
  outputOf,
  requestFor,
  revisionOf,
  utf8,
  type ClientResult,
  type WriteForm,
} from '../../src/sim/kv-requests.js';

class Key {
  readonly etcd = new EtcdMachine();
  private index = 0;
  /** The mod revision each value was written at, as the workload learns it. */
  readonly revisions = new Map<string, number>();

  run(input: KvInput, form: WriteForm): KvOutput {
    const req = requestFor(input, form);
    let result: ClientResult;
    if (req.type === 'range') {
      const response = this.etcd.range({ key: utf8(req.key) });
      assert.ok(!isEtcdError(response));
      result = { type: 'range', response };
    } else {
      result = { type: 'command', result: this.etcd.apply(logIndex(++this.index), req.data) };
    }
    const out = outputOf(input, result);
    assert.ok(!isEtcdError(out), `etcd refused ${JSON.stringify(input)}`);
    const rev = revisionOf(result);
    const wrote = input.type === 'put' || (out.type === 'cas' && out.ok);
    if (wrote && 'value' in input && rev !== undefined) this.revisions.set(input.value, rev);
    return out;
  }
}

const forms: Record<string, (k: Key, expected: KvValue) => WriteForm> = {
  plain: () => ({ asTxn: false, expectedModRevision: undefined }),
  txn: () => ({ asTxn: true, expectedModRevision: undefined }),
  modRevision: (k, expected) => ({
    asTxn: false,
    expectedModRevision: expected === null ? undefined : k.revisions.get(expected),
  }),
};

for (const [name, form] of Object.entries(forms)) {
  test(`register operations as etcd requests (${name} form) follow the checker's model`, () => {
    const model = kvModel();
    const k = new Key();
    let state = model.init();
    let n = 0;
    const step = (input: KvInput): KvOutput => {
      const expected = input.type === 'cas' ? input.expected : null;
      const out = k.run(input, form(k, expected));
      const next = model.step(state, input, out);
      assert.notEqual(next, undefined, `step ${n}: ${model.describeOperation(input, out)}`);
      state = next as KvValue;
      n++;
      return out;
    };
    const key = 'k0';
    assert.deepEqual(step({ type: 'get', key }), { type: 'get', value: null });
    assert.deepEqual(step({ type: 'cas', key, expected: 'v0', value: 'v1' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(step({ type: 'cas', key, expected: null, value: 'v2' }), {
      type: 'cas',
      ok: true,
    });
    assert.deepEqual(step({ type: 'cas', key, expected: null, value: 'v3' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(step({ type: 'put', key, value: 'v4' }), { type: 'put' });
    assert.deepEqual(step({ type: 'cas', key, expected: 'v2', value: 'v5' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(step({ type: 'cas', key, expected: 'v4', value: 'v6' }), {
      type: 'cas',
      ok: true,
    });
    assert.deepEqual(step({ type: 'get', key }), { type: 'get', value: 'v6' });
    assert.deepEqual(step({ type: 'delete', key }), { type: 'delete' });
    assert.deepEqual(step({ type: 'get', key }), { type: 'get', value: null });
    assert.deepEqual(step({ type: 'cas', key, expected: 'v6', value: 'v7' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(step({ type: 'cas', key, expected: null, value: 'v8' }), {
      type: 'cas',
      ok: true,
    });
    assert.equal(state, 'v8');
  });
}

test('etcd has no append: the workload cannot send one', () => {
  assert.throws(() =>
    requestFor(
      { type: 'append', key: 'k', value: 'x' },
      { asTxn: false, expectedModRevision: undefined },
    ),
  );
});
