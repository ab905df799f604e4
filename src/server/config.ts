// `tenure start`'s configuration, spelled with etcd's own flags and defaults so that scripts and
// habits carry over (etcd's `etcd --help`). Unlike etcd, the default addresses are 127.0.0.1,
// never localhost (which may resolve to ::1) or all interfaces.
import { join } from 'node:path';
import type { InitialMember, NodeConfig } from './node.js';
import { NODE_DEFAULTS } from './node.js';
import { DEFAULT_ETCD_LIMITS } from '../core/state/etcd-limits.js';
import type { Mutants } from '../core/base/mutants.js';
import type { ClientTlsFiles } from './api/client-tls.js';
import type { ClientApiConfig } from './api/api-config.js';
import { DEFAULT_CLIENT_API_CONFIG } from './api/api-config.js';
import type { PeerTlsFiles } from './peer-tls.js';

/** The node's own settings (NodeConfig), plus what only the command line and the API need. */
/** `--log-format`: pino JSON lines, or one readable line per record (member-log.ts). */
export type LogFormat = 'json' | 'text';
const LOG_FORMATS: readonly string[] = ['json', 'text'] satisfies LogFormat[];

export interface StartOptions extends Pick<
  NodeConfig,
  | 'name'
  | 'dataDir'
  | 'advertiseClientUrls'
  | 'initialCluster'
  | 'initialClusterState'
  | 'initialClusterToken'
  | 'heartbeatMs'
  | 'electionMs'
  | 'pauseToleranceMs'
  | 'leaderDetector'
  | 'snapshotCount'
> {
  readonly listenClientUrls: readonly string[];
  readonly listenPeerUrls: readonly string[];
  readonly initialAdvertisePeerUrls: readonly string[];
  /** TLS between members, on https:// peer URLs (`--peer-cert-file` and friends). */
  readonly peerTls?: PeerTlsFiles;
  /** `--auto-tls`, `--peer-auto-tls` without certificates: made at start (auto-tls.ts). */
  readonly clientAutoTls?: boolean;
  readonly peerAutoTls?: boolean;
  readonly maxRequestBytes: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** `--log-format`: pino JSON lines (default) or readable text (member-log.ts). */
  readonly logFormat: LogFormat;
  /** TLS for the https:// client URLs (`--cert-file`, `--key-file`, `--trusted-ca-file`). */
  readonly clientTls?: ClientTlsFiles;
  /** `--client-cert-auth`: with auth on, a call without a token runs as its certificate's CN. */
  readonly clientCertAuth: boolean;
  /** `--auth-token-ttl`, in seconds (etcd default 300). */
  readonly authTokenTtlSeconds: number;
  /** `--bcrypt-cost` (etcd default 10, valid 4..31). */
  readonly bcryptCost: number;
  /** The client port's limits on what one client may hold (`--max-concurrent-streams`, ...). */
  readonly clientLimits: ClientLimits;
  /** Planted bugs, from the environment only (planted-bugs.ts). */
  readonly mutants?: Mutants;
  /**
   * `--listen-metrics-urls`: more URLs answering only /metrics and /health (none by default);
   * https:// ones are served with the client TLS files.
   */
  readonly listenMetricsUrls?: readonly string[];
  /** `--experimental-initial-corrupt-check`: compare hashes with the peers before serving. */
  readonly initialCorruptCheck?: boolean;
  /** `--experimental-corrupt-check-time`, in ms; 0 (etcd's default) checks never. */
  readonly corruptCheckIntervalMs?: number;
  /**
   * Whether a leader checkpoints leases that missed a renewal (lease-clock.ts). On unless
   * `--no-lease-checkpoint` or etcd's `--experimental-enable-lease-checkpoint=false`.
   */
  readonly leaseCheckpoint: boolean;
}

