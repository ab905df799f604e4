// The etcd fence: a write to etcd (or tenure) keys that commits only while the writer still holds
// its lock or leadership — etcd's own recommendation (etcd's API guarantees doc, "Notes on the
// usage of lock and lease", etcd PR #11490: for etcd keys, validate by version number, i.e.
// compare the revision or lease in a Txn).
//
//   const fence = new EtcdFence(client);                       // a tenure/client Client
//   await fence.write(grant.key, grant.token, (tx) => tx.then(op.put('config/x', value)));
//
// One Txn: `if (createRevision(holderKey) = token) then <the caller's ops> else <read the holder>`.
// The scope is the holder's key (`name/<lease hex>`), the token its create revision. The check is
// stricter than the other adapters' `>=`: the key must still exist with exactly that revision, so
// a holder whose key was deleted (release, lease expiry, an operator) is refused even before a
// successor writes anything. Since create revisions only grow, any later holder presents a higher
// token, and a lower one can never follow it. On refusal the error's `current` is the token of
// the lock's present holder (the first-created key under the queue prefix), or 0n if none.
//
// The client is taken by shape (the SDK's `Client` fits), because src/fence may not import
// src/client (imports only point down); compares and reads are plain data in the SDK's Compare and
// Op shapes.
import { checkScope, checkToken, type Fence, type FenceCallOptions } from './contract.js';
import { StaleTokenError } from './errors.js';

/** The SDK's Compare, as far as this adapter builds it. */
export interface CreateRevisionCompare {
  readonly key: Buffer;
  readonly target: 'create';
  readonly operator: '=';
  readonly operand: bigint;
}

/** The SDK's range Op, as far as this adapter builds it. */
export interface RangeOpData {
  readonly type: 'range';
  readonly key: Buffer;
  readonly options: {
    readonly prefix?: boolean;
    readonly limit?: number;
    readonly sortOrder?: 'ascend';
    readonly sortTarget?: 'create';
  };
}

export interface TxnResultLike {
  readonly succeeded: boolean;
  readonly responses: readonly {
    readonly type: string;
    readonly kvs?: readonly { readonly createRevision: bigint }[];
  }[];
}

/** A Txn builder of the SDK's shape: `if`, `then`, `else`, `commit`. */
export interface TxnLike<Op> {
  if(...compares: CreateRevisionCompare[]): TxnLike<Op>;
  then(...ops: Op[]): TxnLike<Op>;
  else(...ops: RangeOpData[]): TxnLike<Op>;
  commit(options?: { readonly signal?: AbortSignal }): Promise<TxnResultLike>;
}

/** The part of the SDK's Client the adapter uses. */
export interface EtcdClientLike<Op> {
  readonly kv: {
    txn(): TxnLike<Op>;
    get(key: string): Promise<{ readonly createRevision: bigint } | undefined>;
  };
}

/** What an etcd-fenced effect adds its operations to; they run in the fenced Txn. */
export interface EtcdFenceTx<Op> {
  readonly scope: string;
  readonly token: bigint;
  then(...ops: Op[]): void;
}

export class EtcdFence<Op> implements Fence<EtcdFenceTx<Op>> {
  readonly #client: EtcdClientLike<Op>;

  constructor(client: EtcdClientLike<Op>) {
    this.#client = client;
  }

  /**
   * Let `effect` add operations, then commit them in one Txn guarded by the holder key's create
   * revision. Resolves to `effect`'s value once the Txn committed; StaleTokenError if the guard
   * failed (nothing was written).
   */
  async write<T>(
    scope: string,
    token: bigint,
    effect: (tx: EtcdFenceTx<Op>) => Promise<T> | T,
    options: FenceCallOptions = {},
  ): Promise<T> {
    checkScope(scope);
    checkToken(token);
    options.signal?.throwIfAborted();
    const ops: Op[] = [];
    const value = await effect({ scope, token, then: (...more) => void ops.push(...more) });
    const result = await this.#client.kv
      .txn()
      .if(holderCompare(scope, token))
      .then(...ops)
      .else(...holderReads(scope))
      .commit(options.signal === undefined ? {} : { signal: options.signal });
    if (!result.succeeded) throw new StaleTokenError(scope, token, holderToken(result));
    return value;
  }

  /** The create revision of the key `scope` (its holder's token), or undefined if it is gone. */
  async current(scope: string): Promise<bigint | undefined> {
    checkScope(scope);
    return (await this.#client.kv.get(scope))?.createRevision;
  }
}

/** The guard: the holder key exists with create revision `token` (the SDK's `isOwner()`). */
export function holderCompare(key: string, token: bigint): CreateRevisionCompare {
  return { key: Buffer.from(key), target: 'create', operator: '=', operand: token };
}

/**
 * The failure branch's reads: the queue's present owner (first-created key under the prefix, the
 * scope up to its last "/"), so the error can name the token that replaced ours.
 */
function holderReads(key: string): RangeOpData[] {
  const slash = key.lastIndexOf('/');
  if (slash < 0) return [{ type: 'range', key: Buffer.from(key), options: {} }];
  return [
    {
      type: 'range',
      key: Buffer.from(key.slice(0, slash + 1)),
      options: { prefix: true, limit: 1, sortOrder: 'ascend', sortTarget: 'create' },
    },
  ];
}

function holderToken(result: TxnResultLike): bigint {
  return result.responses[0]?.kvs?.[0]?.createRevision ?? 0n;
}
