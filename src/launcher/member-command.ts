// The command line of a member, tenure's or etcd's: the program, the node options a tenure member
// runs with, the etcd flags of a member of a new cluster (they mean the same to etcd and to
// `tenure start`) and the environment it gets.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LaunchError } from './errors.js';

// Node options: every cluster in the repository (`tenure up` and `npm start`, `tenure bench`,
// the demo, the tests) is started here with them; start members yourself as
// `node --max-semi-space-size=2 bin/tenure start ...` to get the same.
//
// --max-semi-space-size=2 (MiB; V8's default on 64-bit is 16): a member's young objects are
// requests and log entries that live for milliseconds, and what survives (the store, the log)
// moves to the old generation anyway. The smaller nursery lowered the peak RSS of each member of
// a 3-member cluster after 24,000 puts from 126-145 MiB to 106-112 MiB at the same CPU per put
// (285 against 287 µs at 64 in flight; /tmp probe on the project's 2-core machine, 2026-11-30).
export const MEMBER_NODE_ARGS: readonly string[] = ['--max-semi-space-size=2'];

export type MemberKind = 'tenure' | 'etcd';

/** The etcd binary Debian's etcd-server installs. */
export const etcdBinary = '/usr/bin/etcd';
/** etcd's defaults (embed/config.go), passed to etcd explicitly so the timing is pinned. */
const heartbeatIntervalMsDefault = 100;
const electionTimeoutMsDefault = 1000;

/**
 * The directory holding package.json above this file: the repository, or the installed package
 * (node_modules/tenure), whose bin/tenure is the one to run.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package root (package.json) not found');
    dir = up;
  }
  return dir;
}

/** bin/tenure of this package. */
export function tenureBin(): string {
  return join(packageRoot(), 'bin', 'tenure');
}

/** Path of the etcd binary, or a LaunchError naming the Debian package. */
export function findEtcd(): string {
  if (existsSync(etcdBinary)) return etcdBinary;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'etcd');
    if (dir !== '' && existsSync(p)) return p;
  }
  throw new LaunchError(
    'NO_ETCD',
    `etcd 3.4 is needed at ${etcdBinary}, from Debian's etcd-server package: ` +
      'sudo apt-get install -y etcd-server (npm test installs it when run as root)',
  );
}

/** `etcd --version`'s first line, or 'unknown'. */
export function etcdVersion(): string {
  try {
    const r = spawnSync(findEtcd(), ['--version'], { encoding: 'utf8', timeout: 5_000 });
    return (r.stdout.split('\n')[0] ?? 'unknown').replace(/^etcd Version:\s*/, '');
  } catch {
    return 'unknown';
  }
}

/** What a launcher knows of a member of a new cluster. */
export interface NewMemberSpec {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
}

/**
 * The etcd flags that start `m` as a member of a new cluster (they mean the same to etcd and to
 * `tenure start`); `initialCluster` is `name=peerUrl,…` for every member.
 */
export function newMemberFlags(m: NewMemberSpec, initialCluster: string, token: string): string[] {
  return [
    `--name=${m.name}`,
    `--data-dir=${m.dataDir}`,
    `--listen-client-urls=${m.clientUrl}`,
    `--advertise-client-urls=${m.clientUrl}`,
    `--listen-peer-urls=${m.peerUrl}`,
    `--initial-advertise-peer-urls=${m.peerUrl}`,
    `--initial-cluster=${initialCluster}`,
    '--initial-cluster-state=new',
    `--initial-cluster-token=${token}`,
  ];
}

/** https:// client URLs, with a certificate; clients verified against `caFile` if given. */
export interface ClientTlsSpec {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile?: string;
}

/** https:// peer URLs: each member serves and presents this certificate, and checks peers'. */
export interface PeerTlsSpec {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
}

/** TLS for a cluster's members; 'auto' is etcd's --auto-tls / --peer-auto-tls. */
export interface MemberTls {
  readonly client?: ClientTlsSpec | 'auto';
  readonly peer?: PeerTlsSpec | 'auto';
}

/** The etcd 3.4 TLS flags for `tls` (the same to etcd and to `tenure start`). */
export function tlsFlags(tls: MemberTls): string[] {
  const flags: string[] = [];
  const c = tls.client;
  if (c === 'auto') flags.push('--auto-tls');
  else if (c !== undefined) {
    flags.push(`--cert-file=${c.certFile}`, `--key-file=${c.keyFile}`);
    if (c.caFile !== undefined) flags.push(`--trusted-ca-file=${c.caFile}`, '--client-cert-auth');
  }
  const p = tls.peer;
  if (p === 'auto') flags.push('--peer-auto-tls');
  else if (p !== undefined)
    flags.push(
      `--peer-cert-file=${p.certFile}`,
      `--peer-key-file=${p.keyFile}`,
      `--peer-trusted-ca-file=${p.caFile}`,
      '--peer-client-cert-auth',
    );
  return flags;
}

export interface MemberCommandOptions {
  /**
   * Raft timing. etcd always gets these flags, with etcd's defaults (100 ms, 1000 ms). tenure
   * gets them only when set, so its flag surface stays the one listed in the README.
   */
  readonly heartbeatIntervalMs?: number;
  readonly electionTimeoutMs?: number;
  /** Flags after the common ones. */
  readonly extraArgs?: readonly string[];
  /**
   * `node` arguments for tenure members only, before `bin/tenure` (e.g. `--cpu-prof
   * --cpu-prof-dir=/tmp/prof`, which Node 20 refuses in NODE_OPTIONS). Ignored for etcd.
   */
  readonly nodeArgs?: readonly string[];
  /** bin/tenure to run; default this package's. */
  readonly tenureBin?: string;
}

/** The program and arguments that start `m` as a member of a new cluster. */
export function memberCommand(
  kind: MemberKind,
  m: NewMemberSpec,
  initialCluster: string,
  token: string,
  options: MemberCommandOptions = {},
): { readonly file: string; readonly args: string[] } {
  const flags = newMemberFlags(m, initialCluster, token);
  const heartbeat = options.heartbeatIntervalMs;
  const election = options.electionTimeoutMs;
  if (kind === 'etcd') {
    flags.push(
      `--heartbeat-interval=${heartbeat ?? heartbeatIntervalMsDefault}`,
      `--election-timeout=${election ?? electionTimeoutMsDefault}`,
      // zap to stderr: capnslog is deprecated in 3.4 and would print a warning per start.
      '--logger=zap',
      '--log-outputs=stderr',
    );
  } else {
    if (heartbeat !== undefined) flags.push(`--heartbeat-interval=${heartbeat}`);
    if (election !== undefined) flags.push(`--election-timeout=${election}`);
  }
  flags.push(...(options.extraArgs ?? []));
  if (kind === 'etcd') return { file: findEtcd(), args: flags };
  const bin = options.tenureBin ?? tenureBin();
  return {
    file: process.execPath,
    args: [...MEMBER_NODE_ARGS, ...(options.nodeArgs ?? []), bin, 'start', ...flags],
  };
}

/**
 * A member's environment: ours without ETCD_* (etcd would read them as flags) and, unless
 * `keepNodeOptions`, without NODE_OPTIONS (meant for this process, e.g. the bench's own
 * profiling), plus `extra`.
 */
export function memberEnv(
  extra: Readonly<Record<string, string>> = {},
  keepNodeOptions = false,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('ETCD')) continue;
    if (k === 'NODE_OPTIONS' && !keepNodeOptions) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}
