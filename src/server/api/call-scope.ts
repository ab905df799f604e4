// What every call goes through, whichever transport carries it (gRPC or the JSON gateway): the
// checks etcd makes before a handler runs, an AbortSignal that fires on client cancel, leader
// loss (for `hasleader` streams) and shutdown, and the mapping of a failure to the status sent.
import {
  ERR_CANCELED,
  ERR_NO_LEADER,
  ERR_REQUEST_TOO_LARGE,
  ERR_STOPPED,
} from '../../core/state/etcd-errors.js';
import type { ClientApiConfig } from './api-config.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { ConnectionState } from './connection-limits.js';
import type { CallInfo } from './convert.js';
import type { Logger } from './log.js';
import type { ApiStatus } from './status.js';
import { ApiError, INTERNAL_ERROR, statusOf } from './status.js';

export interface CallScopeDeps {
  readonly backend: KvBackend;
  readonly log: Logger;
  readonly config: ClientApiConfig;
}

/** One call in progress. */
export interface CallScope {
  readonly info: CallInfo;
  /** The client went away (cancel, deadline, disconnect). */
  cancel(): void;
  /**
   * The status to end the call with after an abort the client did not cause (leader loss,
   * shutdown), or null when there is none (not aborted, or the client cancelled).
   */
  abortStatus(): ApiStatus | null;
  /** Release the scope's listeners; call exactly once when the call is over. */
  end(): void;
}

export interface CallStart {
  /** Full method path, for logs. */
  readonly method: string;
  readonly metadata: ReadonlyMap<string, string>;
  /** The verified client certificate's CN, under `--client-cert-auth` (CallInfo.commonName). */
  readonly commonName?: string;
  /** The client connection the call came on (CallInfo.connection). */
  readonly connection?: ConnectionState;
  /** Size of the request's protobuf encoding, when known. */
  readonly requestBytes?: number;
  /** Streams are ended when the leader is lost; unary calls are only checked at the start. */
  readonly stream: boolean;
}

/**
 * etcd's `hasleader` metadata, set by WithRequireLeader and checked by etcd's interceptors
 * (server/etcdserver/api/v3rpc/interceptor.go).
 */
export function requiresLeader(metadata: ReadonlyMap<string, string>): boolean {
  return metadata.get('hasleader') === 'true';
}

export class CallTracker {
  /** Calls in progress, each with whether it is a stream. */
  private readonly live = new Map<AbortController, boolean>();
  /** Woken whenever a unary call ends (drain). */
  private unaryEnded: (() => void) | undefined;

  constructor(private readonly deps: CallScopeDeps) {}

  /** Start a call, or throw ApiError when etcd would refuse it before running the handler. */
  begin(start: CallStart): CallScope {
    // etcd checks the size of what it proposes against --max-request-bytes (etcd
    // server/etcdserver/v3_server.go, processInternalRaftRequestOnce); the protobuf encoding of
    // the request is the closest measure the API layer has.
    if (start.requestBytes !== undefined && start.requestBytes > this.deps.config.requestBytesMax) {
      throw new ApiError(ERR_REQUEST_TOO_LARGE);
    }
    const leaderRequired = requiresLeader(start.metadata);
    if (leaderRequired && !this.deps.backend.hasLeader()) throw new ApiError(ERR_NO_LEADER);
    const controller = new AbortController();
    this.live.set(controller, start.stream);
    const unsubscribe =
      leaderRequired && start.stream
        ? this.deps.backend.onLeaderChange((leader) => {
            if (leader === 0n) controller.abort(ERR_NO_LEADER);
          })
        : undefined;
    let ended = false;
    return {
      info: {
        signal: controller.signal,
        metadata: start.metadata,
        ...(start.commonName === undefined ? {} : { commonName: start.commonName }),
        ...(start.connection === undefined ? {} : { connection: start.connection }),
      },
      cancel: () => controller.abort(ERR_CANCELED),
      abortStatus: () => {
        if (!controller.signal.aborted) return null;
        const reason = statusOf(controller.signal.reason);
        return reason === null || reason === ERR_CANCELED ? null : reason;
      },
      end: () => {
        if (ended) return;
        ended = true;
        unsubscribe?.();
        this.live.delete(controller);
        if (!start.stream) this.unaryEnded?.();
      },
    };
  }

  /** Abort every call in progress with `etcdserver: server stopped` (shutdown). */
  abortAll(): void {
    for (const c of [...this.live.keys()]) c.abort(ERR_STOPPED);
  }

  /**
   * Abort the streams in progress (watches, keepalives, observers: they never end by
   * themselves) with `etcdserver: server stopped`, and leave the unary calls to finish (drain).
   */
  abortStreams(): void {
    for (const [c, stream] of [...this.live]) if (stream) c.abort(ERR_STOPPED);
  }

  /**
   * Resolves once no unary call is in progress, or after `timeoutMs`. A write that a stopping
   * member has taken is answered, not cut off with an unknown outcome (etcd's GracefulStop
   * lets its RPCs finish the same way, embed/etcd.go Close).
   */
  unaryDrained(timeoutMs: number): Promise<void> {
    const busy = (): boolean => [...this.live.values()].some((stream) => !stream);
    if (!busy()) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.unaryEnded = undefined;
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.unaryEnded = () => {
        if (!busy()) done();
      };
    });
  }

  /**
   * The status a failed handler's exception stands for. An exception that is not a status is a
   * bug: it is logged with its stack and the client gets Internal, never the process crashing.
   */
  failure(method: string, e: unknown): ApiStatus {
    const status = statusOf(e);
    if (status !== null) return status;
    this.deps.log.error({ method, err: e }, 'client API handler failed');
    return INTERNAL_ERROR;
  }
}
