// grpc.health.v1.Health (grpc/doc/health-checking.md): SERVING while the node knows a leader, as
// etcd's health server reports. The empty service name asks about the server as a whole; etcd
// registers no per-service statuses, so any other name is NOT_FOUND per the health protocol.
import type { KvBackend } from '../../replica/member/backend.js';
import type { ApiService } from './convert.js';
import { asMessage, stringField } from './convert.js';
import { ApiError } from './status.js';

const HEALTH = '/grpc.health.v1.Health';

export function healthHandlers(backend: KvBackend): ApiService {
  const status = (): string => (backend.hasLeader() ? 'SERVING' : 'NOT_SERVING');
  const checkService = (req: unknown): void => {
    if (stringField(asMessage(req), 'service') !== '') {
      throw new ApiError({ code: 'NotFound', message: 'unknown service' });
    }
  };
  return {
    unary: {
      [`${HEALTH}/Check`]: (req) => {
        checkService(req);
        return Promise.resolve({ status: status() });
      },
    },
    serverStream: {
      // The current status at once, then every change, until the client goes away.
      [`${HEALTH}/Watch`]: (req, call, send) => {
        checkService(req);
        return new Promise<void>((resolve) => {
          let last = status();
          // Only changes are sent, a few bytes each: no need to wait for the client to read.
          void send({ status: last });
          const unsubscribe = backend.onLeaderChange(() => {
            const now = status();
            if (now !== last) void send({ status: (last = now) });
          });
          call.signal.addEventListener(
            'abort',
            () => {
              unsubscribe();
              resolve();
            },
            { once: true },
          );
        });
      },
    },
    bidi: {},
  };
}
