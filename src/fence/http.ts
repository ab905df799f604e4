// HTTP fencing: a service that changes state on request checks the caller's fencing token, so a
// deposed leader's late requests are refused at the service (and a client helper stamps the token
// on outgoing requests).
//
//   const fencing = httpFencing({ fence: new MemoryFence(), scope: 'orders' });
//   http.createServer(fencing.node(async (req, res, f) => { await f?.write(() => apply()); … }));
//   app.use(fencing.express); …; app.use(fencing.expressErrors);            // Express
//   app.addHook('preHandler', fencing.fastify); app.setErrorHandler(fencing.fastifyErrors); // Fastify
//   await fencedFetch(token)('http://svc/orders', { method: 'POST', body });   // the client side
//
// The middleware parses `Fencing-Token` (400 if missing or malformed, unless allowed), refuses a
// token below the scope's mark at once (409, both tokens in the JSON body), and hands the handler
// a FencedRequest whose `write` is the fence's atomic check-and-effect. The early refusal is only
// a courtesy: between it and the handler's write a higher token may be accepted, so the state
// change itself must go through `write`, whose StaleTokenError the error handlers turn into the
// same 409. Bigints travel as decimal strings in JSON.
//
// No framework is imported, not even for types: the adapters are written against the shapes of
// node:http, Express and Fastify objects, so `tenure/fence` loads without either installed.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { admits, checkScope, parseToken, type Fence } from './contract.js';
import { FenceError, StaleTokenError } from './errors.js';

/** The request header that carries the token (HTTP header names are case-insensitive). */
export const fencingTokenHeader = 'Fencing-Token';
/** The request header that carries the scope, when the scope is not fixed by configuration. */
export const fencingScopeHeader = 'Fencing-Scope';

export interface HttpFencingOptions<Tx> {
  /** The resource's fence; its `write` is what handlers call. */
  readonly fence: Fence<Tx>;
  /**
   * The scope of every request (a fixed name), or a function of the request. Absent: the
   * `Fencing-Scope` header names it — only for trusted callers, since a client that chooses its
   * scope can choose one nobody fenced.
   */
  readonly scope?: string | ((headers: IncomingHttpHeaders) => string);
  /**
   * Let requests without a `Fencing-Token` header through, unfenced (`of(req)` is undefined).
   * Default false: a missing header is a 400, because a writer that forgot the token is exactly
   * the bug fencing exists to catch. A header that is present but malformed is always a 400.
   */
  readonly allowMissingToken?: boolean;
}

/** What a handler of an admitted request gets. */
export interface FencedRequest<Tx> {
  readonly scope: string;
  readonly token: bigint;
  /** The fence's atomic check-and-effect for this request's scope and token. */
  write<T>(effect: (tx: Tx) => Promise<T> | T): Promise<T>;
}

/** The JSON body of a 400 or 409. */
export interface FencingErrorBody {
  readonly error: 'missing_fencing_token' | 'invalid_fencing_token' | 'stale_fencing_token';
  readonly code: string;
  readonly message: string;
  readonly scope?: string;
  /** Decimal strings (JSON has no bigint). */
  readonly presented?: string;
  readonly current?: string;
}

export type FencingDecision<Tx> =
  | { readonly kind: 'fenced'; readonly fencing: FencedRequest<Tx> }
  | { readonly kind: 'unfenced' }
  | { readonly kind: 'reject'; readonly status: 400 | 409; readonly body: FencingErrorBody };

/** The part of a Fastify reply the hook uses. */
export interface FastifyReplyLike {
  code(statusCode: number): FastifyReplyLike;
  header(key: string, value: string): FastifyReplyLike;
  send(payload?: unknown): FastifyReplyLike;
  readonly sent: boolean;
}

type NodeHandler<Tx> = (
  req: IncomingMessage,
  res: ServerResponse,
  fencing: FencedRequest<Tx> | undefined,
) => Promise<void> | void;

/** The adapters for one fence. Every member is a plain function, safe to pass around detached. */
export interface HttpFencing<Tx> {
  /** Parse and pre-check one request's headers (the framework-neutral core of the adapters). */
  readonly decide: (headers: IncomingHttpHeaders) => Promise<FencingDecision<Tx>>;
  /** The FencedRequest the middleware attached to `req`, or undefined for an unfenced one. */
  readonly of: (req: object) => FencedRequest<Tx> | undefined;
  /** node:http: wrap a handler; rejections and StaleTokenError from `write` become responses. */
  readonly node: (handler: NodeHandler<Tx>) => (req: IncomingMessage, res: ServerResponse) => void;
  /** Express middleware (`app.use`). */
  readonly express: (
    req: IncomingMessage,
    res: ServerResponse,
    next: (err?: unknown) => void,
  ) => void;
  /** Express error middleware (`app.use` after the routes): StaleTokenError → 409. */
  readonly expressErrors: (
    err: unknown,
    req: IncomingMessage,
    res: ServerResponse,
    next: (err?: unknown) => void,
  ) => void;
  /** Fastify `preHandler` hook (`app.addHook('preHandler', …)`). */
  readonly fastify: (
    request: { readonly headers: IncomingHttpHeaders },
    reply: FastifyReplyLike,
  ) => Promise<unknown>;
  /** Fastify error handler (`setErrorHandler`): StaleTokenError → 409, anything else rethrown. */
  readonly fastifyErrors: (
    err: unknown,
    request: unknown,
    reply: FastifyReplyLike,
  ) => FastifyReplyLike;
}

