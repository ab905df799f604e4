// Registry: a name service on leases (Burrows 2006, The Chubby lock service, §4 "Use as a name
// service"), in the key layout and value format of etcd's Go naming package (registry-format.ts),
// so gRPC-Go's etcd resolver finds Node services and Node finds Go services.
//
//   const registry = new Registry(client);
//   await using reg = await registry.register('svc', '10.0.0.7:50051', { session });
//   for await (const view of registry.watch('svc', { signal })) use(view.instances);
//
// An instance's key is attached to its session's lease: when its process dies, renewals stop
// and the server deletes the key when the lease expires, so the instance leaves the set by
// itself at most TTL (+ the renewal interval it may have just renewed) after the death.
//
// Session loss. When the session expires the key is gone (or about to go, with its lease) and
// the registration is over for good: `registration.signal` aborts with SessionExpiredError and
// `lost()` resolves with it. Re-registering is the caller's: make a new session and call
// register() again (a new lease cannot adopt the old key's place; a process whose lease lapsed
// may have been partitioned, and only it knows whether it should serve again). Jeopardy does not
// end a registration: discovery is not authority, and the key lives while the lease does.
import type { CallOptions } from './call-options.js';
import type { Client } from './client.js';
import { SessionExpiredError } from './errors.js';
import { RecipeError } from './recipe-errors.js';
import { KeyGuard } from './recipe-guard.js';
import { endTimeoutMsDefault } from './recipe-holder.js';
import { idempotent, leasedFencedDelete, type Entry, type QueueContext } from './recipe-queue.js';
import { linkAbort } from './recipe-signal.js';
import { encodeEndpoint, instanceKey, servicePrefix, type JsonValue } from './registry-format.js';
import { RegistryWatcher, type RegistryWatchOptions } from './registry-watch.js';
import { setOf, type InstanceSet, type SkippedValue } from './registry-view.js';
import type { Session } from './session.js';
import { op } from './txn.js';
import './dispose.js';

export interface RegisterOptions extends CallOptions {
  /** The instance's key is attached to this session's lease. */
  readonly session: Session;
  /** Stored as the endpoint's Metadata (JSON; Go decodes it into an `any`). Default null. */
  readonly metadata?: JsonValue;
  /** The key below `service/`; default the address (as Go services usually write it). */
  readonly id?: string;
}

/** What `list()` returns: the set at one revision. */
export interface RegistryList {
  readonly revision: bigint;
  readonly instances: InstanceSet;
  readonly skipped: readonly SkippedValue[];
}

export class Registry {
  readonly #client: Client;

  constructor(client: Client) {
    this.#client = client;
  }

