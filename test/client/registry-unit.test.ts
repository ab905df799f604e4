// The registry's pure parts against the golden Go-format fixtures (testdata/naming): the bytes
// register() writes equal the bytes Go's Manager writes, every value Go decodes is decoded the
// same way, and values Go cannot decode are refused with a reason; plus the set difference the
// watcher reports.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  RegistryWatcher,
  decodeEndpoint,
  encodeEndpoint,
  instanceKey,
  servicePrefix,
  type Client,
  type Instance,
  type JsonValue,
} from '../../src/client/index.js';
import { diffSets } from '../../src/client/registry-view.js';
import { fixture, goDecodable, goEndpoints } from './registry-fixtures.js';

test('encodeEndpoint writes the exact bytes of the golden Go values', () => {
  const lines = fixture('go-endpoints.txt');
  assert.equal(lines.length, goEndpoints.size);
  for (const line of lines) {
    const e = goEndpoints.get(line.key);
    assert.ok(e !== undefined, `no Node-side case for ${line.key}`);
    assert.equal(instanceKey('svc', e.id), line.key);
    assert.equal(encodeEndpoint(e).toString('utf8'), line.value.toString('utf8'), line.key);
    assert.ok(encodeEndpoint(e).equals(line.value), `${line.key}: bytes differ`);
  }
});

test('decodeEndpoint reads the golden Go values back', () => {
  for (const line of fixture('go-endpoints.txt')) {
    const e = goEndpoints.get(line.key);
    const d = decodeEndpoint(line.value);
    assert.ok(d.ok, `${line.key}: ${d.ok ? '' : d.detail}`);
    assert.deepEqual(d.endpoint, { addr: e?.addr, metadata: e?.metadata });
  }
});

test('decodeEndpoint accepts what Go json.Unmarshal accepts', () => {
  const lines = fixture('go-decodable.txt');
  assert.equal(lines.length, goDecodable.size);
  for (const line of lines) {
    const d = decodeEndpoint(line.value);
    assert.ok(d.ok, `${line.key}: ${d.ok ? '' : d.detail}`);
    assert.deepEqual(d.endpoint, goDecodable.get(line.key), line.key);
  }
});

test('decodeEndpoint refuses what Go cannot decode, with the reason', () => {
  const lines = fixture('not-go-endpoints.txt');
  assert.ok(lines.length >= 8);
  for (const line of lines) {
    const d = decodeEndpoint(line.value);
    assert.equal(d.ok, false, `${line.key} decoded`);
    if (!d.ok) assert.equal(d.why, line.rest[0], `${line.key}: ${d.detail}`);
  }
});

const jsonValue: fc.Arbitrary<JsonValue> = fc.jsonValue() as fc.Arbitrary<JsonValue>;

test('encode then decode is the identity (property)', () => {
  fc.assert(
    fc.property(fc.string({ minLength: 1 }), jsonValue, (addr, metadata) => {
      const d = decodeEndpoint(encodeEndpoint({ addr, metadata }));
      assert.ok(d.ok);
      // JSON.stringify writes -0 as 0 (Go writes -0); either way it reads back as 0.
      const plain = JSON.parse(JSON.stringify(metadata)) as JsonValue;
      assert.deepEqual(d.endpoint, { addr, metadata: plain });
    }),
  );
});

test('encoded values are plain JSON with Go-escaped HTML characters (property)', () => {
  fc.assert(
    fc.property(fc.string(), jsonValue, (addr, metadata) => {
      const text = encodeEndpoint({ addr: `a${addr}`, metadata }).toString('utf8');
      assert.doesNotMatch(text, /[<>&\u2028\u2029]/);
      assert.ok(text.startsWith('{"Op":0,"Addr":'));
    }),
  );
});

test('instanceKey and servicePrefix: `service/id`, names not empty', () => {
  assert.equal(servicePrefix('svc'), 'svc/');
  assert.equal(instanceKey('a/b', '1.2.3.4:5'), 'a/b/1.2.3.4:5');
  assert.throws(() => instanceKey('svc', ''), RangeError);
  assert.throws(() => servicePrefix(''), RangeError);
});

const inst = (key: string, modRevision: bigint, createRevision = modRevision): Instance => ({
  key,
  id: key.slice(4),
  addr: key.slice(4),
  metadata: null,
  leaseId: 1n,
  createRevision,
  modRevision,
});

test('diffSets: removals, additions and rewrites, nothing for an unchanged key', () => {
  const a = inst('svc/a', 2n);
  const b = inst('svc/b', 3n);
  const c = inst('svc/c', 4n);
  const b2 = inst('svc/b', 5n, 3n);
  const before = new Map([
    [a.key, a],
    [b.key, b],
  ]);
  const after = new Map([
    [b2.key, b2],
    [c.key, c],
  ]);
  assert.deepEqual(diffSets(before, after), [
    { type: 'removed', instance: a },
    { type: 'updated', instance: b2, previous: b },
    { type: 'added', instance: c },
  ]);
  assert.deepEqual(diffSets(after, after), []);
});

test('diffSets applied to `before` gives `after` (property)', () => {
  const keys = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 6 });
  const set = fc
    .tuple(keys, fc.array(fc.bigInt({ min: 1n, max: 3n }), { minLength: 6, maxLength: 6 }))
    .map(([ks, revs]) => new Map(ks.map((k, i) => [`svc/${k}`, inst(`svc/${k}`, revs[i] ?? 1n)])));
  fc.assert(
    fc.property(set, set, (before, after) => {
      const m = new Map(before);
      for (const ch of diffSets(before, after)) {
        if (ch.type === 'removed') m.delete(ch.instance.key);
        else m.set(ch.instance.key, ch.instance);
      }
      assert.deepEqual(m, after);
    }),
  );
});

test("RegistryWatcher: close() takes its listener off the caller's signal", async () => {
  // A client whose reads wait for their signal: the watcher only reads, until it is closed.
  const pending = (o: { signal?: AbortSignal }): Promise<never> =>
    new Promise((_, reject) =>
      o.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
    );
  const client = { kv: { range: (_k: string, o: { signal?: AbortSignal }) => pending(o) } };
  const caller = new AbortController();
  const w = new RegistryWatcher(client as unknown as Client, 'svc', { signal: caller.signal });
  assert.equal(getEventListeners(caller.signal, 'abort').length, 1);
  await w.close();
  assert.equal(getEventListeners(caller.signal, 'abort').length, 0, 'listener left behind');
});
