// A TCP relay on 127.0.0.1 (OS-chosen port) in front of one server, that a test can cut and heal:
// a partition of one client alone, while the server goes on. Cut: every relayed connection is
// destroyed and new ones are refused until heal. Nothing here outlives close().
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class TcpGate {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #cut = false;
  #port = 0;

  private constructor(targetHost: string, targetPort: number) {
    this.#server = createServer((client) => {
      if (this.#cut) {
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
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  /** A gate in front of `target` (`host:port` or `http://host:port`), listening. */
  static async open(target: string): Promise<TcpGate> {
    const hostPort = target.replace(/^https?:\/\//, '');
    const at = hostPort.lastIndexOf(':');
    const gate = new TcpGate(hostPort.slice(0, at), Number(hostPort.slice(at + 1)));
    await new Promise<void>((resolve, reject) => {
      gate.#server.once('error', reject);
      gate.#server.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = gate.#server.address();
    gate.#port = typeof addr === 'object' && addr !== null ? addr.port : 0;
    return gate;
  }

  /** The gate's endpoint, for a client. */
  get endpoint(): string {
    return `127.0.0.1:${this.#port}`;
  }

  /** Destroy every relayed connection and refuse new ones. */
  cut(): void {
    this.#cut = true;
    for (const s of this.#sockets) s.destroy();
  }

  heal(): void {
    this.#cut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
