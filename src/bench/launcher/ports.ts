// Free TCP ports on 127.0.0.1, chosen by the OS: bind port 0, read the port, close. All the
// listeners of one call are held open together, so one call never returns the same port twice.
// Another process can still take a port between our close and the member's bind; the cluster
// launchers (this one and the tests' test/cluster/cluster.ts) detect "address already in use"
// and retry with fresh ports.
import { createServer, type Server } from 'node:net';

function listenEphemeral(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** `count` distinct ports that were free on 127.0.0.1 a moment ago. */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) servers.push(await listenEphemeral());
    return servers.map((s) => {
      const address = s.address();
      if (address === null || typeof address === 'string') throw new Error('no TCP address');
      return address.port;
    });
  } finally {
    await Promise.all(servers.map(close));
  }
}
