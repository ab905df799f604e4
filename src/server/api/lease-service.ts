// etcdserverpb.Lease (etcd server/etcdserver/api/v3rpc/lease.go). Grant and Revoke go through
// the log; TimeToLive and KeepAlive are answered by the leader's clock through the backend;
// Leases reads the applied table after the read barrier.
import type { KvBackend } from '../../replica/member/backend.js';
import type { ClientApiConfig } from './api-config.js';
import type { ApiService, BidiCall } from './convert.js';
import {
  asMessage,
  bigintField,
  boolField,
  numberField,
  toBuffer,
  toProtoHeader,
} from './convert.js';
import { expectResult } from './results.js';
import { authOn, NO_STAMP, stampOf } from './auth-identity.js';
import type { ConnectionState } from './connection-limits.js';
import { keepAliveLimitRefusal } from './connection-limits.js';
import { ApiError } from './status.js';

const LEASE = '/etcdserverpb.Lease';

export function leaseHandlers(
  backend: KvBackend,
  limits: Pick<ClientApiConfig, 'keepAliveStreamsPerConnectionMax'>,
): ApiService {
  return {
    unary: {
      [`${LEASE}/LeaseGrant`]: async (req, call) => {
        const m = asMessage(req);
        const cmd = {
          type: 'leaseGrant',
          id: bigintField(m, 'ID'),
          ttlSeconds: numberField(m, 'TTL'),
          nowMs: 0,
        } as const;
        const r = expectResult(await backend.propose(cmd, call.signal), 'leaseGrant').response;
        return {
          header: toProtoHeader(backend, r.header.revision),
          ID: r.id.toString(),
          TTL: String(r.ttlSeconds),
          error: '',
        };
      },
      [`${LEASE}/LeaseRevoke`]: async (req, call) => {
        const id = bigintField(asMessage(req), 'ID');
        // While auth is on, apply checks WRITE on every key attached to the lease.
        const stamp = authOn(backend) ? await stampOf(backend, call) : NO_STAMP;
        const r = await backend.propose({ type: 'leaseRevoke', id, ...stamp }, call.signal);
        const header = expectResult(r, 'leaseRevoke').response.header;
        return { header: toProtoHeader(backend, header.revision) };
      },
      [`${LEASE}/LeaseTimeToLive`]: async (req, call) => {
        const m = asMessage(req);
        const r = await backend.leaseTimeToLive(
          bigintField(m, 'ID'),
          boolField(m, 'keys'),
          call.signal,
        );
        return {
          header: toProtoHeader(backend, r.header.revision),
          ID: r.id.toString(),
          TTL: String(r.ttlSeconds),
          grantedTTL: String(r.grantedTtlSeconds),
          keys: r.keys.map(toBuffer),
        };
      },
      [`${LEASE}/LeaseLeases`]: async (_req, call) => {
        await backend.readBarrier(call.signal);
        const r = backend.machine.leaseLeases();
        return {
          header: toProtoHeader(backend, r.header.revision),
          leases: r.leases.map((id) => ({ ID: id.toString() })),
        };
      },
    },
    serverStream: {},
    bidi: {
      [`${LEASE}/LeaseKeepAlive`]: (call) => {
        // Calls from inside the member (the simulator's) have no connection to count against.
        const connection = call.info.connection;
        if (connection === undefined) return keepAliveStream(backend, call);
        return countedKeepAliveStream(backend, call, connection, limits);
      },
    },
  };
}

/**
 * At most `keepAliveStreamsPerConnectionMax` keepalive streams per connection (api-config.ts
 * says why streams, and not leases or lease IDs); one more ends at once, before reading a
 * request, with RESOURCE_EXHAUSTED.
 */
async function countedKeepAliveStream(
  backend: KvBackend,
  call: BidiCall,
  connection: ConnectionState,
  limits: Pick<ClientApiConfig, 'keepAliveStreamsPerConnectionMax'>,
): Promise<void> {
  const max = limits.keepAliveStreamsPerConnectionMax;
  if (connection.keepAliveStreams >= max) {
    throw new ApiError({ code: 'ResourceExhausted', message: keepAliveLimitRefusal(max) });
  }
  connection.keepAliveStreams++;
  try {
    await keepAliveStream(backend, call);
  } finally {
    connection.keepAliveStreams--;
  }
}

/**
 * One renewal per request, answered in order. An unknown or expired lease gets TTL 0 and the
 * stream stays open; the stream ends with OK when the client half-closes, as etcd's does on
 * io.EOF (both as in etcd's `leaseKeepAlive`, server/etcdserver/api/v3rpc/lease.go).
 */
async function keepAliveStream(backend: KvBackend, call: BidiCall): Promise<void> {
  for await (const req of call.requests) {
    const r = await backend.leaseKeepAlive(bigintField(asMessage(req), 'ID'), call.info.signal);
    await call.send({
      header: toProtoHeader(backend, r.header.revision),
      ID: r.id.toString(),
      TTL: String(r.ttlSeconds),
    });
  }
}
