// Directed peer links cut by the kernel. Member i listens on 127.0.0.(i+1) and its connections
// to peers leave from that address (`outboundAddress` in src/server/peer-transport.ts), and each
// member sends its own messages on its own outbound connection to each peer, whose port is the
// peer port (the receiver's acknowledgements come back on that connection; its own messages go
// on its own connection). So one rule in the OUTPUT chain, `-s A -d B -p tcp --dport PEER`, drops
// exactly what A sends to B, SYNs included (the request-forwarding frames and snapshots that A
// sends to B too: peer-snapshots.ts dials from the same address), and leaves B→A alone. Dropped,
// not refused: TCP retransmits as between hosts behind a firewall, and tenure's transport resets
// a connection nothing acknowledged for 5 s (PEER_WAIT_MAX_MS). On loopback every packet passes
// OUTPUT (iptables(8); netfilter's hooks: a locally generated packet traverses OUTPUT and then,
// delivered over lo, INPUT), so the rules in OUTPUT see it all. Each rule carries a comment
// naming its link; a cut is trusted once probes show it (linkBlocked in nemesis.ts).
import { execFileSync } from 'node:child_process';

export const PEER_PORT = 2380;
export const CLIENT_PORT = 2379;

/** From member `from` to member `to` (indexes). */
export interface Link {
  readonly from: number;
  readonly to: number;
}

export function memberHost(i: number): string {
  return `127.0.0.${i + 1}`;
}

export function linkName(l: Link, names: readonly string[]): string {
  return `${names[l.from] ?? l.from}->${names[l.to] ?? l.to}`;
}

const commentPrefix = 'chaos';

function ruleArgs(l: Link): string[] {
  return [
    'OUTPUT',
    '-s',
    memberHost(l.from),
    '-d',
    memberHost(l.to),
    '-p',
    'tcp',
    '--dport',
    String(PEER_PORT),
    '-m',
    'comment',
    '--comment',
    `${commentPrefix}:${l.from}:${l.to}`,
    '-j',
    'DROP',
  ];
}

function iptables(args: readonly string[]): string {
  return execFileSync('iptables', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export function cut(links: readonly Link[]): void {
  for (const l of links) iptables(['-A', ...ruleArgs(l)]);
}

export function restore(links: readonly Link[]): void {
  for (const l of links) {
    try {
      iptables(['-D', ...ruleArgs(l)]);
    } catch {
      // Not there (already restored).
    }
  }
}

/** Every rule gone: the whole OUTPUT chain is ours. */
export function restoreAll(): void {
  iptables(['-F', 'OUTPUT']);
}
