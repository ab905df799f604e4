// The registry's view of a service as data: instances decoded from key-values, the set at a
// revision, and the change between two sets. Pure, so the watcher's bookkeeping is unit-tested
// apart from the cluster (test/client/registry-unit.test.ts).
import type { KeyValue } from './codec.js';
import {
  decodeEndpoint,
  servicePrefix,
  type DecodeFailure,
  type Endpoint,
} from './registry-format.js';

/** One live instance of a service. */
export interface Instance extends Endpoint {
  /** The full key, `service/id`. */
  readonly key: string;
  /** The key below the service prefix (Go services often use the address). */
  readonly id: string;
  /** The lease the key is attached to (0n: none; it then never leaves by itself). */
  readonly leaseId: bigint;
  readonly createRevision: bigint;
  readonly modRevision: bigint;
}

/** A value under the service prefix that is not an endpoint in Go's format: skipped. */
export interface SkippedValue {
  readonly key: string;
  readonly modRevision: bigint;
  readonly why: DecodeFailure;
  readonly detail: string;
}

export type InstanceChange =
  | { readonly type: 'added'; readonly instance: Instance }
  /** The key was written again (new address, metadata or lease, or the same value re-put). */
  | { readonly type: 'updated'; readonly instance: Instance; readonly previous: Instance }
  /** `instance` is the last state seen. */
  | { readonly type: 'removed'; readonly instance: Instance };

/** Instances by key. */
export type InstanceSet = ReadonlyMap<string, Instance>;

/** What `watch()` yields: the whole set at a revision, and how it got there from the last one. */
export interface RegistryView {
  /** The store revision at which `instances` is exactly the live set. */
  readonly revision: bigint;
  readonly instances: InstanceSet;
  /** From the previous view's set to this one (the first view: every instance, as added). */
  readonly changes: readonly InstanceChange[];
  /** Values found in this step that are not Go-format endpoints (not in `instances`). */
  readonly skipped: readonly SkippedValue[];
  /**
   * `snapshot`: the first read; `watch`: events of one revision; `resync`: a full re-read after
   * the watch failed or was compacted; `coalesced`: several views merged for a slow consumer.
   */
  readonly source: 'snapshot' | 'watch' | 'resync' | 'coalesced';
}

/** A key-value under the prefix, as an instance or as a skipped value. */
export function instanceOf(
  service: string,
  kv: KeyValue,
): { readonly instance: Instance } | { readonly skipped: SkippedValue } {
  const key = kv.key.toString('utf8');
  const d = decodeEndpoint(kv.value);
  if (!d.ok) return { skipped: { key, modRevision: kv.modRevision, why: d.why, detail: d.detail } };
  return {
    instance: {
      ...d.endpoint,
      key,
      id: key.slice(servicePrefix(service).length),
      leaseId: kv.lease,
      createRevision: kv.createRevision,
      modRevision: kv.modRevision,
    },
  };
}

/** The changes from `before` to `after`, removals first, then in key order. */
export function diffSets(before: InstanceSet, after: InstanceSet): InstanceChange[] {
  const out: InstanceChange[] = [];
  for (const [k, was] of before) if (!after.has(k)) out.push({ type: 'removed', instance: was });
  for (const k of [...after.keys()].sort()) {
    const now = after.get(k) as Instance;
    const was = before.get(k);
    if (was === undefined) out.push({ type: 'added', instance: now });
    else if (was.modRevision !== now.modRevision || was.createRevision !== now.createRevision)
      out.push({ type: 'updated', instance: now, previous: was });
  }
  return out;
}

/** The set from one read (a Range at one revision), with the values it had to skip. */
export function setOf(
  service: string,
  kvs: readonly KeyValue[],
): { readonly instances: Map<string, Instance>; readonly skipped: SkippedValue[] } {
  const instances = new Map<string, Instance>();
  const skipped: SkippedValue[] = [];
  for (const kv of kvs) {
    const r = instanceOf(service, kv);
    if ('instance' in r) instances.set(r.instance.key, r.instance);
    else skipped.push(r.skipped);
  }
  return { instances, skipped };
}