/** The flags as commander hands them over: strings, possibly missing. */
export interface StartFlags {
  readonly name?: string;
  readonly dataDir?: string;
  readonly listenClientUrls?: string;
  readonly advertiseClientUrls?: string;
  readonly listenPeerUrls?: string;
  readonly initialAdvertisePeerUrls?: string;
  readonly initialCluster?: string;
  readonly initialClusterState?: string;
  readonly initialClusterToken?: string;
  readonly heartbeatInterval?: string;
  readonly electionTimeout?: string;
  readonly pauseTolerance?: string;
  readonly leaderDetector?: string;
  readonly snapshotCount?: string;
  readonly maxRequestBytes?: string;
  readonly logLevel?: string;
  readonly logFormat?: string;
  readonly autoTls?: boolean;
  readonly peerCertFile?: string;
  readonly peerKeyFile?: string;
  readonly peerTrustedCaFile?: string;
  readonly peerClientCertAuth?: boolean;
  readonly peerCertAllowedCn?: string;
  readonly peerAutoTls?: boolean;
  readonly certFile?: string;
  readonly keyFile?: string;
  readonly trustedCaFile?: string;
  readonly clientCertAuth?: boolean;
  readonly authToken?: string;
  readonly authTokenTtl?: string;
  readonly bcryptCost?: string;
  readonly maxConnectionsPerAddress?: string;
  readonly maxOpeningConnections?: string;
  readonly maxConcurrentStreams?: string;
  readonly maxWatchesPerConnection?: string;
  readonly maxLeaseKeepaliveStreamsPerConnection?: string;
  readonly maxStreamQueuedBytes?: string;
  readonly maxConnectionUnsentBytes?: string;
  readonly maxWatchQueueBytes?: string;
  readonly listenMetricsUrls?: string;
  readonly experimentalInitialCorruptCheck?: boolean;
  readonly experimentalCorruptCheckTime?: string;
  /** `--no-lease-checkpoint` sets false; commander's default is true. */
  readonly leaseCheckpoint?: boolean;
  /** etcd's switch: true when given bare, else its value (`=false` turns checkpoints off). */
  readonly experimentalEnableLeaseCheckpoint?: boolean | string;
}

/** The client API's per-client limits that have a flag (api-config.ts says what each does). */
export type ClientLimits = Pick<
  ClientApiConfig,
  | 'connectionsPerAddressMax'
  | 'openingConnectionsMax'
  | 'streamsPerConnectionMax'
  | 'watchesPerConnectionMax'
  | 'keepAliveStreamsPerConnectionMax'
  | 'streamQueuedBytesMax'
  | 'connectionUnsentBytesMax'
  | 'watchQueueBytesMax'
>;

/** Each limit's flag, field and default, in the order `tenure start --help` lists them. */
export const CLIENT_LIMIT_FLAGS: readonly {
  readonly flag: string;
  readonly key: keyof StartFlags;
  readonly field: keyof ClientLimits;
  readonly help: string;
}[] = [
  {
    flag: '--max-connections-per-address',
    key: 'maxConnectionsPerAddress',
    field: 'connectionsPerAddressMax',
    help: 'client connections open at once from one IP address',
  },
  {
    flag: '--max-opening-connections',
    key: 'maxOpeningConnections',
    field: 'openingConnectionsMax',
    help: 'client connections in their TLS handshake or first bytes, server-wide',
  },
  {
    flag: '--max-concurrent-streams',
    key: 'maxConcurrentStreams',
    field: 'streamsPerConnectionMax',
    help: 'gRPC calls open at once on one connection (HTTP/2 streams)',
  },
  {
    flag: '--max-watches-per-connection',
    key: 'maxWatchesPerConnection',
    field: 'watchesPerConnectionMax',
    help: 'watchers open at once on one connection',
  },
  {
    flag: '--max-lease-keepalive-streams-per-connection',
    key: 'maxLeaseKeepaliveStreamsPerConnection',
    field: 'keepAliveStreamsPerConnectionMax',
    help: 'LeaseKeepAlive streams open at once on one connection',
  },
  {
    flag: '--max-stream-queued-bytes',
    key: 'maxStreamQueuedBytes',
    field: 'streamQueuedBytesMax',
    help: 'answer bytes a stream queues before it waits for its client to read',
  },
  {
    flag: '--max-connection-unsent-bytes',
    key: 'maxConnectionUnsentBytes',
    field: 'connectionUnsentBytesMax',
    help: 'unread answer bytes past which a connection gets no new calls',
  },
  {
    flag: '--max-watch-queue-bytes',
    key: 'maxWatchQueueBytes',
    field: 'watchQueueBytesMax',
    help: 'live event bytes a watch stream queues before its watchers fall behind',
  },
];

