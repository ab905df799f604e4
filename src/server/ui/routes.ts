// The dashboard on the HTTP/1.1 side of every client port (client-listener.ts hands it each
// request before the JSON gateway): the page and its assets under /ui/, the member's state as
// JSON (GET /ui/api/state, state.ts) and a Server-Sent Events stream of what happens
// (GET /ui/api/events, member-feed.ts; WHATWG HTML §9.2). The page refetches the state slowly and
// merges the events in between, so an open dashboard costs one small JSON every few seconds and
// the events themselves.
//
// Static files come from the package: the page from ui/ (beside proto/), and uPlot, the one
// chart library, from its own npm package, resolved at run time. Nothing from a CDN: members
// often run where browsers reach them but not the Internet.
//
// It is served wherever the gateway is, with the same TLS and client-certificate checks. It has
// no login: with auth enabled the key and queue names are hidden (state.ts HIDDEN).
import { existsSync, readFileSync } from 'node:fs';
import type * as http from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Member } from '../../replica/member/member.js';
import type { FeedEvent, MemberFeed } from './member-feed.js';
import { dashboardState, HIDDEN, type DashboardState } from './state.js';

/** A comment line on every event stream this often, in ms, so that proxies keep it open. */
export const SSE_HEARTBEAT_MS = 5000;
/** Bytes an event stream may have queued unsent before it is ended (the page reconnects). */
export const SSE_BUFFERED_BYTES_MAX = 256 * 1024;
/** The page's EventSource waits this long before reconnecting, in ms (the `retry` field). */
const SSE_RETRY_MS = 3000;
/** Answers of /ui/api/state are shared by requests this close together, in ms. */
export const STATE_CACHE_MS = 500;
/** Directory levels searched upwards for ui/ (dist/src/server/ui is four below the root). */
const ROOT_SEARCH_DEPTH_MAX = 8;

export interface DashboardOptions {
  readonly member: Member;
  readonly feed: MemberFeed;
  readonly heartbeatMs: number;
  readonly electionMs: number;
}

export interface Dashboard {
  /** Answer `req` if it is the dashboard's (a path under /ui); false leaves it to the gateway. */
  readonly handle: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
  /** End every event stream (before the client port closes). */
  readonly close: () => void;
}

interface Asset {
  readonly file: string;
  readonly type: string;
  /** Seconds a browser may keep it; 0: ask again every time (the page changes with tenure). */
  readonly maxAgeSeconds: number;
}

function uiDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < ROOT_SEARCH_DEPTH_MAX; i++) {
    const candidate = join(dir, 'ui');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

/** uPlot's files in its npm package (a dependency of tenure), or undefined if it is missing. */
function uplotFile(name: string): string | undefined {
  try {
    return createRequire(import.meta.url).resolve(`uplot/dist/${name}`);
  } catch {
    return undefined;
  }
}

function assets(): ReadonlyMap<string, Asset> {
  const out = new Map<string, Asset>();
  const dir = uiDir();
  if (dir !== undefined) {
    const page = (file: string, type: string): Asset => ({
      file: join(dir, file),
      type,
      maxAgeSeconds: 0,
    });
    out.set('/ui/', page('index.html', 'text/html; charset=utf-8'));
    out.set('/ui/app.js', page('app.js', 'text/javascript; charset=utf-8'));
    out.set('/ui/style.css', page('style.css', 'text/css; charset=utf-8'));
  }
  const js = uplotFile('uPlot.iife.min.js');
  const css = uplotFile('uPlot.min.css');
  const day = 24 * 3600;
  if (js !== undefined)
    out.set('/ui/vendor/uPlot.iife.min.js', {
      file: js,
      type: 'text/javascript; charset=utf-8',
      maxAgeSeconds: day,
    });
  if (css !== undefined)
    out.set('/ui/vendor/uPlot.min.css', {
      file: css,
      type: 'text/css; charset=utf-8',
      maxAgeSeconds: day,
    });
  return out;
}

/** Only our own files, scripts and same-origin requests: the page needs nothing else. */
const PAGE_SECURITY = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

function send(
  res: http.ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Readonly<Record<string, string>> = {},
): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    ...PAGE_SECURITY,
    ...extra,
  });
  res.end(body);
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  send(res, status, 'application/json', JSON.stringify(body), { 'cache-control': 'no-store' });
}

