// Every register operation of the workload, in every form it goes out in, does to the etcd key
// space what the checker's model says it does, and comes back as the output the model expects:
// the requests go through the real KV handlers (on an in-memory backend), encoded and decoded with
// tenure's protos as on the wire.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KvInput, KvOutput, KvValue } from '../../src/check/history.js';
import { kvModel } from '../../src/check/kv-model.js';
import { kvHandlers } from '../../src/server/api/kv-service.js';
import { MemoryBackend } from '../../src/server/api/memory-backend.js';
import { packageDefinition } from '../../src/server/api/protos.js';
import {
  firstKv,
  outputOf,
  requestFor,
  revisionOf,
  text,
  type WriteForm,
} from '../../src/sim/kv-requests.js';

type Method = {
  requestSerialize(v: object): Buffer;
  requestDeserialize(b: Buffer): unknown;
  responseSerialize(v: object): Buffer;
  responseDeserialize(b: Buffer): unknown;
};

function method(path: string): Method {
  for (const def of Object.values(packageDefinition())) {
    if ('format' in def) continue;
    for (const m of Object.values(def as Record<string, Method & { path: string }>))
      if (m.path === path) return m;
  }
  throw new Error(path);
}

class Key {
  readonly backend = new MemoryBackend();
  private readonly handlers = kvHandlers(this.backend).unary;
  /** The mod revision each value was written at, as the workload learns it. */
  readonly revisions = new Map<string, number>();

  async run(input: KvInput, form: WriteForm): Promise<KvOutput> {
    const req = requestFor(input, form);
    const m = method(req.path);
    const handler = this.handlers[req.path];
    assert.ok(handler, req.path);
    const decoded = m.requestDeserialize(m.requestSerialize(req.request));
    const info = { signal: new AbortController().signal, metadata: new Map<string, string>() };
    const raw = await handler(decoded, info);
    const response = m.responseDeserialize(m.responseSerialize(raw)) as Record<string, unknown>;
    const out = outputOf(input, response);
    const rev = revisionOf(response);
    if (input.type === 'get') {
      const kv = firstKv(response);
      if (kv) this.revisions.set(text(kv.value), Number(kv.mod_revision));
    }
    const wrote = input.type === 'put' || (out.type === 'cas' && out.ok);
    if (wrote && 'value' in input) this.revisions.set(input.value, rev);
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
  test(`register operations as etcd requests (${name} form) follow the checker's model`, async () => {
    const model = kvModel();
    const k = new Key();
    let state = model.init();
    let n = 0;
    const step = async (input: KvInput): Promise<KvOutput> => {
      const expected = input.type === 'cas' ? input.expected : null;
      const out = await k.run(input, form(k, expected));
      const next = model.step(state, input, out);
      assert.notEqual(next, undefined, `step ${n}: ${model.describeOperation(input, out)}`);
      state = next as KvValue;
      n++;
      return out;
    };
    const key = 'k0';
    assert.deepEqual(await step({ type: 'get', key }), { type: 'get', value: null });
    assert.deepEqual(await step({ type: 'cas', key, expected: 'v0', value: 'v1' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(await step({ type: 'cas', key, expected: null, value: 'v2' }), {
      type: 'cas',
      ok: true,
    });
    assert.deepEqual(await step({ type: 'cas', key, expected: null, value: 'v3' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(await step({ type: 'put', key, value: 'v4' }), { type: 'put' });
    assert.deepEqual(await step({ type: 'cas', key, expected: 'v2', value: 'v5' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(await step({ type: 'get', key }), { type: 'get', value: 'v4' });
    assert.deepEqual(await step({ type: 'cas', key, expected: 'v4', value: 'v6' }), {
      type: 'cas',
      ok: true,
    });
    assert.deepEqual(await step({ type: 'get', key }), { type: 'get', value: 'v6' });
    assert.deepEqual(await step({ type: 'delete', key }), { type: 'delete' });
    assert.deepEqual(await step({ type: 'get', key }), { type: 'get', value: null });
    assert.deepEqual(await step({ type: 'cas', key, expected: 'v6', value: 'v7' }), {
      type: 'cas',
      ok: false,
    });
    assert.deepEqual(await step({ type: 'cas', key, expected: null, value: 'v8' }), {
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
