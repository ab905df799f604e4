// Per-method counts of the gRPC calls this member served, as go-grpc-prometheus keeps them for
// etcd (grpc-ecosystem/go-grpc-prometheus server_metrics.go, registered by etcd's v3rpc/grpc.go):
// calls started, calls handled by status code, messages received and sent, and how long each call
// took. One record per method of the protos, made up front, so the call path only adds to numbers
// it already holds; /metrics lays them out (src/server/metrics).
import type * as protoLoader from '@grpc/proto-loader';
import { Buckets, DEFAULT_BUCKETS_SECONDS } from '../metrics/histogram.js';
import { packageDefinition } from './protos.js';

/** go-grpc-prometheus's grpc_type label. */
export type GrpcType = 'unary' | 'client_stream' | 'server_stream' | 'bidi_stream';

/** grpc-go's codes.Code String() per code number: the grpc_code label. */
export const GRPC_CODE_NAMES: readonly string[] = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

export interface MethodStats {
  /** `etcdserverpb.KV`, `Range`: the grpc_service and grpc_method labels. */
  readonly service: string;
  readonly method: string;
  readonly type: GrpcType;
  started: number;
  received: number;
  sent: number;
  /** Calls ended, by code number (GRPC_CODE_NAMES). */
  readonly handled: Float64Array;
  /** Seconds from the call's start to its status (grpc_server_handling_seconds). */
  readonly handling: Buckets;
}

function typeOf(m: protoLoader.MethodDefinition<object, object>): GrpcType {
  if (m.requestStream) return m.responseStream ? 'bidi_stream' : 'client_stream';
  return m.responseStream ? 'server_stream' : 'unary';
}

export class RpcStats {
  /** By full path (`/etcdserverpb.KV/Range`). */
  readonly byPath = new Map<string, MethodStats>();

  constructor() {
    for (const def of Object.values(packageDefinition())) {
      if ('format' in def) continue; // a message or an enum, not a service
      for (const m of Object.values<protoLoader.MethodDefinition<object, object>>(def)) {
        const [service = '', method = ''] = m.path.slice(1).split('/');
        this.byPath.set(m.path, {
          service,
          method,
          type: typeOf(m),
          started: 0,
          received: 0,
          sent: 0,
          handled: new Float64Array(GRPC_CODE_NAMES.length),
          handling: new Buckets(DEFAULT_BUCKETS_SECONDS),
        });
      }
    }
  }
}
