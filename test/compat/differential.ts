// The differential script: a fixed sequence of raw etcd v3 gRPC requests (KV, Txn, Compact, Lease,
// Watch) whose every response or gRPC status is recorded in a normalised form, so that recordings
// from two fresh clusters — etcd and etcd, or etcd and tenure — can be compared entry by entry.
//
// Normalisation (see normalise()):
// - header.cluster_id, member_id and raft_term are dropped, except in a Txn's sub-responses,
//   where etcd 3.4 leaves them zero and they are compared;
// - revisions (revision, create_revision, mod_revision, compact_revision) become "R+n" relative to
//   the header revision of the script's first request; 0 stays 0;
// - lease IDs (ID, lease) become "L1", "L2", … in order of first appearance; 0 stays 0;
// - bytes become UTF-8 strings (every key and value in the script is text);
// - a LeaseTimeToLive TTL above 0 becomes "live" (it counts down), and its keys are sorted;
//   LeaseLeases IDs are sorted (etcd lists them in map order);
// - watch responses that only carry events are merged per watch_id and their headers dropped,
//   since how a server batches events into responses is not part of the contract.
import { EtcdGrpc, type BidiStream, type Message, type Outcome } from './grpc-client.js';

export interface Entry {
  readonly step: string;
  readonly result: unknown;
}

export type Recording = Entry[];

/** etcd's --max-txn-ops default. */
const txnOpsMax = 128;

export class Normaliser {
  #base: bigint | undefined;
  readonly #leases = new Map<string, string>();

  setBase(revision: bigint): void {
    this.#base = revision;
  }