/** Build the HTTP adapters for one fence. */
export function httpFencing<Tx>(options: HttpFencingOptions<Tx>): HttpFencing<Tx> {
  const attached = new WeakMap<object, FencedRequest<Tx>>();

  const decide = async (headers: IncomingHttpHeaders): Promise<FencingDecision<Tx>> => {
    const raw = single(headers[fencingTokenHeader.toLowerCase()]);
    if (raw === undefined) {
      if (options.allowMissingToken === true) return { kind: 'unfenced' };
      return badRequest('missing_fencing_token', `the ${fencingTokenHeader} header is required`);
    }
    let token: bigint;
    let scope: string;
    try {
      token = parseToken(raw.trim());
      scope = scopeOf(options, headers);
      checkScope(scope);
    } catch (e) {
      if (!(e instanceof FenceError)) throw e;
      return badRequest('invalid_fencing_token', e.message, e.code);
    }
    const mark = await options.fence.current(scope);
    if (!admits(mark, token)) {
      return {
        kind: 'reject',
        status: 409,
        body: staleBody(new StaleTokenError(scope, token, mark ?? 0n)),
      };
    }
    const fence = options.fence;
    return {
      kind: 'fenced',
      fencing: { scope, token, write: (effect) => fence.write(scope, token, effect) },
    };
  };

  /** Run the decision for `req`: attach or reject; true if the handler may go on. */
  const admit = async (
    req: object,
    headers: IncomingHttpHeaders,
    reject: (status: number, body: FencingErrorBody) => void,
  ): Promise<boolean> => {
    const d = await decide(headers);
    if (d.kind === 'reject') {
      reject(d.status, d.body);
      return false;
    }
    if (d.kind === 'fenced') attached.set(req, d.fencing);
    return true;
  };

  return {
    decide,
    of: (req) => attached.get(req),
    node: (handler) => (req, res) => {
      const run = async (): Promise<void> => {
        if (!(await admit(req, req.headers, (s, b) => sendJson(res, s, b)))) return;
        await handler(req, res, attached.get(req));
      };
      run().catch((err: unknown) => {
        if (err instanceof StaleTokenError) return sendJson(res, 409, staleBody(err));
        // Nothing else of ours can reach here; the caller's handler failed. Answer 500 without
        // details (they may be private), or cut the response if it had started.
        if (!res.headersSent) sendJson(res, 500, { error: 'internal_error' });
        else res.destroy();
      });
    },
    express: (req, res, next) => {
      admit(req, req.headers, (s, b) => sendJson(res, s, b)).then(
        (go) => (go ? next() : undefined),
        (err: unknown) => next(err),
      );
    },
    // Express recognises error middleware by its four parameters; keep all four.
    expressErrors: (err, _req, res, next) => {
      if (err instanceof StaleTokenError && !res.headersSent) sendJson(res, 409, staleBody(err));
      else next(err);
    },
    fastify: async (request, reply) => {
      const go = await admit(request, request.headers, (s, b) => {
        reply.code(s).header('content-type', 'application/json').send(JSON.stringify(b));
      });
      // An async hook that has replied returns the reply, which stops the hook chain.
      return go ? undefined : reply;
    },
    fastifyErrors: (err, _request, reply) => {
      if (err instanceof StaleTokenError) {
        return reply
          .code(409)
          .header('content-type', 'application/json')
          .send(JSON.stringify(staleBody(err)));
      }
      throw err;
    },
  };
}

/** The 409 body for a StaleTokenError. */
export function staleBody(err: StaleTokenError): FencingErrorBody {
  return {
    error: 'stale_fencing_token',
    code: err.code,
    message: err.message,
    scope: err.scope,
    presented: err.presented.toString(),
    current: err.current.toString(),
  };
}

/** `init` with the token (and scope, if given) headers set; other headers are kept. */
export function withFencingToken(init: RequestInit, token: bigint, scope?: string): RequestInit {
  const headers = new Headers(init.headers);
  headers.set(fencingTokenHeader, token.toString());
  if (scope !== undefined) headers.set(fencingScopeHeader, scope);
  return { ...init, headers };
}

/** A fetch that stamps every request with `token` (and `scope`). */
export function fencedFetch(
  token: bigint,
  options: { readonly scope?: string; readonly fetch?: typeof fetch } = {},
): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  const f = options.fetch ?? fetch;
  return (input, init = {}) => f(input, withFencingToken(init, token, options.scope));
}

function scopeOf<Tx>(options: HttpFencingOptions<Tx>, headers: IncomingHttpHeaders): string {
  if (typeof options.scope === 'string') return options.scope;
  if (options.scope !== undefined) return options.scope(headers);
  const scope = single(headers[fencingScopeHeader.toLowerCase()]);
  if (scope === undefined) {
    throw new FenceError('FENCE_INVALID_SCOPE', `the ${fencingScopeHeader} header is required`);
  }
  return scope;
}

/** A repeated header is ambiguous for a token; treat it like a malformed one. */
function single(v: string | string[] | undefined): string | undefined {
  if (Array.isArray(v)) return v.length === 1 ? v[0] : '';
  return v;
}

function badRequest<Tx>(
  error: 'missing_fencing_token' | 'invalid_fencing_token',
  message: string,
  code = 'FENCE_INVALID_TOKEN',
): FencingDecision<Tx> {
  return { kind: 'reject', status: 400, body: { error, code, message } };
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
