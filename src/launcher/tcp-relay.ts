// A TCP relay on 127.0.0.1 (OS-chosen port) in front of one server: a link that a demo or a test
// can break for one client alone while the server goes on, in either of the two ways a network
// fails. `drop()` is a silent partition: bytes in both directions are dropped, no RST, no FIN,
// so the client's requests simply get no answer (Kleppmann 2016, "Bad things happen": Redlock's
// client reaching only three of five nodes). `reset()` is a loud one: every relayed connection is
// destroyed and new ones are refused, so the client sees errors and reconnects. `heal()` ends
// either. Nothing here outlives close().
import { createConnection, createServer, type Server, type Socket } from 'node:net';

type Fault = 'none' | 'drop' | 'reset';

export class TcpRelay {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #fault: Fault = 'none';
  #port = 0;

  private constructor(targetHost: string, targetPort: number) {
    this.#server = createServer((client) => {
      if (this.#fault === 'reset') {
        client.destroy();
        return;
      }
      const upstream = createConnection({ host: targetHost, port: targetPort });
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on('close', () => this.#sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.on('data', (b: Buffer) => {
        if (this.#fault === 'none') upstream.write(b);
      });
      upstream.on('data', (b: Buffer) => {
        if (this.#fault === 'none') client.write(b);
      });
    });
  }

  /** A relay in front of `target` (`host:port` or `http://host:port`), listening. */
  static async open(target: string): Promise<TcpRelay> {
    const hostPort = target.replace(/^https?:\/\//, '');
    const at = hostPort.lastIndexOf(':');
    const relay = new TcpRelay(hostPort.slice(0, at), Number(hostPort.slice(at + 1)));
    await new Promise<void>((resolve, reject) => {
      relay.#server.once('error', reject);
      relay.#server.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = relay.#server.address();
    if (addr === null || typeof addr === 'string') throw new Error('tcp relay has no port');
    relay.#port = addr.port;
    return relay;
  }

  get port(): number {
    return this.#port;
  }

  /** The relay's endpoint, for a client. */
  get endpoint(): string {
    return `127.0.0.1:${this.#port}`;
  }

  /** Silent partition: drop every byte from now on, both ways; connections stay open. */
  drop(): void {
    this.#fault = 'drop';
  }

  /** Loud partition: destroy every relayed connection and refuse new ones. */
  reset(): void {
    this.#fault = 'reset';
    for (const s of this.#sockets) s.destroy();
  }

  heal(): void {
    this.#fault = 'none';
  }

  async close(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