/** HTTP/2 settings are 32-bit (RFC 9113 §6.5.1); etcd's default is this, math.MaxUint32. */
const CONCURRENT_STREAMS_MAX = 2 ** 32 - 1;

function resolveClientLimits(f: StartFlags): ClientLimits {
  const out: Partial<Record<keyof ClientLimits, number>> = {};
  for (const { flag, key, field } of CLIENT_LIMIT_FLAGS) {
    const value = f[key];
    out[field] = positiveInt(
      flag,
      typeof value === 'string' ? value : undefined,
      DEFAULT_CLIENT_API_CONFIG[field],
    );
  }
  if ((out.streamsPerConnectionMax ?? 0) > CONCURRENT_STREAMS_MAX)
    throw new ConfigError(`--max-concurrent-streams must be at most ${CONCURRENT_STREAMS_MAX}`);
  return out as ClientLimits;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'BAD_CONFIG';
}

export { NODE_DEFAULTS };

export const DEFAULT_MAX_REQUEST_BYTES = DEFAULT_ETCD_LIMITS.requestBytesMax;

/** A peer URL is http:// or https:// (peer TLS), as a client URL is. */
const PEER_SCHEMES: readonly string[] = ['http:', 'https:'];

function urlList(flag: string, value: string, schemes = PEER_SCHEMES): string[] {
  const urls = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (urls.length === 0) throw new ConfigError(`${flag} must name at least one URL`);
  for (const u of urls) {
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      throw new ConfigError(`${flag}: '${u}' is not a URL (expected http://host:port)`);
    }
    if (!schemes.includes(parsed.protocol))
      throw new ConfigError(`${flag}: '${u}' must use http:// or https://`);
    if (parsed.port === '') throw new ConfigError(`${flag}: '${u}' needs an explicit port`);
  }
  return urls;
}

function positiveInt(flag: string, value: string | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${flag} must be a positive integer`);
  return n;
}

function nonNegativeInt(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0)
    throw new ConfigError(`${flag} must be a non-negative integer`);
  return n;
}

/** Parse `name=url,name=url`; a name may appear more than once for several peer URLs. */
export function parseInitialCluster(value: string): InitialMember[] {
  const byName = new Map<string, string[]>();
  for (const part of value.split(',')) {
    const s = part.trim();
    if (s === '') continue;
    const eq = s.indexOf('=');
    if (eq <= 0)
      throw new ConfigError(
        `--initial-cluster: '${s}' is not name=url (e.g. n1=http://127.0.0.1:2380)`,
      );
    const name = s.slice(0, eq);
    const url = urlList('--initial-cluster', s.slice(eq + 1))[0] as string;
    byName.set(name, [...(byName.get(name) ?? []), url]);
  }
  if (byName.size === 0) throw new ConfigError('--initial-cluster names no member');
  return [...byName].map(([name, peerUrls]) => ({ name, peerUrls }));
}

