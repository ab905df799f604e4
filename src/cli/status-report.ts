// What `tenure status` shows (status.ts runs it): each member's Maintenance.Status, the
// cluster's MemberList and alarms (the etcd API, so it reads an etcd 3.4 cluster too), and from
// the dashboard's /ui/api/state (src/server/ui/state.ts) what etcd's API does not say: the
// leases and the lock and election queues with their holders and fencing tokens.
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as grpc from '@grpc/grpc-js';
import { packageDefinition } from '../server/api/protos.js';
import type { DashboardState, QueueRow } from '../server/ui/state.js';

/** How long one call to one member may take, in ms: an unreachable member must not stall. */
export const STATUS_CALL_TIMEOUT_MS = 2000;
/** Queues listed in the table; the JSON has them all. */
const QUEUES_SHOWN_MAX = 20;
/** Bytes of a /ui/api/state answer read at most. */
const STATE_BYTES_MAX = 16 * 1024 * 1024;

export interface StatusTls {
  readonly caFile?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
}

export interface MemberStatus {
  readonly name: string;
  /** Hex, as etcdctl prints member IDs. */
  readonly id: string;
  readonly endpoint: string | null;
  readonly role: 'leader' | 'follower' | 'learner' | 'unreachable';
  readonly term: number | null;
  readonly commit: number | null;
  readonly applied: number | null;
  /** Entries the member has applied behind the leader's commit index; null when unknown. */
  readonly lag: number | null;
  readonly dbSizeBytes: number | null;
  /**
   * The leader's φ accrual suspicion of this member (its dashboard state, peer-suspicion.ts);
   * null for the leader itself, or when the leader did not answer.
   */
  readonly phi: number | null;
  readonly version: string | null;
  readonly alarms: readonly string[];
  readonly error: string | null;
}

export interface ClusterStatus {
  readonly at: number;
  readonly members: readonly MemberStatus[];
  readonly leader: string | null;
  /** From the dashboard state of the leader (or any member); null where none answered. */
  readonly leases: { readonly count: number } | null;
  readonly queues: readonly QueueRow[] | null;
  /** Which member the leases and queues come from. */
  readonly stateFrom: string | null;
  readonly errors: readonly string[];
}

type Callback = (err: grpc.ServiceError | null, resp: Record<string, unknown>) => void;
type Method = (req: object, opts: grpc.CallOptions, cb: Callback) => void;
type Ctor = new (addr: string, creds: grpc.ChannelCredentials) => grpc.Client;

const services = grpc.loadPackageDefinition(packageDefinition()) as unknown as {
  etcdserverpb: { Maintenance: Ctor; Cluster: Ctor };
};

function credentials(tls: StatusTls | undefined, secure: boolean): grpc.ChannelCredentials {
  if (!secure) return grpc.credentials.createInsecure();
  const read = (f: string | undefined): Buffer | null => (f === undefined ? null : readFileSync(f));
  return grpc.credentials.createSsl(read(tls?.caFile), read(tls?.keyFile), read(tls?.certFile));
}

function call(client: grpc.Client, method: string, req: object): Promise<Record<string, unknown>> {
  const fn = (client as unknown as Record<string, Method>)[method];
  if (fn === undefined) return Promise.reject(new Error(`no method ${method}`));
  return new Promise((resolve, reject) => {
    fn.call(client, req, { deadline: Date.now() + STATUS_CALL_TIMEOUT_MS }, (err, resp) =>
      err ? reject(err) : resolve(resp),
    );
  });
}

