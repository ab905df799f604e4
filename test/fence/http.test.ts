// The HTTP adapters (node:http, Express, Fastify) against the contract suite — the fence behind
// each is in memory, reached only over HTTP with fencedFetch — plus the HTTP specifics: 400 for a
// missing or malformed header (or let through when allowed), 409 with both tokens both from the
// early check and from a write that loses a race, and the client helpers. Every server listens on
// 127.0.0.1:0 and is closed by its test.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import {
  InvalidTokenError,
  MemoryFence,
  StaleTokenError,
  fencedFetch,
  fencingScopeHeader,
  fencingTokenHeader,
  httpFencing,
  withFencingToken,
  type FencedRequest,
  type FencingErrorBody,
  type HttpFencing,
  type HttpFencingOptions,
  type MemoryFenceTx,
} from '../../src/fence/index.js';
import { fenceContract, tokenCounter, type ContractSubject } from './contract-suite.js';

type Kind = 'node' | 'express' | 'fastify';
const kinds: readonly Kind[] = ['node', 'express', 'fastify'];

interface App {
  readonly url: string;
  readonly fence: MemoryFence;
  readonly logs: Map<string, string[]>;
  readonly fencing: HttpFencing<MemoryFenceTx>;
  readonly close: () => Promise<void>;
}

/**
 * POST /append appends the text body to the scope's log through the request's fenced write. An
 * `x-bump` header first makes the fence accept that (higher) token directly, as if another writer
 * won the race between the middleware's check and this handler's write.
 */
async function handle(
  app: Pick<App, 'fence' | 'logs'>,
  f: FencedRequest<MemoryFenceTx> | undefined,
  headers: IncomingMessage['headers'],
  body: string,
): Promise<string> {
  if (f === undefined) return 'unfenced';
  const bump = headers['x-bump'];
  if (typeof bump === 'string') await app.fence.write(f.scope, BigInt(bump), () => undefined);
  await f.write(async () => {
    await yieldTurn();
    app.logs.set(f.scope, [...(app.logs.get(f.scope) ?? []), body]);
  });
  return 'ok';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

async function startApp(
  kind: Kind,
  options: Omit<HttpFencingOptions<MemoryFenceTx>, 'fence'> = {},
): Promise<App> {
  const fence = new MemoryFence();
  const logs = new Map<string, string[]>();
  const fencing = httpFencing({ ...options, fence });
  const state = { fence, logs };
  switch (kind) {
    case 'node': {
      const server = createServer(
        fencing.node(async (req, res, f) => {
          const out = await handle(state, f, req.headers, await readBody(req));
          res.end(out);
        }),
      );
      const url = await listen(server);
      return { url, fence, logs, fencing, close: () => closeServer(server) };
    }
    case 'express': {
      const app = express();
      app.use(express.text());
      app.use(fencing.express);
      app.post('/append', async (req, res) => {
        res.send(
          await handle(
            state,
            fencing.of(req),
            req.headers,
            typeof req.body === 'string' ? req.body : '',
          ),
        );
      });
      app.use(fencing.expressErrors);
      const server = createServer(app);
      const url = await listen(server);
      return { url, fence, logs, fencing, close: () => closeServer(server) };
    }
    case 'fastify': {
      const app = Fastify();
      app.addHook('preHandler', fencing.fastify);
      app.setErrorHandler(fencing.fastifyErrors);
      app.post('/append', async (request) =>
        handle(
          state,
          fencing.of(request),
          request.headers,
          typeof request.body === 'string' ? request.body : '',
        ),
      );
      const url = await app.listen({ host: '127.0.0.1', port: 0 });
      return { url, fence, logs, fencing, close: () => app.close() };
    }
  }
}

/** Turn the service's JSON refusal back into the error the fence raised. */
async function raise(res: Response): Promise<never> {
  const body = (await res.json()) as FencingErrorBody;
  if (res.status === 409) {
    throw new StaleTokenError(
      body.scope ?? '',
      BigInt(body.presented ?? ''),
      BigInt(body.current ?? ''),
    );
  }
  if (res.status === 400) throw new InvalidTokenError(body.message);
  throw new Error(`HTTP ${res.status}: ${JSON.stringify(body)}`);
}

async function httpSubject(kind: Kind): Promise<ContractSubject> {
  const app = await startApp(kind);
  return {
    issue: tokenCounter(),
    append: async (scope, token, value) => {
      const post = fencedFetch(token, { scope });
      const res = await post(`${app.url}/append`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: value,
      });
      if (!res.ok) await raise(res);
      await res.text();
    },
    log: (scope) => Promise.resolve(app.logs.get(scope) ?? []),
    current: (scope) => app.fence.current(scope),
    close: () => app.close(),
  };
}