export function resolveStartOptions(f: StartFlags): StartOptions {
  const name = f.name ?? 'default';
  const listenPeerUrls = urlList('--listen-peer-urls', f.listenPeerUrls ?? 'http://127.0.0.1:2380');
  const initialAdvertisePeerUrls = urlList(
    '--initial-advertise-peer-urls',
    f.initialAdvertisePeerUrls ?? listenPeerUrls.join(','),
  );
  const listenClientUrls = urlList(
    '--listen-client-urls',
    f.listenClientUrls ?? 'http://127.0.0.1:2379',
    CLIENT_SCHEMES,
  );
  const advertiseClientUrls = urlList(
    '--advertise-client-urls',
    f.advertiseClientUrls ?? listenClientUrls.join(','),
    CLIENT_SCHEMES,
  );
  const clientTls = resolveClientTls(f, listenClientUrls);
  const initialCluster = parseInitialCluster(
    f.initialCluster ?? `${name}=${initialAdvertisePeerUrls.join(`,${name}=`)}`,
  );
  const self = initialCluster.find((m) => m.name === name);
  if (!self)
    throw new ConfigError(
      `--initial-cluster has no member named '${name}'; it must list this member's --name`,
    );
  const peerTls = resolvePeerTls(f, [
    ...listenPeerUrls,
    ...initialAdvertisePeerUrls,
    ...initialCluster.flatMap((m) => m.peerUrls),
  ]);
  const state = f.initialClusterState ?? 'new';
  if (state !== 'new' && state !== 'existing')
    throw new ConfigError(`--initial-cluster-state must be 'new' or 'existing', not '${state}'`);
  const heartbeatMs = positiveInt(
    '--heartbeat-interval',
    f.heartbeatInterval,
    NODE_DEFAULTS.heartbeatMs,
  );
  const electionMs = positiveInt('--election-timeout', f.electionTimeout, NODE_DEFAULTS.electionMs);
  if (electionMs < 5 * heartbeatMs)
    throw new ConfigError(
      `--election-timeout (${electionMs} ms) should be at least 5 times --heartbeat-interval (${heartbeatMs} ms)`,
    );
  const pauseToleranceMs =
    f.pauseTolerance === undefined
      ? undefined
      : nonNegativeInt('--pause-tolerance', f.pauseTolerance);
  const detector = f.leaderDetector ?? 'phi';
  if (detector !== 'phi' && detector !== 'fixed')
    throw new ConfigError(`--leader-detector must be phi or fixed, not '${detector}'`);
  const level = f.logLevel ?? 'info';
  if (level !== 'debug' && level !== 'info' && level !== 'warn' && level !== 'error')
    throw new ConfigError(`--log-level must be debug, info, warn or error`);
  const logFormat = f.logFormat ?? 'json';
  if (!LOG_FORMATS.includes(logFormat))
    throw new ConfigError(`--log-format must be json or text, not '${logFormat}'`);
  return {
    name,
    dataDir: f.dataDir ?? join('.', `${name}.tenure`),
    listenClientUrls,
    advertiseClientUrls,
    listenPeerUrls,
    initialAdvertisePeerUrls,
    initialCluster,
    initialClusterState: state,
    initialClusterToken: f.initialClusterToken ?? 'etcd-cluster',
    ...peerTls,
    ...(clientTls === undefined && f.autoTls === true ? { clientAutoTls: true } : {}),
    heartbeatMs,
    electionMs,
    ...(pauseToleranceMs === undefined ? {} : { pauseToleranceMs }),
    leaderDetector: detector,
    snapshotCount: positiveInt('--snapshot-count', f.snapshotCount, NODE_DEFAULTS.snapshotCount),
    maxRequestBytes: positiveInt(
      '--max-request-bytes',
      f.maxRequestBytes,
      DEFAULT_MAX_REQUEST_BYTES,
    ),
    logLevel: level,
    logFormat: logFormat as LogFormat,
    ...(clientTls === undefined ? {} : { clientTls }),
    clientCertAuth: f.clientCertAuth === true,
    ...resolveAuthFlags(f),
    clientLimits: resolveClientLimits(f),
    ...resolveMetricsUrls(f, clientTls !== undefined || f.autoTls === true),
    ...(f.experimentalInitialCorruptCheck === true ? { initialCorruptCheck: true } : {}),
    ...(f.experimentalCorruptCheckTime === undefined
      ? {}
      : {
          corruptCheckIntervalMs: goDurationMs(
            '--experimental-corrupt-check-time',
            f.experimentalCorruptCheckTime,
          ),
        }),
    leaseCheckpoint: resolveLeaseCheckpoint(f),
  };
}

/**
 * Checkpoints are on by default (etcd's are off: --experimental-enable-lease-checkpoint). etcd's
 * flag is accepted as a Go bool (bare, `=true`, `=false`); tenure's own is --no-lease-checkpoint.
 */
function resolveLeaseCheckpoint(f: StartFlags): boolean {
  const own = f.leaseCheckpoint ?? true;
  const etcd = f.experimentalEnableLeaseCheckpoint;
  if (etcd === undefined) return own;
  const v = etcd === true ? 'true' : String(etcd).toLowerCase();
  if (v !== 'true' && v !== 'false')
    throw new ConfigError(
      `--experimental-enable-lease-checkpoint must be true or false, not '${v}'`,
    );
  if (v === 'true' && !own)
    throw new ConfigError(
      '--no-lease-checkpoint and --experimental-enable-lease-checkpoint conflict',
    );
  return v === 'true' && own;
}