function errorText(e: unknown): string {
  const details = (e as { details?: unknown }).details;
  // grpc-js ends some details with an empty "Resolution note: ".
  if (typeof details === 'string' && details !== '')
    return details.replace(/\s*Resolution note:\s*$/, '');
  return e instanceof Error ? e.message : String(e);
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');
/** A uint64 (a decimal string on the wire) in hex, as etcdctl prints IDs. */
const hex = (decimal: unknown): string =>
  typeof decimal === 'string' && /^\d+$/.test(decimal) ? BigInt(decimal).toString(16) : '0';
const num = (v: unknown): number => Number(v ?? 0);

/** GET `url` as JSON with the client's TLS files, bounded in time and size. */
export function getJson(url: string, tls: StatusTls | undefined): Promise<unknown> {
  const u = new URL(url);
  const secure = u.protocol === 'https:';
  const read = (f: string | undefined): Buffer | undefined =>
    f === undefined ? undefined : readFileSync(f);
  return new Promise((resolve, reject) => {
    const options: https.RequestOptions = {
      timeout: STATUS_CALL_TIMEOUT_MS,
      ...(secure
        ? { ca: read(tls?.caFile), cert: read(tls?.certFile), key: read(tls?.keyFile) }
        : {}),
    };
    const req = (secure ? https : http).get(u, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > STATE_BYTES_MAX) req.destroy(new Error(`${url}: answer too large`));
        else chunks.push(c);
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch (e) {
          reject(new Error(`${url}: not JSON (${errorText(e)})`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(new Error(`${url}: no answer in ${STATUS_CALL_TIMEOUT_MS} ms`)),
    );
    req.on('error', reject);
  });
}

interface Probe {
  readonly endpoint: string;
  readonly status?: Record<string, unknown>;
  readonly members?: readonly Record<string, unknown>[];
  readonly alarms?: readonly Record<string, unknown>[];
  readonly state?: DashboardState;
  readonly error?: string;
}

async function probe(endpoint: string, tls: StatusTls | undefined): Promise<Probe> {
  const u = new URL(endpoint.includes('://') ? endpoint : `http://${endpoint}`);
  const creds = credentials(tls, u.protocol === 'https:');
  const maintenance = new services.etcdserverpb.Maintenance(u.host, creds);
  const cluster = new services.etcdserverpb.Cluster(u.host, creds);
  try {
    const [status, list, alarm, state] = await Promise.allSettled([
      call(maintenance, 'Status', {}),
      call(cluster, 'MemberList', {}),
      call(maintenance, 'Alarm', { action: 'GET', memberID: '0', alarm: 'NONE' }),
      getJson(`${u.origin}/ui/api/state`, tls),
    ]);
    if (status.status === 'rejected')
      return { endpoint: u.origin, error: errorText(status.reason) };
    return {
      endpoint: u.origin,
      status: status.value,
      ...(list.status === 'fulfilled'
        ? { members: list.value.members as Record<string, unknown>[] }
        : {}),
      ...(alarm.status === 'fulfilled'
        ? { alarms: alarm.value.alarms as Record<string, unknown>[] }
        : {}),
      ...(state.status === 'fulfilled' ? { state: state.value as DashboardState } : {}),
    };
  } finally {
    maintenance.close();
    cluster.close();
  }
}

/** Ask every endpoint at once and put the answers together. */
export async function collectStatus(
  endpoints: readonly string[],
  tls: StatusTls | undefined,
): Promise<ClusterStatus> {
  const probes = await Promise.all(endpoints.map((e) => probe(e, tls)));
  const answered = probes.filter((p) => p.status !== undefined);
  const byId = new Map(
    answered.map((p) => [hex((p.status?.header as { member_id?: unknown })?.member_id), p]),
  );
  const named = answered.map((p) => hex(p.status?.leader)).filter((id) => id !== '0');
  // The leader the members name; one that answered us is preferred.
  const leaderId = named.find((id) => byId.has(id)) ?? named[0] ?? null;
  const leaderCommit = leaderId === null ? undefined : byId.get(leaderId)?.status?.raftIndex;
  const list = answered.find((p) => p.members !== undefined)?.members ?? [];
  const alarms = answered.find((p) => p.alarms !== undefined)?.alarms ?? [];
  const alarmsOf = (id: string): string[] =>
    alarms.filter((a) => hex(a.memberID) === id).map((a) => String(a.alarm));
  const leaderPeers = leaderId === null ? undefined : byId.get(leaderId)?.state?.peers;
  const members: MemberStatus[] = list.map((m) => {
    const id = hex(m.ID);
    const p = byId.get(id);
    const clientUrls = (m.clientURLs as string[] | undefined) ?? [];
    const endpoint = p?.endpoint ?? clientUrls[0] ?? null;
    const failed = probes.find((x) => x.error !== undefined && clientUrls.includes(x.endpoint));
    const s = p?.status;
    const role =
      s === undefined
        ? 'unreachable'
        : m.isLearner === true
          ? 'learner'
          : leaderId === id
            ? 'leader'
            : 'follower';
    return {
      name: text(m.name),
      id,
      endpoint,
      role,
      term: s === undefined ? null : num(s.raftTerm),
      commit: s === undefined ? null : num(s.raftIndex),
      applied: s === undefined ? null : num(s.raftAppliedIndex),
      lag:
        s === undefined || leaderCommit === undefined
          ? null
          : Math.max(0, num(leaderCommit) - num(s.raftAppliedIndex)),
      dbSizeBytes: s === undefined ? null : num(s.dbSize),
      phi: leaderPeers?.find((x) => x.id === id)?.phi ?? null,
      version: s === undefined ? null : text(s.version),
      alarms: alarmsOf(id),
      error: s === undefined ? (failed?.error ?? 'not among the endpoints asked') : null,
    };
  });
  const leaderProbe = leaderId === null ? undefined : byId.get(leaderId);
  const withState =
    leaderProbe?.state !== undefined ? leaderProbe : answered.find((p) => p.state !== undefined);
  return {
    at: Date.now(),
    members,
    leader: leaderId,
    leases: withState?.state === undefined ? null : { count: withState.state.leases.count },
    queues: withState?.state?.queues.items ?? null,
    stateFrom: withState?.endpoint ?? null,
    errors: probes.filter((p) => p.error !== undefined).map((p) => `${p.endpoint}: ${p.error}`),
  };
}

function bytes(n: number | null): string {
  if (n === null) return '-';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Rows of cells as aligned columns, two spaces apart. */
export function columns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

const cell = (v: number | string | null): string => (v === null ? '-' : String(v));

/** The report as lines of text, for a terminal. */
export function renderStatus(s: ClusterStatus): string[] {
  if (s.members.length === 0) return ['no member answered:', ...s.errors.map((e) => `  ${e}`)];
  const lines = columns([
    [
      'MEMBER',
      'ID',
      'ENDPOINT',
      'ROLE',
      'TERM',
      'COMMIT',
      'APPLIED',
      'LAG',
      'PHI',
      'DB SIZE',
      'ALARMS',
    ],
    ...s.members.map((m) => [
      m.name || '(unstarted)',
      m.id,
      cell(m.endpoint),
      m.role,
      cell(m.term),
      cell(m.commit),
      cell(m.applied),
      cell(m.lag),
      m.phi === null ? '-' : m.phi.toFixed(1),
      bytes(m.dbSizeBytes),
      m.alarms.length === 0 ? '-' : m.alarms.join(','),
    ]),
  ]);
  for (const m of s.members) if (m.error !== null) lines.push(`  ${m.name || m.id}: ${m.error}`);
  lines.push('');
  if (s.leases === null || s.queues === null) {
    lines.push('leases, locks: unknown (no member served /ui/api/state: not tenure, or too old)');
    return lines;
  }
  lines.push(
    `leases: ${s.leases.count}    locks and elections: ${s.queues.length}` +
      (s.stateFrom === null ? '' : `    (as ${s.stateFrom} sees them)`),
  );
  if (s.queues.length > 0) {
    lines.push(
      ...columns([
        ['NAME', 'KIND', 'HOLDER', 'TOKEN', 'WAITING'],
        ...s.queues
          .slice(0, QUEUES_SHOWN_MAX)
          .map((q) => [q.name, q.kind, q.holder.key, String(q.holder.token), String(q.waiting)]),
      ]),
    );
    if (s.queues.length > QUEUES_SHOWN_MAX)
      lines.push(`… and ${s.queues.length - QUEUES_SHOWN_MAX} more (--json lists them all)`);
  }
  return lines;
}
