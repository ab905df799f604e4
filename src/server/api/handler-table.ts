// Every method's handler by full gRPC path, built from the services' handler records. Both
// transports (gRPC and the JSON gateway) dispatch through one table, so they serve the same code.
import type { KvBackend } from '../../replica/member/backend.js';
import type { ClientApiConfig } from './api-config.js';
import { authHandlers } from './auth-service.js';
import { clusterHandlers } from './cluster-service.js';
import type {
  ApiService,
  BidiHandler,
  ServerStreamHandler,
  ServiceHandlers,
  UnaryHandler,
} from './convert.js';
import { electionHandlers } from './election.js';
import { healthHandlers } from './health-service.js';
import { kvHandlers } from './kv-service.js';
import { leaseHandlers } from './lease-service.js';
import { lockHandlers } from './lock.js';
import type { LockNames } from './lock-names.js';
import { maintenanceHandlers } from './maintenance-service.js';
import { watchHandlers } from './watch-service.js';

export interface HandlerTable {
  readonly unary: ReadonlyMap<string, UnaryHandler>;
  readonly serverStream: ReadonlyMap<string, ServerStreamHandler>;
  readonly bidi: ReadonlyMap<string, BidiHandler>;
}

export function handlerTable(services: readonly (ServiceHandlers | ApiService)[]): HandlerTable {
  const unary = new Map<string, UnaryHandler>();
  const serverStream = new Map<string, ServerStreamHandler>();
  const bidi = new Map<string, BidiHandler>();
  const add = <H>(into: Map<string, H>, from: Readonly<Record<string, H>>): void => {
    for (const [path, h] of Object.entries(from)) {
      if (into.has(path)) throw new Error(`tenure: two handlers for ${path}`);
      into.set(path, h);
    }
  };
  for (const s of services) {
    add(unary, s.unary);
    add(serverStream, s.serverStream);
    if ('bidi' in s) add(bidi, s.bidi);
  }
  return { unary, serverStream, bidi };
}

/** Every service tenure serves to clients; `lockNames` learns the names Lock is asked for. */
export function clientApiHandlers(
  backend: KvBackend,
  config: ClientApiConfig,
  lockNames?: LockNames,
): HandlerTable {
  return handlerTable([
    kvHandlers(backend),
    leaseHandlers(backend, config),
    watchHandlers(backend, config),
    clusterHandlers(backend),
    maintenanceHandlers(backend),
    authHandlers(backend, config),
    healthHandlers(backend),
    lockHandlers(backend, config.mutants, lockNames),
    electionHandlers(backend),
  ]);
}