  revision(v: unknown): unknown {
    if (this.#base === undefined) throw new Error('no base revision yet');
    const n = BigInt(String(v));
    if (n === 0n) return 0;
    const d = n - this.#base;
    return d >= 0n ? `R+${d}` : `R${d}`;
  }

  lease(v: unknown): unknown {
    const id = String(v);
    if (id === '0') return 0;
    let name = this.#leases.get(id);
    if (name === undefined) {
      name = `L${this.#leases.size + 1}`;
      this.#leases.set(id, name);
    }
    return name;
  }

  /** The raw ID behind a normalised lease name, for requests that refer to it. */
  leaseId(name: string): string {
    for (const [id, n] of this.#leases) if (n === name) return id;
    throw new Error(`no lease ${name}`);
  }

  /** `inTxn`: inside a Txn's sub-response, whose header identity fields are compared too. */
  value(v: unknown, key = '', inTxn = false): unknown {
    if (Buffer.isBuffer(v)) return v.toString('utf8');
    if (Array.isArray(v)) return v.map((x) => this.value(x, key, inTxn));
    if (v === null || typeof v !== 'object') {
      if (revisionFields.has(key)) return this.revision(v);
      if (leaseFields.has(key)) return this.lease(v);
      return v;
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (droppedFields.has(k) && !inTxn) continue;
      out[k] = this.value(x, k, inTxn || subResponseFields.has(k));
    }
    return out;
  }
}

const droppedFields = new Set(['cluster_id', 'member_id', 'raft_term']);
/** A Txn's sub-responses: their headers carry only the revision in etcd 3.4, so nothing varies. */
const subResponseFields = new Set([
  'response_range',
  'response_put',
  'response_delete_range',
  'response_txn',
]);
const revisionFields = new Set(['revision', 'create_revision', 'mod_revision', 'compact_revision']);
const leaseFields = new Set(['ID', 'lease']);

const b = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Watch responses with only events are merged per watch_id; the rest are kept whole. */
function mergeWatch(n: Normaliser, responses: readonly Message[]): unknown[] {
  const out: unknown[] = [];
  let run: { watch_id: unknown; events: unknown[] } | undefined;
  for (const r of responses) {
    const events = (r['events'] as unknown[] | undefined) ?? [];
    const plain = r['created'] !== true && r['canceled'] !== true && events.length > 0;
    if (plain && run !== undefined && run.watch_id === r['watch_id']) {
      run.events.push(...(n.value(events) as unknown[]));
      continue;
    }
    if (plain) {
      run = { watch_id: r['watch_id'], events: n.value(events) as unknown[] };
      out.push(run);
      continue;
    }
    run = undefined;
    out.push(n.value(r));
  }
  return out;
}

/** The header revision of a response (int64 fields arrive as decimal strings). */
function headerRevision(m: Message | undefined): bigint {
  const header = m?.['header'] as Message | undefined;
  const revision = header?.['revision'];
  if (typeof revision !== 'string') throw new Error(`no header revision in ${JSON.stringify(m)}`);
  return BigInt(revision);
}

const countEvents = (batch: readonly Message[]): number =>
  batch.reduce((s, r) => s + ((r['events'] as unknown[] | undefined)?.length ?? 0), 0);

const hasResponse = (batch: readonly Message[], pred: (r: Message) => boolean): boolean =>
  batch.some(pred);

/** Run the script against one endpoint of a fresh cluster; return the normalised recording. */
export async function runDifferentialScript(endpoint: string): Promise<Recording> {
  const client = new EtcdGrpc(endpoint);
  const n = new Normaliser();
  const recording: Recording = [];
  const streams: BidiStream[] = [];

  const record = (step: string, outcome: Outcome): Message | undefined => {
    if ('error' in outcome) {
      recording.push({ step, result: { error: outcome.error } });
      return undefined;
    }
    recording.push({ step, result: n.value(outcome.ok) });
    return outcome.ok;
  };
  const kv = (name: string, request: Message): Promise<Outcome> =>
    client.unary('KV', name, request);
  const lease = (name: string, request: Message): Promise<Outcome> =>
    client.unary('Lease', name, request);
  const put = async (step: string, request: Message): Promise<Message | undefined> =>
    record(step, await kv('Put', request));
  const range = async (step: string, request: Message): Promise<Message | undefined> =>
    record(step, await kv('Range', request));
  const del = async (step: string, request: Message): Promise<Message | undefined> =>
    record(step, await kv('DeleteRange', request));
  const txn = async (step: string, request: Message): Promise<Message | undefined> =>
    record(step, await kv('Txn', request));

  try {
    // ---- base revision
    const first = await kv('Range', { key: b('k/') });
    if (!('ok' in first)) throw new Error(`first Range failed: ${JSON.stringify(first)}`);
    const base = headerRevision(first.ok);
    n.setBase(base);
    /** The absolute revision `d` after the base. */
    const at = (d: number): string => String(base + BigInt(d));
    recording.push({ step: 'range on an empty store', result: n.value(first.ok) });

    // ---- Put
    await put('put k/a with prev_kv (new key)', { key: b('k/a'), value: b('1'), prev_kv: true });
    await put('put k/b', { key: b('k/b'), value: b('2') });
    await put('put k/c', { key: b('k/c'), value: b('3') });
    await put('put k/a again with prev_kv', { key: b('k/a'), value: b('11'), prev_kv: true });
    await put('put k/d', { key: b('k/d'), value: b('0') });
    await put('put k/e', { key: b('k/e'), value: b('5') });
    await put('put k/b ignore_value', { key: b('k/b'), ignore_value: true, prev_kv: true });
    await put('put ignore_value with a value', {
      key: b('k/b'),
      value: b('x'),
      ignore_value: true,
    });
    await put('put ignore_value on a missing key', { key: b('k/none'), ignore_value: true });
    await put('put ignore_lease on a missing key', { key: b('k/none'), ignore_lease: true });
    await put('put ignore_lease with a lease', { key: b('k/b'), ignore_lease: true, lease: '5' });
    await put('put with an empty key', { key: b(''), value: b('v') });
    await put('put with an unknown lease', { key: b('k/x'), value: b('v'), lease: '12345' });
    await put('put k/empty with an empty value', { key: b('k/empty') });

    // ---- Range
    const all = { key: b('k/'), range_end: b('k0') };
    await range('range prefix k/', all);
    await range('range single key', { key: b('k/c') });
    await range('range missing key', { key: b('k/zz') });
    await range('range limit 2', { ...all, limit: '2' });
    await range('range limit 100', { ...all, limit: '100' });
    await range('range at revision R+2', { ...all, revision: at(2) });
    await range('range at revision R+1', { ...all, revision: at(1) });
    await range('range at a future revision', { ...all, revision: at(1000) });
    await range('range with an empty key', { key: b('') });
    for (const order of ['ASCEND', 'DESCEND', 'NONE']) {
      for (const target of ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE']) {
        await range(`range sort ${order} by ${target}`, {
          ...all,
          sort_order: order,
          sort_target: target,
        });
      }
    }
    await range('range sort DESCEND by VALUE, limit 2', {
      ...all,
      sort_order: 'DESCEND',
      sort_target: 'VALUE',
      limit: '2',
    });
    await range('range keys_only', { ...all, keys_only: true });
    await range('range count_only', { ...all, count_only: true });
    await range('range count_only with limit', { ...all, count_only: true, limit: '1' });
    await range('range min_mod_revision R+4', { ...all, min_mod_revision: at(4) });
    await range('range max_mod_revision R+3', { ...all, max_mod_revision: at(3) });
    await range('range min_create_revision R+3', { ...all, min_create_revision: at(3) });
    await range('range max_create_revision R+2', { ...all, max_create_revision: at(2) });
    await range('range max_create_revision R+4, sort CREATE DESCEND, limit 1', {
      ...all,
      max_create_revision: at(4),
      sort_order: 'DESCEND',
      sort_target: 'CREATE',
      limit: '1',
    });
    await range('range min_mod_revision R+2 with limit 1', {
      ...all,
      min_mod_revision: at(2),
      limit: '1',
    });
    await range('range from key k/c', { key: b('k/c'), range_end: b('\0') });
    await range('range all keys', { key: b('\0'), range_end: b('\0') });
    await range('range with key >= range_end', { key: b('k/c'), range_end: b('k/a') });

    // ---- DeleteRange
    await put('put z/1', { key: b('z/1'), value: b('a') });
    await put('put z/2', { key: b('z/2'), value: b('b') });
    await put('put zz', { key: b('zz'), value: b('c') });
    await del('delete a missing key', { key: b('k/none') });
    await del('delete k/e with prev_kv', { key: b('k/e'), prev_kv: true });
    await del('delete prefix z/ with prev_kv', { key: b('z/'), range_end: b('z0'), prev_kv: true });
    await del('delete from key zz', { key: b('zz'), range_end: b('\0'), prev_kv: true });
    await del('delete with an empty key', { key: b('') });
    await range('range all keys after deletes', {
      key: b('\0'),
      range_end: b('\0'),
      keys_only: true,
    });

    // ---- Txn: every compare target with every result
    await put('put t/a', { key: b('t/a'), value: b('5') });
    await put('put t/a again', { key: b('t/a'), value: b('5') });
    const tRange = await range('range t/a', { key: b('t/a') });
    const tKv = ((tRange?.['kvs'] as Message[] | undefined) ?? [])[0] ?? {};
    const createRev = String(tKv['create_revision']);
    const modRev = String(tKv['mod_revision']);
    const values: Record<string, Record<string, unknown>> = {
      VERSION: { version: '2' },
      CREATE: { create_revision: createRev },
      MOD: { mod_revision: modRev },
      VALUE: { value: b('5') },
      LEASE: { lease: '0' },
    };
    const onSuccess = [{ request_range: { key: b('t/a') } }];
    const onFailure = [{ request_range: { key: b('t/none') } }];
    for (const [target, union] of Object.entries(values)) {
      for (const result of ['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL']) {
        await txn(`txn ${target} ${result} (t/a)`, {
          compare: [{ key: b('t/a'), target, result, ...union }],
          success: onSuccess,
          failure: onFailure,
        });
      }
    }
    const lower: Record<string, Record<string, unknown>> = {
      VERSION: { version: '1' },
      CREATE: { create_revision: String(BigInt(createRev) - 1n) },
      MOD: { mod_revision: String(BigInt(modRev) - 1n) },
      VALUE: { value: b('4') },
    };
    for (const [target, union] of Object.entries(lower)) {
      await txn(`txn ${target} GREATER than a smaller operand`, {
        compare: [{ key: b('t/a'), target, result: 'GREATER', ...union }],
        success: onSuccess,
        failure: onFailure,
      });
    }
    for (const [target, union] of Object.entries({
      VERSION: { version: '0' },
      CREATE: { create_revision: '0' },
      MOD: { mod_revision: '0' },
      VALUE: { value: b('') },
      LEASE: { lease: '0' },
    })) {
      for (const result of ['EQUAL', 'NOT_EQUAL']) {
        await txn(`txn ${target} ${result} zero on a missing key`, {
          compare: [{ key: b('t/none'), target, result, ...union }],
          success: onSuccess,
          failure: onFailure,
        });
      }
    }
    await txn('txn VERSION GREATER 0 over a range where all match', {
      compare: [
        { key: b('k/'), range_end: b('k0'), target: 'VERSION', result: 'GREATER', version: '0' },
      ],
      success: onSuccess,
      failure: onFailure,
    });
    await txn('txn VALUE EQUAL over a range where some differ', {
      compare: [
        { key: b('k/'), range_end: b('k0'), target: 'VALUE', result: 'EQUAL', value: b('2') },
      ],
      success: onSuccess,
      failure: onFailure,
    });
    await txn('txn with no compares, then mixed ops that read their own writes', {
      success: [
        { request_put: { key: b('t/b'), value: b('1'), prev_kv: true } },
        { request_range: { key: b('t/'), range_end: b('t0') } },
        { request_delete_range: { key: b('t/a'), prev_kv: true } },
        { request_range: { key: b('t/'), range_end: b('t0'), count_only: true } },
      ],
    });
    await txn('txn read-only', { success: [{ request_range: { key: b('t/b') } }] });
    await txn('txn nested', {
      compare: [{ key: b('t/b'), target: 'VALUE', result: 'EQUAL', value: b('1') }],
      success: [
        {
          request_txn: {
            compare: [{ key: b('t/b'), target: 'VERSION', result: 'EQUAL', version: '5' }],
            success: [{ request_put: { key: b('t/c'), value: b('yes') } }],
            failure: [{ request_put: { key: b('t/c'), value: b('no') } }],
          },
        },
        { request_range: { key: b('t/c') } },
      ],
    });
    const many = Array.from({ length: txnOpsMax + 1 }, (_, i) => ({
      request_put: { key: b(`t/many/${i}`), value: b('v') },
    }));
    await txn('txn with 129 ops', { success: many });
    await txn('txn with 128 ops', { success: many.slice(0, txnOpsMax) });
    await txn('txn with 129 compares', {
      compare: Array.from({ length: txnOpsMax + 1 }, () => ({
        key: b('t/b'),
        target: 'VERSION',
        result: 'GREATER',
        version: '0',
      })),
    });
    await del('delete t/many/', { key: b('t/many/'), range_end: b('t/many0') });
    await txn('txn with two puts to one key', {
      success: [
        { request_put: { key: b('t/d'), value: b('1') } },
        { request_put: { key: b('t/d'), value: b('2') } },
      ],
    });
    await txn('txn with a put inside a deleted range', {
      success: [
        { request_delete_range: { key: b('t/'), range_end: b('t0') } },
        { request_put: { key: b('t/d'), value: b('2') } },
      ],
    });
    await txn('txn with a put in the nested txn to a key put outside', {
      success: [
        { request_put: { key: b('t/d'), value: b('1') } },
        { request_txn: { success: [{ request_put: { key: b('t/d'), value: b('2') } }] } },
      ],
    });
    await txn('txn with the same key in success and failure', {
      compare: [{ key: b('t/b'), target: 'VERSION', result: 'EQUAL', version: '0' }],
      success: [{ request_put: { key: b('t/d'), value: b('s') } }],
      failure: [{ request_put: { key: b('t/d'), value: b('f') } }],
    });
    await txn('txn with an empty compare key', {
      compare: [{ key: b(''), target: 'VERSION', result: 'EQUAL', version: '0' }],
    });
    await txn('txn with an empty request op', { success: [{}] });
    await txn('txn with an unknown lease in the chosen branch', {
      success: [{ request_put: { key: b('t/e'), value: b('v'), lease: '777' } }],
    });
    await txn('txn with an unknown lease in the other branch', {
      compare: [{ key: b('t/b'), target: 'VERSION', result: 'EQUAL', version: '0' }],
      success: [{ request_put: { key: b('t/e'), value: b('v'), lease: '777' } }],
      failure: [{ request_range: { key: b('t/e') } }],
    });
    await txn('txn with a range at a future revision in the chosen branch', {
      success: [{ request_range: { key: b('t/b'), revision: '100000' } }],
    });

    // ---- Leases
    const granted = await lease('LeaseGrant', { TTL: '60' });
    record('lease grant TTL 60, server-chosen ID', granted);
    const random = 'ok' in granted ? String(granted.ok['ID']) : '0';
    const explicitId = '1000';
    record(
      'lease grant TTL 60 with ID 1000',
      await lease('LeaseGrant', { TTL: '60', ID: explicitId }),
    );
    record(
      'lease grant with a duplicate ID',
      await lease('LeaseGrant', { TTL: '60', ID: explicitId }),
    );
    record(
      'lease grant with a too-large TTL',
      await lease('LeaseGrant', { TTL: '9000000001', ID: '1001' }),
    );
    for (const [ttl, id] of [
      ['1', '1002'],
      ['0', '1003'],
      ['-5', '1004'],
    ] as const) {
      record(
        `lease grant TTL ${ttl} (below the minimum)`,
        await lease('LeaseGrant', { TTL: ttl, ID: id }),
      );
      record(`lease revoke ${id}`, await lease('LeaseRevoke', { ID: id }));
    }
    record('lease revoke an unknown ID', await lease('LeaseRevoke', { ID: '4242' }));
    await put('put l/a with lease 1000', { key: b('l/a'), value: b('1'), lease: explicitId });
    await put('put l/b with lease 1000', { key: b('l/b'), value: b('2'), lease: explicitId });
    await put('put l/c with the server-chosen lease', {
      key: b('l/c'),
      value: b('3'),
      lease: random,
    });
    await put('put l/c ignore_lease', {
      key: b('l/c'),
      value: b('33'),
      ignore_lease: true,
      prev_kv: true,
    });
    await put('put l/c without a lease detaches it', {
      key: b('l/c'),
      value: b('4'),
      prev_kv: true,
    });
    await range('range l/', { key: b('l/'), range_end: b('l0') });
    await txn('txn LEASE EQUAL the attached lease', {
      compare: [{ key: b('l/a'), target: 'LEASE', result: 'EQUAL', lease: explicitId }],
      success: [{ request_range: { key: b('l/a') } }],
    });
    await txn('txn LEASE NOT_EQUAL 0 and GREATER 0', {
      compare: [
        { key: b('l/a'), target: 'LEASE', result: 'NOT_EQUAL', lease: '0' },
        { key: b('l/a'), target: 'LEASE', result: 'GREATER', lease: '0' },
      ],
    });
    const ttlOf = (step: string, o: Outcome): void => {
      if ('ok' in o) {
        const ttl = Number(o.ok['TTL']);
        const keys = ((o.ok['keys'] as Buffer[] | undefined) ?? []).map((k) => k.toString()).sort();
        o = { ok: { ...o.ok, TTL: ttl > 0 ? 'live' : o.ok['TTL'], keys } };
      }
      record(step, o);
    };
    ttlOf(
      'lease timetolive 1000 with keys',
      await lease('LeaseTimeToLive', { ID: explicitId, keys: true }),
    );
    ttlOf('lease timetolive 1000 without keys', await lease('LeaseTimeToLive', { ID: explicitId }));
    ttlOf(
      'lease timetolive an unknown ID',
      await lease('LeaseTimeToLive', { ID: '4242', keys: true }),
    );
    const leases = await lease('LeaseLeases', {});
    if ('ok' in leases) {
      const ids = ((leases.ok['leases'] as Message[] | undefined) ?? []).map((l) =>
        String(l['ID']),
      );
      const named = ids.map((id) => String(n.lease(id))).sort();
      recording.push({
        step: 'lease leases',
        result: { header: n.value(leases.ok['header']), leases: named },
      });
    } else {
      record('lease leases', leases);
    }
    const keepAlive = client.stream('Lease', 'LeaseKeepAlive');
    streams.push(keepAlive);
    keepAlive.send({ ID: explicitId });
    recording.push({
      step: 'lease keepalive 1000',
      result: (await keepAlive.take((r) => r.length >= 1, 'keepalive')).map((r) => n.value(r)),
    });
    keepAlive.send({ ID: '4242' });
    recording.push({
      step: 'lease keepalive an unknown ID',
      result: (await keepAlive.take((r) => r.length >= 1, 'keepalive')).map((r) => n.value(r)),
    });
    keepAlive.close();
    record('lease revoke 1000', await lease('LeaseRevoke', { ID: explicitId }));
    await range('range l/ after revoke', { key: b('l/'), range_end: b('l0') });
    record('lease revoke 1000 again', await lease('LeaseRevoke', { ID: explicitId }));
    record('lease revoke the server-chosen lease', await lease('LeaseRevoke', { ID: random }));

    // ---- Watch
    const w1 = await put('put w/a 1', { key: b('w/a'), value: b('1') });
    const wStart = String(headerRevision(w1));
    await put('put w/a 2', { key: b('w/a'), value: b('2') });
    await put('put w/b 1', { key: b('w/b'), value: b('1') });
    await del('delete w/a', { key: b('w/a') });
    const wPrefix = { key: b('w/'), range_end: b('w0') };
    const created = (r: Message): boolean => r['created'] === true;
    const canceled = (r: Message): boolean => r['canceled'] === true;

    const watch = async (step: string, create: Message, events: number): Promise<BidiStream> => {
      const s = client.stream('Watch', 'Watch');
      streams.push(s);
      s.send({ create_request: create });
      const got = await s.take((r) => hasResponse(r, created) && countEvents(r) >= events, step);
      recording.push({ step, result: mergeWatch(n, got) });
      return s;
    };
    const replay = await watch(
      'watch w/ from a past revision with prev_kv',
      { ...wPrefix, start_revision: wStart, prev_kv: true },
      4,
    );
    replay.close();
    (
      await watch(
        'watch w/ from a past revision, NOPUT',
        { ...wPrefix, start_revision: wStart, filters: ['NOPUT'] },
        1,
      )
    ).close();
    (
      await watch(
        'watch w/ from a past revision, NODELETE',
        { ...wPrefix, start_revision: wStart, filters: ['NODELETE'] },
        3,
      )
    ).close();
    (
      await watch('watch w/b from a past revision', { key: b('w/b'), start_revision: wStart }, 1)
    ).close();

    const live = await watch('watch w/ from now (watch_id 0 is AUTO)', { ...wPrefix }, 0);
    await put('put w/c while watching', { key: b('w/c'), value: b('1') });
    await put('put w/c again while watching', { key: b('w/c'), value: b('2') });
    await del('delete w/ while watching', { ...wPrefix, prev_kv: true });
    recording.push({
      step: 'watch events from now',
      result: mergeWatch(n, await live.take((r) => countEvents(r) >= 4, 'live events')),
    });
    live.send({ progress_request: {} });
    recording.push({
      step: 'watch progress request with every watcher synced',
      result: mergeWatch(n, await live.take((r) => r.length >= 1, 'progress')),
    });
    live.send({ create_request: { key: b('w/x'), watch_id: '7' } });
    recording.push({
      step: 'watch create with explicit watch_id 7',
      result: mergeWatch(n, await live.take((r) => hasResponse(r, created), 'create 7')),
    });
    live.send({ create_request: { key: b('w/y'), watch_id: '7' } });
    recording.push({
      step: 'watch create with a duplicate watch_id 7',
      result: mergeWatch(n, await live.take((r) => r.length >= 1, 'duplicate 7')),
    });
    live.send({ create_request: { key: b('w/z') } });
    recording.push({
      step: 'watch create AUTO after explicit IDs',
      result: mergeWatch(n, await live.take((r) => hasResponse(r, created), 'auto id')),
    });
    live.send({ cancel_request: { watch_id: '7' } });
    recording.push({
      step: 'watch cancel watch_id 7',
      result: mergeWatch(n, await live.take((r) => hasResponse(r, canceled), 'cancel 7')),
    });
    // An unknown ID gets no response: whatever arrives before the next create's reply is recorded.
    live.send({ cancel_request: { watch_id: '999' } });
    live.send({ create_request: { key: b('w/q') } });
    recording.push({
      step: 'watch cancel an unknown watch_id, then create',
      result: mergeWatch(n, await live.take((r) => hasResponse(r, created), 'cancel unknown')),
    });
    live.send({ create_request: { key: b('w/q'), start_revision: '-1' } });
    recording.push({
      step: 'watch create with a negative start_revision',
      result: mergeWatch(n, await live.take((r) => r.length >= 1, 'negative start')),
    });
    live.send({ create_request: { key: b('w/c'), range_end: b('w/a') } });
    recording.push({
      step: 'watch create with key >= range_end',
      result: mergeWatch(n, await live.take((r) => r.length >= 1, 'empty range')),
    });
    live.send({ create_request: { key: b('w/f'), start_revision: '100000' } });
    recording.push({
      step: 'watch create at a future start_revision',
      result: mergeWatch(n, await live.take((r) => hasResponse(r, created), 'future start')),
    });
    live.close();

    // ---- Compact (last: it cuts the history read above)
    await put('put c/k 1', { key: b('c/k'), value: b('1') });
    const c2 = await put('put c/k 2', { key: b('c/k'), value: b('2') });
    await put('put c/k 3', { key: b('c/k'), value: b('3') });
    const compactAt = headerRevision(c2);
    record(
      'compact at the revision of put c/k 2',
      await kv('Compact', { revision: String(compactAt) }),
    );
    await range('range c/k below the compact revision', {
      key: b('c/k'),
      revision: String(compactAt - 1n),
    });
    await range('range c/k at the compact revision', {
      key: b('c/k'),
      revision: String(compactAt),
    });
    await range('range c/k at a future revision', {
      key: b('c/k'),
      revision: String(compactAt + 1000n),
    });
    record(
      'compact again at the same revision',
      await kv('Compact', { revision: String(compactAt) }),
    );
    record(
      'compact at an older revision',
      await kv('Compact', { revision: String(compactAt - 1n) }),
    );
    record(
      'compact at a future revision',
      await kv('Compact', { revision: String(compactAt + 1000n) }),
    );
    record(
      'compact physical at the current revision',
      await kv('Compact', { revision: String(compactAt + 1n), physical: true }),
    );
    await watch(
      'watch c/k from a compacted revision',
      { key: b('c/k'), start_revision: String(compactAt - 1n) },
      0,
    ).then(async (s) => {
      recording.push({
        step: 'watch c/k from a compacted revision: cancel',
        result: mergeWatch(n, await s.take((r) => hasResponse(r, canceled), 'compacted watch')),
      });
      s.close();
    });
    await range('range all keys at the end', { key: b('\0'), range_end: b('\0') });
  } finally {
    for (const s of streams) s.close();
    client.close();
  }
  return recording;
}

function describeValue(v: unknown): string {
  const text = JSON.stringify(v);
  return text === undefined ? 'undefined' : text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function diffValues(path: string, a: unknown, b: unknown, out: string[]): void {
  if (a === b) return;
  const aObj = a !== null && typeof a === 'object';
  const bObj = b !== null && typeof b === 'object';
  if (!aObj || !bObj || Array.isArray(a) !== Array.isArray(b)) {
    out.push(`${path}: expected ${describeValue(a)}, got ${describeValue(b)}`);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) {
      out.push(`${path}: expected ${a.length} items, got ${b.length}: ${describeValue(b)}`);
    }
    for (let i = 0; i < Math.min(a.length, b.length); i++)
      diffValues(`${path}[${i}]`, a[i], b[i], out);
    return;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  for (const k of new Set([...Object.keys(ao), ...Object.keys(bo)])) {
    if (!(k in bo)) out.push(`${path}.${k}: missing (expected ${describeValue(ao[k])})`);
    else if (!(k in ao)) out.push(`${path}.${k}: unexpected ${describeValue(bo[k])}`);
    else diffValues(`${path}.${k}`, ao[k], bo[k], out);
  }
}

/**
 * Differences between an expected recording `a` (e.g. the etcd golden file) and `b`, one line
 * each, naming the step; empty when they are identical.
 */
export function compareRecordings(a: readonly Entry[], b: readonly Entry[]): string[] {
  const out: string[] = [];
  const len = Math.max(a.length, b.length);
  for (let i = 0; i < len; i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined) {
      out.push(`#${i} "${y?.step}": unexpected extra step`);
      continue;
    }
    if (y === undefined) {
      out.push(`#${i} "${x.step}": missing (the recording ends early)`);
      continue;
    }
    if (x.step !== y.step) {
      out.push(`#${i}: expected step "${x.step}", got "${y.step}"; the scripts differ`);
      break;
    }
    diffValues(`#${i} "${x.step}"`, x.result, y.result, out);
  }
  return out;
}
