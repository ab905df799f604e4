// Ports on 127.0.0.1. Free ones are chosen by the OS: bind port 0, read the port, close. All the
// listeners of one call are held open together, so one call never returns the same port twice.
// Another process can still take a port between our close and the member's bind; startCluster
// sees "address already in use" in the member's log and tries again with fresh ports.
import { createSocket } from 'node:dgram';
import { createServer, type Server } from 'node:net';

const host = '127.0.0.1';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  return address.port;
}

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, host, () => socket.close(() => resolve(true)));
  });
}

export interface FreePortOptions {
  /** Also free for UDP (the membership protocol listens on both). */
  readonly udp?: boolean;
}

/** `count` distinct ports that were free on 127.0.0.1 a moment ago. */
export async function freePorts(count: number, options: FreePortOptions = {}): Promise<number[]> {
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    while (ports.length < count) {
      const server = await listen(0);
      // A port whose UDP side is taken stays held until the end, so it is not offered again.
      held.push(server);
      const port = portOf(server);
      if (options.udp !== true || (await udpFree(port))) ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map(close));
  }
}

/** Whether `port` on 127.0.0.1 can be listened on right now. */
export async function portFree(port: number): Promise<boolean> {
  try {
    await close(await listen(port));
    return true;
  } catch {
    return false;
  }
}
