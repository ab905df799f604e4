// What `tenure start` warns about: configurations that run, and are fine on one laptop, but are
// unsafe or pointless on real machines. They are warnings, not errors, because each is right in
// some setting (a 2-member cluster while a third is being added; a loopback-only test).
import { isIP } from 'node:net';
import type { StartOptions } from './config.js';

/** True for a host that only this machine can reach: 127/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  return h === '::1';
}

function hostOf(url: string): string {
  return new URL(url).hostname;
}

export function unsafeConfigWarnings(
  o: Pick<
    StartOptions,
    'initialCluster' | 'listenClientUrls' | 'clientTls' | 'clientAutoTls' | 'initialClusterState'
  >,
): string[] {
  const out: string[] = [];
  const n = o.initialCluster.length;
  // Raft needs a majority: 2k members tolerate k-1 failures, as 2k-1 do, and need one more
  // member for every write (Raft §5.2; etcd's FAQ "Why an odd number of cluster members?").
  if (o.initialClusterState === 'new' && n > 1 && n % 2 === 0)
    out.push(
      `--initial-cluster has ${n} members: an even count tolerates ${n / 2 - 1} failure(s), no ` +
        `more than ${n - 1} members would, and every write waits for one more; use ${n - 1} ` +
        `or ${n + 1}`,
    );
  const peers = o.initialCluster.flatMap((m) => m.peerUrls.map((url) => ({ name: m.name, url })));
  const remote = peers.filter((p) => !isLoopbackHost(hostOf(p.url)));
  if (remote.length > 0)
    for (const p of peers.filter((q) => isLoopbackHost(hostOf(q.url))))
      out.push(
        `member ${p.name}'s peer URL ${p.url} is on loopback while ${remote[0]?.name ?? ''} is ` +
          `at ${remote[0]?.url ?? ''}: members on other machines cannot reach it`,
      );
  const tls = o.clientTls !== undefined || o.clientAutoTls === true;
  for (const url of o.listenClientUrls)
    if (url.startsWith('http:') && !isLoopbackHost(hostOf(url)) && !tls)
      out.push(
        `clients are served in plain text on ${url}: anyone who reaches it reads and writes ` +
          'every key unless auth is enabled; see docs/operations.md, "TLS"',
      );
  return out;
}
