// etcd's --listen-metrics-urls: more URLs that answer GET /metrics and GET /health only (etcd 3.4
// embed/etcd.go serveMetrics), so Prometheus and health checks can reach a member without
// reaching its client API. An https:// URL is served with the client TLS files (--cert-file,
// --key-file and, with them, a verified client certificate), as etcd does.
import * as http from 'node:http';
import * as https from 'node:https';
import type { Server } from 'node:net';
import type { KvBackend } from '../../replica/member/backend.js';
import type { MetricsText } from '../api/api-metrics.js';
import { clientTlsServerOptions, TlsConfigError, type ClientTlsFiles } from '../api/client-tls.js';
import { parseClientUrl } from '../api/client-listener.js';
import type { Logger } from '../api/log.js';

export interface MetricsListenerOptions {
  readonly urls: readonly string[];
  readonly backend: Pick<KvBackend, 'hasLeader'>;
  readonly metrics: { scrape(): Promise<MetricsText> };
  readonly tls?: ClientTlsFiles;
  readonly log: Logger;
}

export interface MetricsListener {
  /** The bound port of each URL, in order (port 0 becomes the chosen one). */
  readonly ports: readonly number[];
  close(): Promise<void>;
}

/** etcd's /health body: healthy while this member knows a leader (etcdserver/api/etcdhttp). */
export function healthAnswer(backend: Pick<KvBackend, 'hasLeader'>): {
  readonly status: number;
  readonly body: string;
} {
  const ok = backend.hasLeader();
  return { status: ok ? 200 : 503, body: JSON.stringify({ health: ok ? 'true' : 'false' }) };
}

export async function startMetricsListener(opts: MetricsListenerOptions): Promise<MetricsListener> {
  const handler: http.RequestListener = (req, res) => {
    const path = new URL(req.url ?? '/', 'http://metrics').pathname;
    if (req.method === 'GET' && path === '/metrics') {
      opts.metrics.scrape().then(
        (m) => {
          res.writeHead(200, { 'content-type': m.contentType });
          res.end(m.body);
        },
        (err: unknown) => {
          opts.log.error({ err }, 'metrics: scrape failed');
          res.writeHead(500).end();
        },
      );
      return;
    }
    if (req.method === 'GET' && path === '/health') {
      const h = healthAnswer(opts.backend);
      res.writeHead(h.status, { 'content-type': 'application/json' });
      res.end(h.body);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('404 page not found\n');
  };
  const addresses = opts.urls.map(parseClientUrl);
  if (addresses.some((a) => a.secure) && opts.tls === undefined)
    throw new TlsConfigError('an https:// --listen-metrics-urls needs --cert-file and --key-file');
  const tlsOptions = opts.tls === undefined ? undefined : clientTlsServerOptions(opts.tls);
  const servers: Server[] = [];
  const ports: number[] = [];
  try {
    for (const [i, a] of addresses.entries()) {
      const server = a.secure
        ? https.createServer({ ...tlsOptions, ALPNProtocols: ['http/1.1'] }, handler)
        : http.createServer(handler);
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(a.port, a.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const bound = server.address();
      ports.push(typeof bound === 'object' && bound !== null ? bound.port : a.port);
      server.on('error', (err: Error) =>
        opts.log.error({ err, url: opts.urls[i] }, 'metrics: listener error'),
      );
      opts.log.info({ url: opts.urls[i], port: ports[i] }, 'metrics listening');
    }
  } catch (e) {
    for (const s of servers) s.close();
    throw e;
  }
  return {
    ports,
    close: async () => {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              (s as http.Server).closeAllConnections();
            }),
        ),
      );
    },
  };
}
