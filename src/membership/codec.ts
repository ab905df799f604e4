// The wire form of SWIM packets: one JSON document per UDP datagram, and the same document behind
// a 4-byte big-endian length on TCP. Decoding validates the shape, so a stray or hostile datagram
// is dropped instead of reaching the protocol core.

import type { Packet, Sender, Update } from '../core/detect/index.js';
import { MembershipError } from './errors.js';

/** Largest packet we send or accept over UDP; loopback and most LANs carry it unfragmented. */
export const UDP_PACKET_BYTES_MAX = 64_000;
/** Largest framed TCP message (a full push/pull state of a large cluster). */
export const TCP_FRAME_BYTES_MAX = 8_000_000;

const PACKET_TYPES = new Set([
  'ping',
  'ack',
  'nack',
  'pingReq',
  'heartbeat',
  'release',
  'gossip',
  'pushPull',
]);
const UPDATE_TYPES = new Set(['alive', 'suspect', 'dead', 'left']);

export function encodePacket(p: Packet): Buffer {
  return Buffer.from(JSON.stringify(p), 'utf8');
}

export function frame(p: Packet): Buffer {
  const body = encodePacket(p);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function str(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0 && x.length <= 512;
}

function num(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

function isSender(x: unknown): x is Sender {
  return isRecord(x) && str(x['name']) && str(x['addr']) && num(x['epoch']) && num(x['inc']);
}

function isUpdate(x: unknown): x is Update {
  if (!isRecord(x) || !UPDATE_TYPES.has(x['type'] as string)) return false;
  if (!(str(x['name']) && num(x['epoch']) && num(x['inc']))) return false;
  if (x['type'] === 'alive') return str(x['addr']);
  if (x['type'] === 'suspect' || x['type'] === 'dead') {
    return (
      str(x['from']) &&
      num(x['silentForMs']) &&
      (x['reason'] === 'timeout' || x['reason'] === 'evidence')
    );
  }
  return true;
}

/** Parse and validate a packet; throws MembershipError('BAD_PACKET') on anything malformed. */
export function decodePacket(bytes: Uint8Array): Packet {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (cause) {
    throw new MembershipError('BAD_PACKET', 'packet is not JSON', { cause });
  }
  if (!isRecord(v) || !PACKET_TYPES.has(v['type'] as string)) {
    throw new MembershipError('BAD_PACKET', 'unknown packet type');
  }
  if (!isSender(v['from'])) throw new MembershipError('BAD_PACKET', 'bad sender');
  const updates = v['updates'];
  if (!Array.isArray(updates) || !updates.every(isUpdate)) {
    throw new MembershipError('BAD_PACKET', 'bad updates');
  }
  switch (v['type']) {
    case 'ping':
      if (!(num(v['seq']) && str(v['target']))) throw new MembershipError('BAD_PACKET', 'bad ping');
      break;
    case 'ack':
      if (!(num(v['seq']) && (v['watcher'] === null || str(v['watcher'])))) {
        throw new MembershipError('BAD_PACKET', 'bad ack');
      }
      break;
    case 'nack':
      if (!num(v['seq'])) throw new MembershipError('BAD_PACKET', 'bad nack');
      break;
    case 'pingReq':
      if (!(num(v['seq']) && str(v['target']) && str(v['targetAddr']))) {
        throw new MembershipError('BAD_PACKET', 'bad pingReq');
      }
      break;
    case 'heartbeat':
      if (typeof v['handoff'] !== 'boolean')
        throw new MembershipError('BAD_PACKET', 'bad heartbeat');
      break;
    case 'pushPull': {
      const state = v['state'];
      if (typeof v['reply'] !== 'boolean' || !Array.isArray(state) || !state.every(isUpdate)) {
        throw new MembershipError('BAD_PACKET', 'bad pushPull');
      }
      break;
    }
    default:
      break;
  }
  return v as unknown as Packet;
}

/** Splits a TCP byte stream into frames. */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Packet[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Packet[] = [];
    while (this.buf.length >= 4) {
      const len = this.buf.readUInt32BE(0);
      if (len > TCP_FRAME_BYTES_MAX)
        throw new MembershipError('BAD_PACKET', `frame of ${len} bytes`);
      if (this.buf.length < 4 + len) break;
      out.push(decodePacket(this.buf.subarray(4, 4 + len)));
      this.buf = this.buf.subarray(4 + len);
    }
    return out;
  }
}

/** "host:port" → parts; IPv4 and names only (the runtime binds IPv4). */
export function parseAddress(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(':');
  const port = Number(addr.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new MembershipError('BAD_CONFIG', `bad address ${JSON.stringify(addr)} (want host:port)`);
  }
  return { host: addr.slice(0, i), port };
}
