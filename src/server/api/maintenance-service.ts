// etcdserverpb.Maintenance (etcd server/etcdserver/api/v3rpc/maintenance.go). Status is what
// `etcdctl endpoint status` and tools use to find the leader; Alarm GET is half of `etcdctl
// endpoint health`. tenure keeps no alarms (the space quota refuses writes without a sticky
// NOSPACE alarm), so GET lists none and ACTIVATE/DEACTIVATE are accepted as no-ops. Defragment has
// nothing to do in memory; Hash is the machine's digest. HashKV, Snapshot, MoveLeader and
// Downgrade are not offered yet.
import type { KvBackend } from '../../replica/member/backend.js';
import type { ApiService } from './convert.js';
import { toProtoHeader } from './convert.js';
import { ApiError, unimplemented } from './status.js';
import { authOn, requireMaintenanceAdmin } from './auth-identity.js';

const MAINTENANCE = '/etcdserverpb.Maintenance';

const notOffered = (method: string) => (): Promise<never> =>
  Promise.reject(new ApiError(unimplemented(method)));

export function maintenanceHandlers(backend: KvBackend): ApiService {
  // etcd's maintenance headers carry the current store revision.
  const header = (): object => toProtoHeader(backend, backend.machine.revision);
  return {
    unary: {
      [`${MAINTENANCE}/Status`]: () => {
        const s = backend.status();
        return Promise.resolve({
          header: header(),
          version: s.version,
          dbSize: String(s.dbSizeBytes),
          leader: s.leader.toString(),
          raftIndex: String(s.raftIndex),
          raftTerm: String(s.raftTerm),
          raftAppliedIndex: String(s.raftAppliedIndex),
          errors: [],
          dbSizeInUse: String(s.dbSizeBytes),
          isLearner: s.isLearner,
          storageVersion: '',
          dbSizeQuota: String(s.dbSizeQuotaBytes),
        });
      },
      [`${MAINTENANCE}/Alarm`]: () => Promise.resolve({ header: header(), alarms: [] }),
      [`${MAINTENANCE}/Defragment`]: async (_req, call) => {
        if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
        return { header: header() };
      },
      [`${MAINTENANCE}/Hash`]: async (_req, call) => {
        if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
        return { header: header(), hash: backend.machine.digest() >>> 0 };
      },
      [`${MAINTENANCE}/HashKV`]: notOffered('HashKV'),
      [`${MAINTENANCE}/MoveLeader`]: notOffered('MoveLeader'),
      [`${MAINTENANCE}/Downgrade`]: notOffered('Downgrade'),
    },
    serverStream: {
      [`${MAINTENANCE}/Snapshot`]: notOffered('Snapshot'),
    },
    bidi: {},
  };
}
