// The one client both systems are driven with for KV, lease and watch workloads: the `etcd3` npm
// package (the client the etcd baseline was measured with), configured as the baseline did.
//
// - `poolClient`: one Etcd3 over all endpoints with etcd3's default fault handling (three global
//   retries, a per-host circuit breaker); it picks a random endpoint per call.
// - `bareClient`: retry and circuit-breaker policies disabled, so failover measures the server and
//   not the client's back-off.
//
// With `tls` (`tenure bench --tls`) both present the bench CA's client certificate to https://
// members; etcd3 strips the scheme and uses grpc-js's createSsl (its connection-pool.js).
import { readFileSync } from 'node:fs';
import { Etcd3, type IOptions } from 'etcd3';
import type { BenchTlsFiles } from './tls.js';
import { callDeadlineMs } from './config.js';

type Policy = NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/** A policy that runs the call once and passes its outcome through (cockatiel's `noop`). */
function passthroughPolicy(): Policy {
  const noEvent = (): { dispose(): void } => ({ dispose: () => undefined });
  const policy = {
    onSuccess: noEvent,
    onFailure: noEvent,
    execute: <T>(fn: (ctx: { signal: AbortSignal }) => T, signal?: AbortSignal): Promise<T> => {
      try {
        return Promise.resolve(fn({ signal: signal ?? new AbortController().signal }));
      } catch (e) {
        return Promise.reject(e instanceof Error ? e : new Error(String(e)));
      }
    },
  };
  return policy as unknown as Policy;
}

function unaryDeadline(deadlineMs: number): NonNullable<IOptions['defaultCallOptions']> {
  return (context) => (context.isStream ? {} : { deadline: Date.now() + deadlineMs });
}

/** etcd3's TLS option for the bench CA and client certificate; nothing without `tls`. */
function credentials(tls: BenchTlsFiles | undefined): Pick<IOptions, 'credentials'> {
  if (tls === undefined) return {};
  return {
    credentials: {
      rootCertificate: readFileSync(tls.caFile),
      certChain: readFileSync(tls.certFile),
      privateKey: readFileSync(tls.keyFile),
    },
  };
}

/** The default client: every endpoint, a random one per call, etcd3's default policies. */
export function poolClient(endpoints: readonly string[], tls?: BenchTlsFiles): Etcd3 {
  return new Etcd3({
    hosts: [...endpoints],
    defaultCallOptions: unaryDeadline(callDeadlineMs),
    ...credentials(tls),
  });
}

/** A client without retries or circuit breakers; `deadlineMs` bounds each unary call. */
export function bareClient(
  endpoints: readonly string[],
  deadlineMs: number,
  tls?: BenchTlsFiles,
): Etcd3 {
  return new Etcd3({
    hosts: [...endpoints],
    defaultCallOptions: unaryDeadline(deadlineMs),
    faultHandling: { host: () => passthroughPolicy(), global: passthroughPolicy() },
    ...credentials(tls),
  });
}
