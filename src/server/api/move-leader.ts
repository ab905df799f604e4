// etcdserverpb.Maintenance/MoveLeader (etcd server/etcdserver/api/v3rpc/maintenance.go): only the
// leader moves leadership, and a follower answers `not leader`, as etcd's does; `etcdctl
// move-leader` finds the leader among its endpoints itself. The answer is etcd's empty one.
//
// etcd 3.4.23 checks no permission here. tenure asks for the root role while auth is on, refused
// as its other Maintenance calls are (auth-identity.ts requireMaintenanceAdmin): etcd 3.6 checks
// every Maintenance call (etcd PR #14663), and so does 3.5 from 3.5.28 (etcd issue #21663).
import type { KvBackend } from '../../replica/member/backend.js';
import { authOn, requireMaintenanceAdmin } from './auth-identity.js';
import type { UnaryHandler } from './convert.js';
import { asMessage, bigintField } from './wire-read.js';

export function moveLeaderHandler(backend: KvBackend): UnaryHandler {
  return async (req, call) => {
    if (authOn(backend)) await requireMaintenanceAdmin(backend, call);
    await backend.moveLeader(bigintField(asMessage(req), 'targetID'), call.signal);
    return {};
  };
}
