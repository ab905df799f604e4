// What SWIM members say to each other: data, not objects. Packets and the membership updates they
// piggyback are discriminated unions on `type`, immutable once sent.

/** A member's transport address, "host:port". */
export type Address = string;

export type MemberStatus = 'alive' | 'suspect' | 'dead' | 'left';

/**
 * A membership update, gossiped and piggybacked (SWIM §4.1, "infection-style dissemination").
 * `epoch` names a life of the process (a restart takes a new, higher one when epochIdentity is on;
 * otherwise it stays 0); `inc` is SWIM's incarnation number within that life (§4.2).
 */
export type Update =
  | {
      readonly type: 'alive';
      readonly name: string;
      readonly addr: Address;
      readonly epoch: number;
      readonly inc: number;
    }
  | {
      readonly type: 'suspect' | 'dead';
      readonly name: string;
      readonly epoch: number;
      readonly inc: number;
      /** The accuser. */
      readonly from: string;
      /**
       * How long, as of sending, the target may have been stopped: the accuser's bound on the
       * start of the silence (tenure). Receivers compare it with their own, fresher contact.
       */
      readonly silentForMs: number;
      /** Why: silence (timeout) or a refused port (evidence). */
      readonly reason: 'timeout' | 'evidence';
    }
  | {
      readonly type: 'left';
      readonly name: string;
      readonly epoch: number;
      readonly inc: number;
    };

/** Who sent a packet: every packet proves its sender alive at that life and incarnation. */
export interface Sender {
  readonly name: string;
  readonly addr: Address;
  readonly epoch: number;
  readonly inc: number;
}

interface Base {
  readonly from: Sender;
  readonly updates: readonly Update[];
}

export type Packet =
  /** SWIM ping. `target` guards against a different process now living at the address. */
  | (Base & { readonly type: 'ping'; readonly seq: number; readonly target: string })
  /** Answer to a ping; `watcher` names who the sender heartbeats to (tenure's watch). */
  | (Base & { readonly type: 'ack'; readonly seq: number; readonly watcher: string | null })
  /** Lifeguard: a relay got no answer from the target in time (§IV.A). */
  | (Base & { readonly type: 'nack'; readonly seq: number })
  /** SWIM ping-req: ping `target` for me and forward its ack. */
  | (Base & {
      readonly type: 'pingReq';
      readonly seq: number;
      readonly target: string;
      readonly targetAddr: Address;
    })
  /** tenure's watch: one-way heartbeat to the ring watcher; `handoff` ends the relation. */
  | (Base & { readonly type: 'heartbeat'; readonly handoff: boolean })
  /** Tell a member to stop heartbeating to us: we cannot hear it (link-level unreachable). */
  | (Base & { readonly type: 'release' })
  /** Gossip round: updates only. */
  | (Base & { readonly type: 'gossip' })
  /** Full state exchange (memberlist's push/pull), over TCP. */
  | (Base & {
      readonly type: 'pushPull';
      readonly reply: boolean;
      readonly state: readonly Update[];
    });

export type Channel = 'udp' | 'tcp';

/** A packet the runtime must send. `evidence`: send so that a closed port is reported back. */
export interface Send {
  readonly to: Address;
  readonly packet: Packet;
  readonly channel: Channel;
  readonly evidence: boolean;
}

/** One line per update, the canonical text form. */
export function describeUpdate(u: Update): string {
  switch (u.type) {
    case 'alive':
      return `alive ${u.name}@${u.addr} e${u.epoch} i${u.inc}`;
    case 'suspect':
    case 'dead':
      return `${u.type} ${u.name} e${u.epoch} i${u.inc} by ${u.from} (${u.reason}, silent ${Math.round(u.silentForMs)}ms)`;
    case 'left':
      return `left ${u.name} e${u.epoch} i${u.inc}`;
  }
}

export function describePacket(p: Packet): string {
  const head = `${p.type} from ${p.from.name}`;
  const tail = p.updates.length > 0 ? ` [${p.updates.map(describeUpdate).join('; ')}]` : '';
  switch (p.type) {
    case 'ping':
      return `${head} seq ${p.seq} to ${p.target}${tail}`;
    case 'ack':
    case 'nack':
      return `${head} seq ${p.seq}${tail}`;
    case 'pingReq':
      return `${head} seq ${p.seq} for ${p.target}${tail}`;
    case 'heartbeat':
      return `${head}${p.handoff ? ' handoff' : ''}${tail}`;
    case 'pushPull':
      return `${head}${p.reply ? ' reply' : ''} (${p.state.length} members)${tail}`;
    default:
      return `${head}${tail}`;
  }
}
