// After the run, when the workloads have stopped: every member must hold the same state. A
// workload sees only what it reads, and a member whose store diverged (a torn WAL record taken
// as valid, an entry applied twice) can go unseen if no read lands on the keys it garbled. So the
// run waits until the members are quiet — each reports the same applied index on two Status calls
// around a Maintenance.Hash — and compares their hashes (the state machine's digest over keys,
// revisions and leases, the one the simulator compares between replicas). etcd's robustness
// tests end the same way, comparing HashKV across members (tests/robustness/validate).
import { sleep } from '../launcher/poll.js';
import type { Anomaly } from './anomaly.js';

/**
 * Hang guards, not speed checks: expired leases and closed sessions settle within seconds, but
 * after an hour's soak a hash covers millions of revisions on members sharing two cores.
 */
const quietTimeoutMs = 180_000;
const pollIntervalMs = 500;
const callTimeoutMs = 60_000;

interface MemberState {
  readonly applied: string;
  readonly revision: string;
  readonly hash?: string;
}

async function gateway(
  endpoint: string,
  path: string,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const r = await fetch(`${endpoint}/v3/maintenance/${path}`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json' },
    signal: AbortSignal.any([signal, AbortSignal.timeout(callTimeoutMs)]),
  });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return (await r.json()) as Record<string, unknown>;
}

function field(o: Record<string, unknown>, name: string): string {
  const v = o[name];
  return typeof v === 'string' || typeof v === 'number' ? String(v) : '';
}

function revisionOf(o: Record<string, unknown>): string {
  const h = o.header;
  return typeof h === 'object' && h !== null ? field(h as Record<string, unknown>, 'revision') : '';
}

/** Each member's applied index, revision and hash, or undefined if it moved or did not answer. */
async function snapshot(
  endpoints: readonly string[],
  signal: AbortSignal,
): Promise<MemberState[] | undefined> {
  try {
    const before = await Promise.all(endpoints.map((e) => gateway(e, 'status', signal)));
    const hashes = await Promise.all(endpoints.map((e) => gateway(e, 'hash', signal)));
    const after = await Promise.all(endpoints.map((e) => gateway(e, 'status', signal)));
    const states = endpoints.map((_, i) => {
      const b = before[i] as Record<string, unknown>;
      const a = after[i] as Record<string, unknown>;
      const h = hashes[i] as Record<string, unknown>;
      const applied = field(b, 'raftAppliedIndex');
      const still = applied !== '' && applied === field(a, 'raftAppliedIndex');
      return {
        applied,
        revision: revisionOf(h),
        ...(still ? { hash: field(h, 'hash') } : {}),
      };
    });
    const first = states[0]?.applied;
    const quiet = states.every((s) => s.hash !== undefined && s.applied === first);
    return quiet ? states : undefined;
  } catch (e) {
    if (signal.aborted) throw e;
    return undefined;
  }
}

/** A `divergence` anomaly if the quiet members' hashes differ, `unsettled` if never quiet. */
export async function checkAgreement(
  endpoints: readonly string[],
  names: readonly string[],
  signal: AbortSignal,
): Promise<{ readonly anomaly?: Anomaly; readonly detail: string }> {
  const deadline = performance.now() + quietTimeoutMs;
  while (performance.now() < deadline) {
    const states = await snapshot(endpoints, signal);
    if (states !== undefined) {
      const line = states
        .map((s, i) => `${names[i]}: hash ${s.hash} at revision ${s.revision}`)
        .join(', ');
      const at = `applied index ${states[0]?.applied}`;
      if (new Set(states.map((s) => s.hash)).size === 1)
        return { detail: `${endpoints.length} members agree at ${at} (hash ${states[0]?.hash})` };
      return {
        detail: `members disagree at ${at}`,
        anomaly: {
          workload: 'cluster',
          kind: 'divergence',
          message: `the members hold different states at the same ${at}: ${line}`,
          atMs: performance.now(),
          excerpt: [],
        },
      };
    }
    await sleep(pollIntervalMs, signal);
  }
  return {
    detail: 'members never quiet',
    anomaly: {
      workload: 'cluster',
      kind: 'unsettled',
      message:
        `within ${quietTimeoutMs} ms after the workloads stopped, the members never reported ` +
        'one applied index around a hash (still applying, or not answering)',
      atMs: performance.now(),
      excerpt: [],
    },
  };
}