  /**
   * Write `addr` under `service` on the session's lease, in Go's endpoint format (a plain put, as
   * Manager.AddEndpoint does: a key of the same id is overwritten). Throws the session's error
   * unless it is valid now.
   */
  async register(service: string, addr: string, options: RegisterOptions): Promise<Registration> {
    const { session, metadata = null } = options;
    const key = instanceKey(service, options.id ?? addr);
    const value = encodeEndpoint({ addr, metadata });
    session.assertValid();
    const call: CallOptions = {
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    };
    // The same put with the same lease twice is the same state: safe to retry.
    const r = await idempotent(options.signal ?? session.signal, () =>
      this.#client.kv
        .txn()
        .then(op.put(key, value, { lease: session.leaseId }), op.get(key))
        .commit(call),
    );
    const read = r.responses[1];
    const kv = read?.type === 'range' ? read.kvs[0] : undefined;
    if (kv === undefined || kv.lease !== session.leaseId) {
      // Revoked (or replaced) between our put and our read in the same Txn: cannot happen, but
      // never report a registration we did not see.
      throw new RecipeError('KEY_DELETED', `${key}: not found after registering`);
    }
    const entry: Entry = {
      name: service,
      key,
      token: kv.createRevision,
      leaseId: session.leaseId,
      queued: { key: Buffer.from(key), token: kv.createRevision, lease: session.leaseId },
    };
    const ctx: QueueContext = { client: this.#client, session, name: service, trace: undefined };
    return new Registration(ctx, entry, addr, metadata, kv.modRevision);
  }

  /** The set now (one Range, so one revision). */
  async list(service: string, options: CallOptions = {}): Promise<RegistryList> {
    const r = await this.#client.kv.range(servicePrefix(service), { ...options, prefix: true });
    const { instances, skipped } = setOf(service, r.kvs);
    return { revision: r.header.revision, instances, skipped };
  }

  /** The live set: a snapshot, then every change (see RegistryWatcher). */
  watch(service: string, options: RegistryWatchOptions = {}): RegistryWatcher {
    return new RegistryWatcher(this.#client, service, options);
  }
}

/** A registered instance. Unregister it (or `await using` it); its signal tells when it is gone. */
export class Registration implements AsyncDisposable {
  readonly service: string;
  readonly key: string;
  readonly addr: string;
  readonly metadata: JsonValue;
  readonly leaseId: bigint;
  /** The key's create revision. */
  readonly createRevision: bigint;
  /** The revision of the registering write. */
  readonly revision: bigint;
  /**
   * Aborts when the registration is over: the session expired (SessionExpiredError), the key was
   * deleted or re-created by someone else (RecipeError KEY_DELETED), the key was put on another
   * lease — the same id registered by another session, which wins (RecipeError KEY_REPLACED) —
   * the client closed (ClientClosedError), or unregister() (RecipeError UNREGISTERED).
   */
  readonly signal: AbortSignal;
  readonly #ctx: QueueContext;
  readonly #entry: Entry;
  readonly #guard: KeyGuard;
  readonly #controller = new AbortController();
  readonly #lost: Promise<unknown>;
  #ending: Promise<boolean> | undefined;

  constructor(
    ctx: QueueContext,
    entry: Entry,
    addr: string,
    metadata: JsonValue,
    revision: bigint,
  ) {
    this.service = entry.name;
    this.key = entry.key;
    this.addr = addr;
    this.metadata = metadata;
    this.leaseId = entry.leaseId;
    this.createRevision = entry.token;
    this.revision = revision;
    this.#ctx = ctx;
    this.#entry = entry;
    this.signal = this.#controller.signal;
    this.#lost = new Promise((resolve) =>
      this.signal.addEventListener('abort', () => resolve(this.signal.reason), { once: true }),
    );
    // Watch puts too, from just after our own write: a later put of the same id on another lease
    // keeps the create revision, so only the lease tells that the key is no longer ours.
    this.#guard = new KeyGuard(ctx, entry, { leased: true, fromRevision: revision + 1n });
    linkAbort(this.#guard.signal, this.#controller);
    void ctx.session.closed().then((t) => {
      this.#controller.abort(
        new SessionExpiredError(
          'SESSION_EXPIRED',
          `${this.key}: session ${this.leaseId.toString(16)} expired (${t.reason}); ` +
            'the key goes with its lease: register again on a new session',
        ),
      );
      void this.#guard.close();
    });
  }

  /** Resolves with the reason once the registration is over (see `signal`). */
  lost(): Promise<unknown> {
    return this.#lost;
  }

  /**
   * Delete the key now, fenced on its create revision and its lease: never a newer registration
   * of the same id, nor the same key overwritten by another session's register(). True if this
   * call deleted it, false if it was already gone or another lease's. Idempotent.
   */
  unregister(options: CallOptions = {}): Promise<boolean> {
    this.#ending ??= this.#unregister(options);
    return this.#ending;
  }

  async #unregister(options: CallOptions): Promise<boolean> {
    this.#controller.abort(new RecipeError('UNREGISTERED', `${this.key}: unregistered`));
    await this.#guard.close();
    return leasedFencedDelete(this.#ctx, this.#entry, {
      ...options,
      timeoutMs: options.timeoutMs ?? endTimeoutMsDefault,
    });
  }

  /** `await using` support: unregister, without throwing when the delete fails. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.unregister().catch(() => false);
  }
}
