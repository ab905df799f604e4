// Shared helpers for the key-space tests: byte/string conversion, a machine driven through its
// encoded log path, and compact views of KeyValues for assertions.
import assert from 'node:assert/strict';
import { logIndex } from '../../src/core/base/units.js';
import type { Command } from '../../src/core/state/command.js';
import { encodeCommand } from '../../src/core/state/command.js';
import type { EtcdError } from '../../src/core/state/etcd-errors.js';
import { isEtcdError } from '../../src/core/state/etcd-errors.js';
import type { EtcdLimits } from '../../src/core/state/etcd-limits.js';
import type { EtcdResult } from '../../src/core/state/etcd-machine.js';
import { EtcdMachine } from '../../src/core/state/etcd-machine.js';
import type {
  DeleteRangeRequest,
  KeyValue,
  PutRequest,
  RangeRequest,
  RangeResponse,
  RequestOp,
  TxnRequest,
  WatchEvent,
} from '../../src/core/state/kv-types.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

export const b = (s: string): Uint8Array => enc.encode(s);
export const str = (u: Uint8Array): string => dec.decode(u);

/** A KeyValue as a short tuple-like object. */
export interface KvView {
  k: string;
  v: string;
  c: number;
  m: number;
  ver: number;
  lease: bigint;
}

export const view = (kv: KeyValue): KvView => ({
  k: str(kv.key),
  v: str(kv.value),
  c: kv.createRevision,
  m: kv.modRevision,
  ver: kv.version,
  lease: kv.lease,
});

export const eventView = (e: WatchEvent): string =>
  `${e.type} ${str(e.kv.key)}=${str(e.kv.value)} m${e.kv.modRevision} v${e.kv.version}` +
  (e.prevKv ? ` prev=${str(e.prevKv.value)}@${e.prevKv.modRevision}` : '');

/** Drives an EtcdMachine through encoded log entries, as the replica loop would. */
export class Harness {
  readonly m: EtcdMachine;

  constructor(limits?: EtcdLimits) {
    this.m = limits ? new EtcdMachine(limits) : new EtcdMachine();
  }

  run(cmd: Command): EtcdResult {
    // The next log index follows the machine's, so a harness continues after a restore.
    return this.m.apply(logIndex(this.m.appliedIndex + 1), encodeCommand(cmd));
  }

  put(key: string, value: string, more: Partial<PutRequest> = {}): EtcdResult {
    return this.run({ type: 'put', request: { key: b(key), value: b(value), ...more } });
  }

  del(key: string, rangeEnd?: string, prevKv = false): EtcdResult {
    const request: DeleteRangeRequest =
      rangeEnd === undefined
        ? { key: b(key), prevKv }
        : { key: b(key), rangeEnd: b(rangeEnd), prevKv };
    return this.run({ type: 'deleteRange', request });
  }

  txn(request: TxnRequest): EtcdResult {
    return this.run({ type: 'txn', request });
  }

  compact(revision: number): EtcdResult {
    return this.run({ type: 'compact', request: { revision } });
  }

  grant(id: bigint, ttlSeconds: number, nowMs = 0): EtcdResult {
    return this.run({ type: 'leaseGrant', id, ttlSeconds, nowMs });
  }

  revoke(id: bigint): EtcdResult {
    return this.run({ type: 'leaseRevoke', id });
  }

  range(req: RangeRequest): RangeResponse {
    const r = this.m.range(req);
    if (isEtcdError(r)) assert.fail(`range failed: ${r.message}`);
    return r;
  }

  rangeError(req: RangeRequest): EtcdError {
    const r = this.m.range(req);
    if (!isEtcdError(r)) assert.fail('range should have failed');
    return r;
  }

  /** Key=value pairs of the live keys with `prefix`, at the latest or a given revision. */
  dump(prefix = '', revision = 0): string[] {
    const key = prefix === '' ? new Uint8Array([0]) : b(prefix);
    const rangeEnd = prefix === '' ? new Uint8Array([0]) : prefixOf(prefix);
    return this.range({ key, rangeEnd, revision }).kvs.map(
      (kv) => `${str(kv.key)}=${str(kv.value)}`,
    );
  }
}

function prefixOf(p: string): Uint8Array {
  const e = b(p);
  e[e.length - 1] = (e[e.length - 1] as number) + 1;
  return e;
}

/** The response of a successful result of the given type, or a failed assertion. */
type WithResponse = Extract<EtcdResult, { response: unknown }>;

type ResponseOf = { [K in WithResponse['type']]: Extract<WithResponse, { type: K }>['response'] };

export function ok<T extends WithResponse['type']>(r: EtcdResult, type: T): ResponseOf[T] {
  assert.equal(r.type, type, `expected ${type}, got ${JSON.stringify(r, bigintSafe)}`);
  return (r as unknown as { response: ResponseOf[T] }).response;
}

export function errorOf(r: EtcdResult): EtcdError {
  assert.equal(r.type, 'error', `expected an error, got ${r.type}`);
  return (r as { error: EtcdError }).error;
}

export function bigintSafe(_k: string, v: unknown): unknown {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return str(v);
  return v;
}

export const putOp = (key: string, value: string, more: Partial<PutRequest> = {}): RequestOp => ({
  type: 'put',
  request: { key: b(key), value: b(value), ...more },
});

export const getOp = (key: string, more: Partial<RangeRequest> = {}): RequestOp => ({
  type: 'range',
  request: { key: b(key), ...more },
});

export const delOp = (key: string, rangeEnd?: string): RequestOp => ({
  type: 'deleteRange',
  request: rangeEnd === undefined ? { key: b(key) } : { key: b(key), rangeEnd: b(rangeEnd) },
});
