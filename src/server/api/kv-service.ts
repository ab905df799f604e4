// etcdserverpb.KV (etcd server/etcdserver/api/v3rpc/key.go). Writes go through the log
// (`backend.propose`); linearizable reads wait for the read barrier (ReadIndex) and serializable
// ones read the local machine at once. Txns that write go through the log; read-only ones are
// served like reads (etcd's isTxnReadonly path), evaluated on the applied state by the code apply
// would run. While auth is on, reads are checked here (etcd checks Range on its read path) and
// writes carry the caller to apply, where the checks run (auth-check.ts).
import { isReadOnlyTxn } from '../../core/state/txn.js';
import type { KvBackend } from '../../replica/member/backend.js';
import type { ApiService } from './convert.js';
import {
  fromProtoCompactionRequest,
  fromProtoDeleteRangeRequest,
  fromProtoPutRequest,
  fromProtoRangeRequest,
  fromProtoTxnRequest,
  isSerializableRange,
  isSerializableTxn,
  toProtoDeleteRangeResponse,
  toProtoHeader,
  toProtoPutResponse,
  toProtoRangeResponse,
  toProtoTxnResponse,
} from './convert.js';
import { expectResult, expectValue } from './results.js';
import { authOn, callerOf, NO_STAMP, refuse, stampOf } from './auth-identity.js';

const KV = '/etcdserverpb.KV';

export function kvHandlers(backend: KvBackend): ApiService {
  return {
    unary: {
      [`${KV}/Range`]: async (req, call) => {
        const request = fromProtoRangeRequest(req);
        if (!isSerializableRange(req)) await backend.readBarrier(call.signal);
        if (authOn(backend)) {
          const as = await callerOf(backend, call);
          refuse(backend.machine.auth.checkKeys(as, 'read', request.key, request.rangeEnd));
        }
        return toProtoRangeResponse(backend, expectValue(backend.machine.range(request)));
      },
      [`${KV}/Put`]: async (req, call) => {
        const request = fromProtoPutRequest(req);
        const stamp = authOn(backend) ? await stampOf(backend, call) : NO_STAMP;
        const r = await backend.propose({ type: 'put', request, ...stamp }, call.signal);
        return toProtoPutResponse(backend, expectResult(r, 'put').response);
      },
      [`${KV}/DeleteRange`]: async (req, call) => {
        const request = fromProtoDeleteRangeRequest(req);
        const stamp = authOn(backend) ? await stampOf(backend, call) : NO_STAMP;
        const r = await backend.propose({ type: 'deleteRange', request, ...stamp }, call.signal);
        return toProtoDeleteRangeResponse(backend, expectResult(r, 'deleteRange').response);
      },
      [`${KV}/Txn`]: async (req, call) => {
        const request = fromProtoTxnRequest(req);
        if (isReadOnlyTxn(request)) {
          // As etcd serves one: on the read path, after the read barrier unless serializable.
          if (!isSerializableTxn(req)) await backend.readBarrier(call.signal);
          if (authOn(backend))
            refuse(backend.machine.checkTxnReadOnly(request, await callerOf(backend, call)));
          const r = backend.machine.txnReadOnly(request);
          return toProtoTxnResponse(backend, expectResult(r, 'txn').response);
        }
        const stamp = authOn(backend) ? await stampOf(backend, call) : NO_STAMP;
        const r = await backend.propose({ type: 'txn', request, ...stamp }, call.signal);
        return toProtoTxnResponse(backend, expectResult(r, 'txn').response);
      },
      [`${KV}/Compact`]: async (req, call) => {
        const request = fromProtoCompactionRequest(req);
        const stamp = authOn(backend) ? await stampOf(backend, call) : NO_STAMP;
        const r = await backend.propose({ type: 'compact', request, ...stamp }, call.signal);
        return {
          header: toProtoHeader(backend, expectResult(r, 'compact').response.header.revision),
        };
      },
    },
    serverStream: {},
    bidi: {},
  };
}
