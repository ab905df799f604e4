// The ElectorBackend of etcd's election layout (tenure or etcd 3.4): Election's campaigns and
// observer, one Session per term, and the hand-off hint protocol that leader-elector.ts
// documents. `new LeaderElector(client, options)` wraps its client in this adapter.
//
// The previous leader. Once a leader's key is gone, etcd's layout keeps no trace of it, so the
// adapter keeps one: the record `name.last` = {value, token} (recipe-keys.ts; outside the
// `name/` prefix, beside `name.handoff`) of the last leader that STARTED, written by recordLeader
// in a Txn fenced on the writer's own key (`if createRevision(own key) == token then put`), with
// no lease so that it outlives its writer. A campaign reads it at victory as `term.previous`.
import type { CallOptions } from './call-options.js';
import type { Client } from './client.js';
import type {
  ElectorBackend,
  ElectorObserver,
  ElectorTerm,
  PreviousLeader,
} from './elector-backend.js';
import { Election, type Leadership } from './election.js';
import {
  decodeLastLeader,
  encodeHandOffHint,
  encodeLastLeader,
  handOffHintKey,
  lastLeaderKey,
} from './recipe-keys.js';
import { RecipeError, type RecipeTrace } from './recipe-errors.js';
import type { Session, SessionOptions } from './session.js';
import { compare, op } from './txn.js';

export interface EtcdElectorBackendOptions {
  /** Events for metrics and tests (queued, read, wake, yield, granted, lost, released). */
  readonly trace?: RecipeTrace;
  /** Honour hand-off hints in campaigns (election.ts); default true. */
  readonly handOff?: boolean;
}

/** A term on etcd's layout: the etcd Leadership (for proclaim, isLeader()) and its previous. */
export class EtcdTerm implements ElectorTerm {
  readonly leadership: Leadership;
  readonly previous: PreviousLeader | null;

  constructor(leadership: Leadership, previous: PreviousLeader | null) {
    this.leadership = leadership;
    this.previous = previous;
  }

  get token(): bigint {
    return this.leadership.token;
  }

  get signal(): AbortSignal {
    return this.leadership.signal;
  }

  valid(): boolean {
    return this.leadership.valid();
  }

  abort(reason: RecipeError): void {
    this.leadership.abort(reason);
  }

  resign(options?: CallOptions): Promise<boolean> {
    return this.leadership.resign(options);
  }
}

/** LeaderElector's backend on etcd's election layout for the election `name`. */
export function etcdElectorBackend(
  client: Client,
  name: string,
  options: EtcdElectorBackendOptions = {},
): ElectorBackend {
  const election = new Election(client, name, {
    handOff: options.handOff ?? true,
    ...(options.trace === undefined ? {} : { trace: options.trace }),
  });
  const check = (n: string): void => {
    if (n !== name) throw new RangeError(`etcdElectorBackend(${name}): asked for election ${n}`);
  };
  return {
    get closingSignal(): AbortSignal {
      return client.closingSignal;
    },
    session: (o: SessionOptions): Promise<Session> => client.session(o),
    async campaign(n, session, value, o): Promise<ElectorTerm> {
      check(n);
      const l = await election.campaign(session, value, o);
      try {
        const kv = await client.kv.get(lastLeaderKey(name), o);
        const rec = kv === undefined ? undefined : decodeLastLeader(kv.value);
        // A record at or above our own token cannot be an earlier term's: ignore it.
        return new EtcdTerm(l, rec !== undefined && rec.token < l.token ? rec : null);
      } catch (e) {
        await l.resign().catch(() => false);
        throw e;
      }
    },
    async recordLeader(n, term, value, o): Promise<boolean> {
      check(n);
      if (!(term instanceof EtcdTerm)) throw new TypeError('etcdElectorBackend: foreign term');
      const r = await client.kv
        .txn()
        .if(compare.createRevision(term.leadership.key, '=', term.token))
        .then(op.put(lastLeaderKey(name), encodeLastLeader({ value, token: term.token })))
        .commit(o);
      return r.succeeded;
    },
    observe(n, o): ElectorObserver {
      check(n);
      return election.observe(o);
    },
    async handOff(n, term, identity, ttlSeconds, o): Promise<void> {
      check(n);
      if (!(term instanceof EtcdTerm)) throw new TypeError('etcdElectorBackend: foreign term');
      const l = term.leadership;
      const lease = await client.lease.grant(ttlSeconds, o);
      const hint = encodeHandOffHint({ to: identity, fromToken: l.token.toString() });
      const r = await client.kv
        .txn()
        .if(l.isLeader())
        .then(op.put(handOffHintKey(name), hint, { lease: lease.id }))
        .commit(o);
      if (!r.succeeded) {
        await client.lease.revoke(lease.id).catch(() => undefined);
        throw new RecipeError('NOT_LEADER', `${name}: lost meanwhile`);
      }
    },
  };
}
