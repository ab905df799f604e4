// One gRPC call on one HTTP/2 stream, as the server answers it (grpc/doc/PROTOCOL-HTTP2.md):
// response headers with the first message, or a trailers-only answer, the status in the
// trailers exactly once, writes batched per event-loop turn with backpressure, and the call's
// deadline (`grpc-timeout`). Every answer byte counts in its connection's `unsentBytes` from the
// moment it is queued until node has written it to the socket (the write's callback: node calls
// it only then, and never while the client's flow-control window holds the bytes back).
import type * as http2 from 'node:http2';
import type { ConnectionState } from './connection-limits.js';
import { GrpcStatus } from './grpc-codes.js';
import { encodeGrpcMessage, frameMessage, MESSAGE_HEADER_BYTES } from './grpc-wire.js';
import type { MethodStats } from './rpc-stats.js';
import type { grpcStatusOf } from './status.js';

/** A call's final gRPC status, as status.ts maps our errors. */
export type Status = ReturnType<typeof grpcStatusOf>;

export const OK: Status = { code: GrpcStatus.OK, details: '' };

const DEADLINE_EXCEEDED: Status = {
  code: GrpcStatus.DEADLINE_EXCEEDED,
  details: 'Deadline exceeded',
};

function statusFields(s: Status): http2.OutgoingHttpHeaders {
  return s.details === ''
    ? { 'grpc-status': String(s.code) }
    : { 'grpc-status': String(s.code), 'grpc-message': encodeGrpcMessage(s.details) };
}

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = Object.freeze({
  ':status': 200,
  'content-type': 'application/grpc+proto',
});

/**
 * One call on one HTTP/2 stream: the response headers go out with the first message (or not at
 * all for a trailers-only answer), the status in the trailers, exactly once.
 */
export class Call {
  private headersSent = false;
  private finished = false;
  private timer: NodeJS.Timeout | undefined;
  /** Framed messages waiting for this turn's write (send). */
  private queued: Buffer[] = [];
  private queuedBytes = 0;
  private flushScheduled = false;
  /** The last write was refused until 'drain'. */
  private blocked = false;
  private writableWaiters: (() => void)[] = [];
  /** Bytes this call counts in its connection's `unsentBytes`. */
  private unsent = 0;
  /** The stream closed: whatever it held is gone, and late write callbacks count nothing. */
  private released = false;
  /** Called once when the call ends for any reason (the scope's release). */
  onFinish: (() => void) | undefined;
  /** The method's counters (rpc-stats.ts), when /metrics is served. */
  private readonly stats: MethodStats | undefined;
  private readonly startedMs: number;

  /**
   * `queuedBytesMax`: bytes queued before `send` asks the writer to wait (api-config.ts,
   * streamQueuedBytesMax). The stream's owner calls `streamClosed` on its 'close'.
   */
  constructor(
    readonly stream: http2.ServerHttp2Stream,
    private readonly queuedBytesMax: number,
    private readonly connection?: ConnectionState,
    stats?: MethodStats,
  ) {
    this.stats = stats;
    this.startedMs = stats === undefined ? 0 : performance.now();
    if (stats !== undefined) stats.started++;
  }

  get done(): boolean {
    return this.finished;
  }

  /** End with DEADLINE_EXCEEDED after `ms` unless finished before; `onExpire` runs first. */
  setDeadline(ms: number, onExpire: () => void): void {
    this.timer = setTimeout(() => {
      onExpire();
      this.finish(DEADLINE_EXCEEDED);
    }, ms);
  }

  /**
   * Queue one response message. Messages of one event-loop turn leave in one write (a watch
   * stream sends one response per watcher per revision: one DATA frame for all of them instead
   * of one each). False when the writer should wait (`writable`) before sending more.
   */
  send(body: Buffer): boolean {
    if (this.finished || this.stream.destroyed) return true;
    if (this.stats !== undefined) this.stats.sent++;
    this.queued.push(frameMessage(body));
    const bytes = body.length + MESSAGE_HEADER_BYTES;
    this.queuedBytes += bytes;
    this.count(bytes);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
    return !this.blocked && this.queuedBytes < this.queuedBytesMax;
  }

  private count(bytes: number): void {
    if (this.connection === undefined || this.released) return;
    this.unsent += bytes;
    this.connection.unsentBytes += bytes;
  }

  /** Write `out` (already counted) and uncount it once node has handed it to the socket. */
  private write(out: Buffer): boolean {
    if (this.connection === undefined) return this.stream.write(out);
    return this.stream.write(out, () => {
      if (this.released) return;
      this.unsent -= out.length;
      (this.connection as ConnectionState).unsentBytes -= out.length;
    });
  }

  /** The stream closed: what it still held is freed, so it no longer counts as unsent. */
  streamClosed(): void {
    if (this.released || this.connection === undefined) return;
    this.released = true;
    this.connection.unsentBytes -= this.unsent;
    this.unsent = 0;
  }

  /** Resolves once the writer may send again (the stream drained, or the call is over). */
  writable(): Promise<void> {
    if (this.finished || this.stream.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.writableWaiters.push(resolve));
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.queued.length === 0 || this.stream.destroyed || this.finished) return;
    const out = this.queued.length === 1 ? (this.queued[0] as Buffer) : Buffer.concat(this.queued);
    this.queued = [];
    this.queuedBytes = 0;
    if (!this.headersSent) {
      this.headersSent = true;
      this.stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    }
    if (this.write(out)) {
      if (!this.blocked) this.wakeWriters();
    } else if (!this.blocked) {
      this.blocked = true;
      this.stream.once('drain', () => {
        this.blocked = false;
        this.wakeWriters();
      });
    }
  }

  private wakeWriters(): void {
    const waiters = this.writableWaiters;
    this.writableWaiters = [];
    for (const w of waiters) w();
  }

  /** The last message and OK in one go (a unary answer). */
  reply(body: Buffer): void {
    if (this.finished || this.stream.destroyed) return this.finish(OK);
    if (this.stats !== undefined) this.stats.sent++;
    if (!this.headersSent) {
      this.headersSent = true;
      this.stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    }
    const framed = frameMessage(body);
    this.count(framed.length);
    this.end(OK, framed);
  }

  finish(status: Status): void {
    if (this.finished) return;
    if (this.stream.destroyed || this.stream.closed) {
      // The client reset the stream or went away: no status reaches it (grpc-go's handler sees
      // its context cancelled, and the call counts as Canceled).
      this.settle(GrpcStatus.CANCELLED);
      return;
    }
    if (!this.headersSent && this.queued.length === 0) {
      // Trailers-only: the status rides in the one HEADERS frame.
      this.headersSent = true;
      this.settle(status.code);
      this.stream.respond({ ...RESPONSE_HEADERS, ...statusFields(status) }, { endStream: true });
      return;
    }
    this.end(status, undefined);
  }

  private end(status: Status, last: Buffer | undefined): void {
    if (this.queued.length > 0) this.flush();
    this.settle(status.code);
    this.stream.once('wantTrailers', () => {
      if (!this.stream.destroyed) this.stream.sendTrailers(statusFields(status));
    });
    if (last !== undefined) this.write(last);
    this.stream.end();
  }

  private settle(code: number): void {
    this.finished = true;
    const stats = this.stats;
    if (stats !== undefined) {
      stats.handled[code] = (stats.handled[code] ?? 0) + 1;
      stats.handling.observe((performance.now() - this.startedMs) / 1000);
    }
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.wakeWriters();
    const f = this.onFinish;
    this.onFinish = undefined;
    f?.();
  }
}
