// The membership runtime's network edge: one UDP socket for the protocol, a TCP server on the same
// port for the fallback probe and the push/pull exchange, and connected UDP sockets for the sends
// the core marks as `evidence`, so that a closed port comes back as ECONNREFUSED (ICMP port
// unreachable) and reaches the core as evidence of death. Nothing here decides anything.

import dgram from 'node:dgram';
import net from 'node:net';
import type { Channel, Packet, Send } from '../core/detect/index.js';
import {
  decodePacket,
  encodePacket,
  frame,
  FrameReader,
  parseAddress,
  UDP_PACKET_BYTES_MAX,
} from './codec.js';
import { MembershipError } from './errors.js';

/** Connected UDP sockets kept for evidence sends (one per watched peer, plus a few confirmations). */
const EVIDENCE_SOCKETS_MAX = 8;
/** A TCP exchange that takes longer than this is abandoned. */
const TCP_TIMEOUT_MS = 5000;
/** TCP connections in flight at once (fallback probes and push/pull are rare). */
const TCP_INFLIGHT_MAX = 64;

interface EvidenceSocket {
  readonly sock: dgram.Socket;
  connected: boolean;
  readonly pending: Buffer[];
}

export interface TransportHandlers {
  onPacket(packet: Packet, channel: Channel): void;
  onRefused(addr: string): void;
  onError(err: Error): void;
}

export class UdpTcpTransport {
  private readonly udp: dgram.Socket;
  private readonly tcp: net.Server;
  private readonly evidence = new Map<string, EvidenceSocket>();
  private readonly inflight = new Set<net.Socket>();
  private closing = false;

  private constructor(
    private readonly host: string,
    readonly port: number,
    udp: dgram.Socket,
    tcp: net.Server,
    private readonly h: TransportHandlers,
  ) {
    this.udp = udp;
    this.tcp = tcp;
    udp.on('message', (msg) => this.deliver(msg, 'udp'));
    udp.on('error', (e) => h.onError(e));
    tcp.on('connection', (s) => this.accept(s));
    tcp.on('error', (e) => h.onError(e));
  }

  get address(): string {
    return `${this.host}:${this.port}`;
  }

  /** Bind UDP and TCP on `host:port` (port 0: any free port usable for both). */
  static async bind(host: string, port: number, h: TransportHandlers): Promise<UdpTcpTransport> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const tcp = net.createServer();
      try {
        const p = await listen(tcp, host, port);
        const udp = dgram.createSocket('udp4');
        try {
          await bindUdp(udp, host, p);
        } catch (e) {
          udp.close();
          tcp.close();
          if (port !== 0) throw e;
          continue; // The free TCP port is taken for UDP: try another.
        }
        return new UdpTcpTransport(host, p, udp, tcp, h);
      } catch (cause) {
        tcp.close();
        if (port !== 0 || attempt === 19) {
          throw new MembershipError('BIND_FAILED', `cannot bind ${host}:${port}`, { cause });
        }
      }
    }
    throw new MembershipError('BIND_FAILED', `cannot bind ${host}:${port}`);
  }

  send(s: Send): void {
    if (this.closing) return;
    const { host, port } = parseAddress(s.to);
    if (s.channel === 'tcp') {
      this.sendTcp(s.to, host, port, s.packet);
      return;
    }
    const bytes = encodePacket(s.packet);
    if (bytes.length > UDP_PACKET_BYTES_MAX) {
      this.h.onError(new MembershipError('BAD_PACKET', `packet of ${bytes.length} bytes not sent`));
      return;
    }
    if (s.evidence) {
      const e = this.evidenceSocket(s.to, host, port);
      if (e.connected) e.sock.send(bytes, () => undefined);
      else if (e.pending.length < 16) e.pending.push(bytes);
    } else {
      this.udp.send(bytes, port, host, () => undefined);
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const s of this.evidence.values()) s.sock.close();
    this.evidence.clear();
    for (const s of this.inflight) s.destroy();
    this.inflight.clear();
    await Promise.all([
      new Promise<void>((r) => this.udp.close(() => r())),
      new Promise<void>((r) => this.tcp.close(() => r())),
    ]);
  }

  private deliver(bytes: Uint8Array, channel: Channel): void {
    if (this.closing) return;
    let p: Packet;
    try {
      p = decodePacket(bytes);
    } catch {
      return; // Not ours or malformed: drop it, as a datagram would be.
    }
    this.h.onPacket(p, channel);
  }

  /** A connected UDP socket per evidence peer: the kernel reports its closed port to us. */
  private evidenceSocket(addr: string, host: string, port: number): EvidenceSocket {
    const have = this.evidence.get(addr);
    if (have !== undefined) return have;
    if (this.evidence.size >= EVIDENCE_SOCKETS_MAX) {
      const [oldest, e] = this.evidence.entries().next().value as [string, EvidenceSocket];
      this.evidence.delete(oldest);
      e.sock.close();
    }
    const sock = dgram.createSocket('udp4');
    const e: EvidenceSocket = { sock, connected: false, pending: [] };
    sock.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') this.h.onRefused(addr);
    });
    // Answers to what we send from here go to our main port: the packets name it as the sender.
    sock.bind(0, this.host, () =>
      sock.connect(port, host, () => {
        e.connected = true;
        for (const b of e.pending.splice(0)) sock.send(b, () => undefined);
      }),
    );
    this.evidence.set(addr, e);
    return e;
  }

  private sendTcp(addr: string, host: string, port: number, packet: Packet): void {
    if (this.inflight.size >= TCP_INFLIGHT_MAX) return;
    const sock = net.connect({ host, port });
    this.inflight.add(sock);
    sock.setTimeout(TCP_TIMEOUT_MS, () => sock.destroy());
    sock.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ECONNREFUSED') this.h.onRefused(addr);
    });
    sock.on('close', () => this.inflight.delete(sock));
    sock.on('connect', () => sock.end(frame(packet)));
    sock.resume();
  }

  private accept(sock: net.Socket): void {
    const reader = new FrameReader();
    sock.setTimeout(TCP_TIMEOUT_MS, () => sock.destroy());
    sock.on('data', (chunk: Buffer) => {
      try {
        for (const p of reader.push(chunk)) this.h.onPacket(p, 'tcp');
      } catch {
        sock.destroy();
      }
    });
    sock.on('error', () => undefined);
  }
}

function listen(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address();
      resolve(typeof a === 'object' && a !== null ? a.port : port);
    });
  });
}

function bindUdp(sock: dgram.Socket, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    sock.once('error', reject);
    sock.bind(port, host, () => {
      sock.off('error', reject);
      resolve();
    });
  });
}