/** etcd's --listen-metrics-urls; https:// ones need the client certificate (or --auto-tls). */
function resolveMetricsUrls(
  f: StartFlags,
  clientCertificate: boolean,
): { listenMetricsUrls?: readonly string[] } {
  if (f.listenMetricsUrls === undefined) return {};
  const urls = urlList('--listen-metrics-urls', f.listenMetricsUrls, CLIENT_SCHEMES);
  const secure = urls.find((u) => u.startsWith('https:'));
  if (secure !== undefined && !clientCertificate)
    throw new ConfigError(
      `--listen-metrics-urls: '${secure}' is served with the client certificate: it needs ` +
        'https:// --listen-client-urls with --cert-file and --key-file (or --auto-tls)',
    );
  return { listenMetricsUrls: urls };
}

const DURATION_UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration as etcd's flags take them ("30s", "1m30s", "500ms", "0s"), in ms. */
export function goDurationMs(flag: string, value: string): number {
  const text = value.trim();
  if (text === '0') return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text)
    throw new ConfigError(`${flag}: '${value}' is not a duration (e.g. 30s, 5m, 1m30s)`);
  return parts.reduce((ms, p) => ms + Number(p[1]) * (DURATION_UNIT_MS[p[2] as string] ?? 0), 0);
}

/** etcd's bcrypt bounds (golang.org/x/crypto/bcrypt MinCost, MaxCost) and default. */
const BCRYPT_COST_MIN = 4;
const BCRYPT_COST_MAX = 31;
const BCRYPT_COST_DEFAULT = 10;
/** etcd's --auth-token-ttl default, in seconds. */
const AUTH_TOKEN_TTL_SECONDS_DEFAULT = 300;

function resolveAuthFlags(f: StartFlags): {
  readonly authTokenTtlSeconds: number;
  readonly bcryptCost: number;
} {
  const token = f.authToken ?? 'simple';
  if (token !== 'simple')
    throw new ConfigError(
      `--auth-token ${token}: only 'simple' tokens are served (JWT is not supported yet)`,
    );
  const bcryptCost = positiveInt('--bcrypt-cost', f.bcryptCost, BCRYPT_COST_DEFAULT);
  if (bcryptCost < BCRYPT_COST_MIN || bcryptCost > BCRYPT_COST_MAX)
    throw new ConfigError(
      `--bcrypt-cost ${bcryptCost}: must be between ${BCRYPT_COST_MIN} and ${BCRYPT_COST_MAX}`,
    );
  const authTokenTtlSeconds = positiveInt(
    '--auth-token-ttl',
    f.authTokenTtl,
    AUTH_TOKEN_TTL_SECONDS_DEFAULT,
  );
  return { authTokenTtlSeconds, bcryptCost };
}

const CLIENT_SCHEMES = ['http:', 'https:'];

/** etcd 3.4 refuses https:// without a certificate, and a CA or client auth without https://. */
function resolveClientTls(f: StartFlags, urls: readonly string[]): ClientTlsFiles | undefined {
  const secure = urls.some((u) => u.startsWith('https:'));
  const any =
    f.certFile !== undefined ||
    f.keyFile !== undefined ||
    f.trustedCaFile !== undefined ||
    f.clientCertAuth === true;
  if (!secure) {
    if (any) throw new ConfigError('--cert-file and friends need an https:// --listen-client-urls');
    if (f.autoTls === true)
      throw new ConfigError('--auto-tls needs an https:// --listen-client-urls to serve it on');
    return undefined;
  }
  if (f.autoTls === true && f.certFile === undefined && f.keyFile === undefined) {
    // etcd 3.4 drops the CA and client auth flags for its self cert without a word; they ask
    // for verified clients, which a self-signed server certificate cannot go with here.
    if (f.trustedCaFile !== undefined || f.clientCertAuth === true)
      throw new ConfigError(
        '--auto-tls makes a self-signed certificate; --trusted-ca-file and --client-cert-auth ' +
          'need --cert-file and --key-file',
      );
    return undefined; // made at start (auto-tls.ts)
  }
  if (f.certFile === undefined || f.keyFile === undefined)
    throw new ConfigError(
      'an https:// --listen-client-urls needs --cert-file and --key-file (or --auto-tls)',
    );
  if (f.clientCertAuth === true && f.trustedCaFile === undefined)
    throw new ConfigError('--client-cert-auth needs --trusted-ca-file');
  return {
    certFile: f.certFile,
    keyFile: f.keyFile,
    ...(f.trustedCaFile === undefined ? {} : { trustedCaFile: f.trustedCaFile }),
    clientCertAuth: f.clientCertAuth === true || f.trustedCaFile !== undefined,
  };
}

