// A TCP relay between one client and one Redis server that the demo can cut: once cut, bytes in
// either direction are dropped, as on a partitioned network link (no RST, no FIN: the client's
// commands simply get no answer). Redlock's critics' first example is exactly this: client A
// reaches three of five nodes, the other two are behind a partition (Kleppmann 2016, "Bad things
// happen"), so A's lock lives on a bare majority.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class LinkCut {
  readonly port: number;
  readonly #server: Server;
  readonly #sockets: Set<Socket>;
  readonly #state: { cut: boolean };

  private constructor(port: number, server: Server, sockets: Set<Socket>, state: { cut: boolean }) {
    this.port = port;
    this.#server = server;
    this.#sockets = sockets;
    this.#state = state;
  }

  /** A relay on a free 127.0.0.1 port to the server at `targetPort`. */
  static async open(targetPort: number): Promise<LinkCut> {
    const sockets = new Set<Socket>();
    const state = { cut: false };
    const server = createServer((inbound) => {
      const outbound = createConnection({ host: '127.0.0.1', port: targetPort });
      for (const s of [inbound, outbound]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => {
          inbound.destroy();
          outbound.destroy();
        });
      }
      inbound.on('data', (b: Buffer) => {
        if (!state.cut) outbound.write(b);
      });
      outbound.on('data', (b: Buffer) => {
        if (!state.cut) inbound.write(b);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('relay has no port');
    return new LinkCut(address.port, server, sockets, state);
  }

  get cut(): boolean {
    return this.#state.cut;
  }

  /** Drop every byte from now on, both ways. */
  sever(): void {
    this.#state.cut = true;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
