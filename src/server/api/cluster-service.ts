// etcdserverpb.Cluster (etcd server/etcdserver/api/v3rpc/member.go): every call goes to the node,
// and member changes need the root role while auth is on (etcd's
// checkMembershipOperationPermission). etcd's Cluster headers carry no revision.
import type { KvBackend, MemberInfo } from '../../replica/member/backend.js';
import type { ApiService } from './convert.js';
import { asMessage, bigintField, boolField, repeatedField, toProtoHeader } from './convert.js';
import { authOn, requireAdmin } from './auth-identity.js';
import { ApiError } from './status.js';

const CLUSTER = '/etcdserverpb.Cluster';

export function toProtoMember(m: MemberInfo): object {
  return {
    ID: m.id.toString(),
    name: m.name,
    peerURLs: [...m.peerUrls],
    clientURLs: [...m.clientUrls],
    isLearner: m.isLearner,
  };
}

function stringList(x: readonly unknown[], name: string): string[] {
  return x.map((v) => {
    if (typeof v !== 'string') {
      throw new ApiError({ code: 'InvalidArgument', message: `tenure: ${name} must be strings` });
    }
    return v;
  });
}

export function clusterHandlers(backend: KvBackend): ApiService {
  const members = (): object[] => backend.members().map(toProtoMember);
  return {
    unary: {
      [`${CLUSTER}/MemberList`]: async (req, call) => {
        // A linearizable list reads the membership after the read barrier, as etcd 3.5 does.
        if (boolField(asMessage(req), 'linearizable')) await backend.readBarrier(call.signal);
        return { header: toProtoHeader(backend, 0), members: members() };
      },
      [`${CLUSTER}/MemberAdd`]: async (req, call) => {
        if (authOn(backend)) await requireAdmin(backend, call);
        const m = asMessage(req);
        const peerUrls = stringList(repeatedField(m, 'peerURLs'), 'peerURLs');
        const added = await backend.memberAdd(peerUrls, boolField(m, 'isLearner'), call.signal);
        return {
          header: toProtoHeader(backend, 0),
          member: toProtoMember(added),
          members: members(),
        };
      },
      [`${CLUSTER}/MemberRemove`]: async (req, call) => {
        if (authOn(backend)) await requireAdmin(backend, call);
        await backend.memberRemove(bigintField(asMessage(req), 'ID'), call.signal);
        return { header: toProtoHeader(backend, 0), members: members() };
      },
      [`${CLUSTER}/MemberUpdate`]: async (req, call) => {
        if (authOn(backend)) await requireAdmin(backend, call);
        const m = asMessage(req);
        // etcd 3.4 takes the URLs as they come (v3rpc/member.go MemberUpdate parses none).
        const peerUrls = stringList(repeatedField(m, 'peerURLs'), 'peerURLs');
        await backend.memberUpdate(bigintField(m, 'ID'), peerUrls, call.signal);
        return { header: toProtoHeader(backend, 0), members: members() };
      },
      [`${CLUSTER}/MemberPromote`]: async (req, call) => {
        if (authOn(backend)) await requireAdmin(backend, call);
        await backend.memberPromote(bigintField(asMessage(req), 'ID'), call.signal);
        return { header: toProtoHeader(backend, 0), members: members() };
      },
    },
    serverStream: {},
    bidi: {},
  };
}