/** An event as the stream sends it: lock names hidden while auth is on. */
function streamed(e: FeedEvent, hide: boolean): FeedEvent {
  return e.type === 'lock' && hide ? { ...e, name: HIDDEN, key: HIDDEN } : e;
}

export function createDashboard(options: DashboardOptions): Dashboard {
  const { member, feed } = options;
  const files = assets();
  const cache = new Map<string, Buffer>();
  const streams = new Set<http.ServerResponse>();
  let state: { at: number; value: Promise<DashboardState> } | undefined;

  const stateNow = (): Promise<DashboardState> => {
    const now = Date.now();
    if (state === undefined || now - state.at >= STATE_CACHE_MS) {
      state = {
        at: now,
        value: dashboardState(member, feed, {
          heartbeatMs: options.heartbeatMs,
          electionMs: options.electionMs,
        }),
      };
    }
    return state.value;
  };

  const serveAsset = (res: http.ServerResponse, asset: Asset, head: boolean): void => {
    let body = cache.get(asset.file);
    if (body === undefined) {
      try {
        body = readFileSync(asset.file);
      } catch {
        return send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
      }
      cache.set(asset.file, body);
    }
    const cacheControl = asset.maxAgeSeconds > 0 ? `max-age=${asset.maxAgeSeconds}` : 'no-cache';
    if (!head) return send(res, 200, asset.type, body, { 'cache-control': cacheControl });
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': body.length,
      'cache-control': cacheControl,
      ...PAGE_SECURITY,
    });
    res.end();
  };

  const serveEvents = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const write = (text: string): void => {
      if (res.writableEnded) return;
      res.write(text);
      // A reader that stopped reading: end its stream rather than queue without bound.
      if (res.writableLength > SSE_BUFFERED_BYTES_MAX) res.end();
    };
    const unsubscribe = feed.subscribe((e) =>
      write(
        `event: ${e.type}\ndata: ${JSON.stringify(streamed(e, member.machine.auth.enabled))}\n\n`,
      ),
    );
    if (unsubscribe === undefined)
      return sendJson(res, 503, { error: 'too many dashboard event streams on this member' });
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    streams.add(res);
    write(`retry: ${SSE_RETRY_MS}\n\n`);
    const hello = { id: member.memberId.toString(16), name: member.name, at: Date.now() };
    write(`event: hello\ndata: ${JSON.stringify(hello)}\n\n`);
    const heartbeat = setInterval(() => write(`: keep-alive ${Date.now()}\n\n`), SSE_HEARTBEAT_MS);
    const end = (): void => {
      clearInterval(heartbeat);
      unsubscribe();
      streams.delete(res);
    };
    res.on('close', end);
    req.on('close', end);
  };

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const path = new URL(req.url ?? '/', 'http://member').pathname;
    if (path !== '/ui' && !path.startsWith('/ui/')) return false;
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { allow: 'GET, HEAD' });
      return true;
    }
    if (path === '/ui') {
      res.writeHead(308, { location: '/ui/', 'content-length': 0 });
      res.end();
      return true;
    }
    if (path === '/ui/api/state') {
      stateNow().then(
        (s) => sendJson(res, 200, s),
        (e: unknown) => sendJson(res, 500, { error: e instanceof Error ? e.message : String(e) }),
      );
      return true;
    }
    if (path === '/ui/api/events') {
      serveEvents(req, res);
      return true;
    }
    const asset = files.get(path);
    if (asset === undefined) send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
    else serveAsset(res, asset, head);
    return true;
  };

  return {
    handle,
    close: () => {
      for (const res of [...streams]) res.end();
      streams.clear();
    },
  };
}