/**
 * Peer TLS as etcd 3.4 has it (embed/etcd.go configurePeerListeners, rafthttp NewListener), with
 * the mistakes etcd only warns of refused: every peer URL, this member's and its peers' in
 * --initial-cluster, is https:// or none is, since a member's peer port speaks TLS or not and
 * all members must agree (peer-transport.ts refuses the other kind); https:// needs a
 * certificate and key (or --peer-auto-tls); the certificate flags need https://.
 */
function resolvePeerTls(
  f: StartFlags,
  urls: readonly string[],
): { peerTls?: PeerTlsFiles; peerAutoTls?: true } {
  const plain = urls.find((u) => u.startsWith('http:'));
  const secure = urls.find((u) => u.startsWith('https:'));
  if (plain !== undefined && secure !== undefined)
    throw new ConfigError(
      `the peer URLs mix http:// and https:// ('${plain}', '${secure}'): every member of a ` +
        'cluster must use https:// peer URLs, or none',
    );
  const ca = f.peerTrustedCaFile;
  const any =
    f.peerCertFile !== undefined ||
    f.peerKeyFile !== undefined ||
    ca !== undefined ||
    f.peerClientCertAuth === true ||
    f.peerCertAllowedCn !== undefined ||
    f.peerAutoTls === true;
  if (secure === undefined) {
    if (any)
      throw new ConfigError(
        '--peer-cert-file, --peer-auto-tls and friends need https:// peer URLs ' +
          '(--listen-peer-urls, --initial-advertise-peer-urls, --initial-cluster)',
      );
    return {};
  }
  if (f.peerCertFile !== undefined && f.peerKeyFile !== undefined) {
    if (f.peerClientCertAuth === true && ca === undefined)
      throw new ConfigError('--peer-client-cert-auth needs --peer-trusted-ca-file');
    const allowedCn = f.peerCertAllowedCn;
    if (allowedCn !== undefined && ca === undefined)
      throw new ConfigError(
        '--peer-cert-allowed-cn checks the CN of a verified peer certificate: it needs ' +
          '--peer-trusted-ca-file',
      );
    if (allowedCn === '') throw new ConfigError('--peer-cert-allowed-cn must not be empty');
    return {
      peerTls: {
        certFile: f.peerCertFile,
        keyFile: f.peerKeyFile,
        ...(ca === undefined ? {} : { trustedCaFile: ca }),
        // A CA file alone already means verified peers, as in etcd 3.4 (ServerConfig).
        clientCertAuth: f.peerClientCertAuth === true || ca !== undefined,
        ...(allowedCn === undefined ? {} : { allowedCn }),
      },
    };
  }
  if (f.peerCertFile === undefined && f.peerKeyFile === undefined && f.peerAutoTls === true) {
    if (ca !== undefined || f.peerClientCertAuth === true || f.peerCertAllowedCn !== undefined)
      throw new ConfigError(
        '--peer-auto-tls makes a self-signed certificate that no CA signed; ' +
          '--peer-trusted-ca-file and --peer-client-cert-auth need --peer-cert-file and ' +
          '--peer-key-file',
      );
    return { peerAutoTls: true };
  }
  throw new ConfigError(
    `https:// peer URLs ('${secure}') need --peer-cert-file and --peer-key-file ` +
      '(or --peer-auto-tls)',
  );
}
