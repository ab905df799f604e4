// The watches workload's writers: puts, deletes and txns writing several keys in one revision,
// under one prefix, each write's events recorded when it is acknowledged (what the reference is
// cross-checked with: watch-reference.ts). A put's event is certain; a delete makes one only when
// it deleted something (etcd's mvcc makes no revision for a delete of nothing, nor for a txn that
// changed nothing), which its response says.
import { op, type Client } from '../../client/index.js';
import type { Prng } from '../../core/base/prng.js';
import type { AckedWrite } from './watch-reference.js';
import type { ReceivedEvent } from './watch-session.js';

/** What the writers share with the workload. */
export interface WriteLog {
  readonly acked: AckedWrite[];
  /** Every value a put was sent with, acknowledged or not. */
  readonly attemptedValues: Set<string>;
  writes: number;
  unknown: number;
  /** The highest revision acknowledged so far (where a watch "from a recent revision" looks). */
  latestRevision: number;
}

type Planned =
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | {
      readonly type: 'delete';
      readonly key: string;
    };

/** One write: its planned ops, the events acknowledged (undefined: unknown outcome). */
export async function writeOnce(
  client: Client,
  keys: readonly string[],
  prng: Prng,
  valueOf: (j: number) => string,
  log: WriteLog,
): Promise<void> {
  const planned = plan(keys, prng, valueOf);
  for (const p of planned) if (p.type === 'put') log.attemptedValues.add(p.value);
  log.writes++;
  try {
    // Not aborted by the run's signal (bounded by the call timeout): see inserts.ts.
    const { revision, deleted } = await perform(client, planned);
    const events = planned.flatMap((p, i): ReceivedEvent[] =>
      p.type === 'put'
        ? [{ revision, key: p.key, type: 'put', value: p.value }]
        : (deleted[i] ?? 0) > 0
          ? [{ revision, key: p.key, type: 'delete', value: '' }]
          : [],
    );
    if (events.length > 0) log.acked.push({ revision, events, atMs: performance.now() });
    log.latestRevision = Math.max(log.latestRevision, revision);
  } catch {
    // Failed after it may have been sent: it may or may not have been applied.
    log.unknown++;
  }
}

/** Half single puts, a fifth single deletes, the rest txns of 2 or 3 distinct keys. */
function plan(keys: readonly string[], prng: Prng, valueOf: (j: number) => string): Planned[] {
  const r = prng.next();
  const one = (): string => prng.pick(keys);
  if (r < 0.5) return [{ type: 'put', key: one(), value: valueOf(0) }];
  if (r < 0.7) return [{ type: 'delete', key: one() }];
  const chosen = new Set<string>();
  const size = prng.int(2, 4);
  while (chosen.size < size) chosen.add(one());
  return [...chosen].map((key, j) =>
    prng.next() < 0.7 ? { type: 'put', key, value: valueOf(j) } : { type: 'delete', key },
  );
}

async function perform(
  client: Client,
  planned: readonly Planned[],
): Promise<{ revision: number; deleted: number[] }> {
  const [only] = planned;
  if (planned.length === 1 && only !== undefined) {
    if (only.type === 'put') {
      const r = await client.kv.put(only.key, only.value);
      return { revision: Number(r.header.revision), deleted: [0] };
    }
    const r = await client.kv.delete(only.key);
    return { revision: Number(r.header.revision), deleted: [Number(r.deleted)] };
  }
  const ops = planned.map((p) => (p.type === 'put' ? op.put(p.key, p.value) : op.delete(p.key)));
  const r = await client.kv
    .txn()
    .then(...ops)
    .commit();
  return {
    revision: Number(r.header.revision),
    deleted: r.responses.map((x) => (x.type === 'delete' ? Number(x.deleted) : 0)),
  };
}
