// When a cluster is ready, one check for etcd and tenure alike, through the JSON gateway both
// serve on the client URL (so it needs neither etcdctl nor a gRPC client): every member asked
// answers Maintenance.Status and a linearizable Range, and all of them name the same leader, one
// of the members asked. A Range through a member that answers it proves that member reaches a
// leader with a quorum, which a leader alone (what /health says for tenure) does not.
// An https:// endpoint is asked over TLS, with the CA and client certificate of `ProbeTls`.
import { readFileSync } from 'node:fs';
import * as https from 'node:https';

/** Each probe request's bound. */
const probeTimeoutMs = 2_000;
/** The key the readiness Range reads ("health", as etcdctl's endpoint health does). */
const probeKeyBase64 = Buffer.from('health').toString('base64');

/** What one member said. */
export interface MemberProbe {
  readonly endpoint: string;
  /** Its member ID, if it answered Status. */
  readonly memberId?: string;
  /** The leader it names ('0' or absent: none). */
  readonly leader?: string;
  /** Whether it served the linearizable Range. */
  readonly readable: boolean;
  /** Why not, when it did not. */
  readonly error?: string;
}

/** How to reach https:// endpoints: files, PEM. */
export interface ProbeTls {
  /** The CA the members' client certificate is checked against; absent: skip the check. */
  readonly caFile?: string;
  /** A client certificate and key, for members that demand one (--client-cert-auth). */
  readonly certFile?: string;
  readonly keyFile?: string;
}

type Json = Record<string, unknown>;

async function post(
  endpoint: string,
  path: string,
  body: unknown,
  signal?: AbortSignal,
  probeTls?: ProbeTls,
): Promise<Json> {
  const timeout = AbortSignal.timeout(probeTimeoutMs);
  const both = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
  if (endpoint.startsWith('https:')) return postTls(`${endpoint}${path}`, body, both, probeTls);
  const res = await fetch(`${endpoint}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: both,
  });
  const json = (await res.json()) as Json;
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** `post` over https (fetch takes no CA or client certificate). */
function postTls(url: string, body: unknown, signal: AbortSignal, t: ProbeTls = {}) {
  return new Promise<Json>((resolve, reject) => {
    const req = https.request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        signal,
        agent: false,
        ...(t.caFile === undefined
          ? { rejectUnauthorized: false }
          : { ca: readFileSync(t.caFile) }),
        ...(t.certFile === undefined ? {} : { cert: readFileSync(t.certFile) }),
        ...(t.keyFile === undefined ? {} : { key: readFileSync(t.keyFile) }),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('error', reject);
        res.on('end', () => {
          try {
            const json = JSON.parse(text) as Json;
            const status = res.statusCode ?? 0;
            if (status < 200 || status > 299)
              reject(new Error(`${new URL(url).pathname}: HTTP ${status} ${text}`));
            else resolve(json);
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

function idText(v: unknown): string | undefined {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint'
    ? String(v)
    : undefined;
}

/** Ask one member for its Status alone: its ID and the leader it names, if it answers. */
export async function probeStatus(
  endpoint: string,
  signal?: AbortSignal,
  probeTls?: ProbeTls,
): Promise<{ readonly endpoint: string; readonly memberId?: string; readonly leader?: string }> {
  const status = await post(endpoint, '/v3/maintenance/status', {}, signal, probeTls);
  const header = status.header as Record<string, unknown> | undefined;
  const memberId = idText(header?.member_id);
  const leader = idText(status.leader);
  return {
    endpoint,
    ...(memberId === undefined ? {} : { memberId }),
    ...(leader === undefined ? {} : { leader }),
  };
}

/** Ask one member for its Status and a linearizable Range. */
const AUTH_REFUSAL = /etcdserver: (user name is empty|permission denied|invalid auth token)/;

export async function probeMember(
  endpoint: string,
  signal?: AbortSignal,
  probeTls?: ProbeTls,
): Promise<MemberProbe> {
  try {
    const base = await probeStatus(endpoint, signal, probeTls);
    try {
      await post(endpoint, '/v3/kv/range', { key: probeKeyBase64 }, signal, probeTls);
      return { ...base, readable: true };
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      // With auth on, an anonymous read is refused after its read barrier (as etcd checks it):
      // the refusal proves the read path works.
      if (AUTH_REFUSAL.test(error)) return { ...base, readable: true };
      return { ...base, readable: false, error };
    }
  } catch (e) {
    if (signal?.aborted === true) throw e;
    return { endpoint, readable: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/** Whether a member is ready on its own: it names a leader and serves reads. */
export function memberReady(p: MemberProbe): boolean {
  return p.readable && p.leader !== undefined && p.leader !== '0';
}

/** The index (into `probes`) of the leader every member names, if all are ready and agree. */
export function agreedLeader(probes: readonly MemberProbe[]): number | undefined {
  if (probes.length === 0 || !probes.every(memberReady)) return undefined;
  const leader = probes[0]?.leader;
  if (probes.some((p) => p.leader !== leader)) return undefined;
  const i = probes.findIndex((p) => p.memberId === leader);
  return i >= 0 ? i : undefined;
}

/** One line per member: what it last said. */
export function describeProbes(probes: readonly MemberProbe[]): string {
  return probes
    .map((p) => {
      const said =
        p.memberId === undefined
          ? 'no Status'
          : `member ${p.memberId}, leader ${p.leader ?? 'none'}`;
      return `${p.endpoint}: ${said}, ${p.readable ? 'reads served' : `no read (${p.error ?? '?'})`}`;
    })
    .join('\n');
}