for (const kind of kinds) fenceContract(`http (${kind})`, () => httpSubject(kind));

for (const kind of kinds) {
  describe(`http fencing (${kind})`, () => {
    const apps: App[] = [];
    after(async () => {
      await Promise.all(apps.map((a) => a.close()));
    });
    const start = async (options: Omit<HttpFencingOptions<MemoryFenceTx>, 'fence'> = {}) => {
      const app = await startApp(kind, options);
      apps.push(app);
      return app;
    };
    const post = (app: App, headers: Record<string, string>): Promise<Response> =>
      fetch(`${app.url}/append`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body: 'x',
      });

    test('a missing header is a 400 with a clear message; malformed ones too', async () => {
      const app = await start({ scope: 'orders' });
      const missing = await post(app, {});
      assert.equal(missing.status, 400);
      const body = (await missing.json()) as FencingErrorBody;
      assert.equal(body.error, 'missing_fencing_token');
      assert.match(body.message, /Fencing-Token header is required/);
      for (const bad of ['-3', 'abc', '1.5', '99999999999999999999', '']) {
        const res = await post(app, { [fencingTokenHeader]: bad });
        assert.equal(res.status, 400, bad);
        assert.equal(((await res.json()) as FencingErrorBody).error, 'invalid_fencing_token');
      }
      assert.deepEqual(app.logs.get('orders'), undefined);
    });

    test('a scope header is required when configuration does not fix one', async () => {
      const app = await start();
      const res = await post(app, { [fencingTokenHeader]: '5' });
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as FencingErrorBody).message, /Fencing-Scope/);
    });

    test('allowMissingToken lets unfenced requests through', async () => {
      const app = await start({ scope: 'orders', allowMissingToken: true });
      const res = await post(app, {});
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'unfenced');
      const bad = await post(app, { [fencingTokenHeader]: 'nope' });
      assert.equal(bad.status, 400);
      await bad.text();
    });

    test('a stale token is a 409 carrying both tokens, before the handler runs', async () => {
      const app = await start({ scope: 'orders' });
      assert.equal((await post(app, { [fencingTokenHeader]: '7' })).status, 200);
      const res = await post(app, { [fencingTokenHeader]: '6' });
      assert.equal(res.status, 409);
      assert.deepEqual(await res.json(), {
        error: 'stale_fencing_token',
        code: 'FENCE_STALE_TOKEN',
        message: 'fence "orders": token 6 is stale (current 7)',
        scope: 'orders',
        presented: '6',
        current: '7',
      });
      assert.deepEqual(app.logs.get('orders'), ['x']);
    });

    test('a write that loses the race after the early check is also a 409', async () => {
      const app = await start({ scope: 'orders' });
      const res = await post(app, { [fencingTokenHeader]: '3', 'x-bump': '4' });
      assert.equal(res.status, 409);
      const body = (await res.json()) as FencingErrorBody;
      assert.equal(body.presented, '3');
      assert.equal(body.current, '4');
      assert.equal(app.logs.get('orders'), undefined);
    });
  });
}

describe('client helpers', () => {
  test('withFencingToken sets the headers and keeps the others', () => {
    const init = withFencingToken({ method: 'PUT', headers: { 'x-other': '1' } }, 42n, 'jobs');
    const h = new Headers(init.headers);
    assert.equal(init.method, 'PUT');
    assert.equal(h.get(fencingTokenHeader), '42');
    assert.equal(h.get(fencingScopeHeader), 'jobs');
    assert.equal(h.get('x-other'), '1');
  });

  test('fencedFetch stamps every request through the given fetch', async () => {
    const seen: string[] = [];
    const fake: typeof fetch = (_input, init) => {
      seen.push(new Headers(init?.headers).get(fencingTokenHeader) ?? '');
      return Promise.resolve(new Response('ok'));
    };
    const f = fencedFetch(9n, { fetch: fake });
    await f('http://example.invalid/a');
    await f('http://example.invalid/b', { headers: { [fencingTokenHeader]: '1' } });
    assert.deepEqual(seen, ['9', '9']);
  });
});
