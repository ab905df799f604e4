// The auth contract's target (auth-contract.ts): one etcd 3.4 or tenure member serving TLS on its
// client port with the certificates of testdata/tls (make.sh: server.crt for 127.0.0.1, signed by
// ca.crt), optionally requiring a client certificate from that CA (--client-cert-auth). The
// member is started with the launcher's command line (the etcd flags mean the same to both),
// on ports the OS chose on 127.0.0.1, its output kept in memory for failures, and stopped by PID.
// The cluster launcher (src/launcher/cluster.ts) is not used: its members serve plain text.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthError, connect } from '../../src/client/index.js';
import { memberCommand, memberEnv, type MemberKind } from '../../src/launcher/member-command.js';
import { memberLog } from '../../src/launcher/member-log.js';
import { freePorts } from '../../src/launcher/ports.js';
import { pollFor } from '../../src/launcher/poll.js';
import { removeDir, running, stopProcess, track, trackDir } from '../../src/launcher/processes.js';
import { repoRoot } from '../support/paths.js';

/** A testdata/tls file. */
export const tlsFile = (name: string): string => join(repoRoot(), 'testdata', 'tls', name);

export interface AuthMemberOptions {
  /** Require a client certificate signed by ca.crt (--client-cert-auth --trusted-ca-file). */
  readonly clientCertAuth: boolean;
}

export interface AuthMember {
  /** `https://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /**
   * Stop the member (SIGTERM by PID) and start it again on the same ports and data; resolves once
   * it answers again. Every token it issued is gone: etcd keeps simple tokens in memory only.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface AuthTarget {
  readonly label: string;
  start(options: AuthMemberOptions): Promise<AuthMember>;
}

/** Named limits. */
const readyTimeoutMs = 30_000;
const probeTimeoutMs = 1_000;
const probeIntervalMs = 100;
const logTailLines = 30;

export function tlsMemberTarget(kind: MemberKind): AuthTarget {
  return { label: kind, start: (options) => startMember(kind, options) };
}

async function startMember(kind: MemberKind, options: AuthMemberOptions): Promise<AuthMember> {
  const [clientPort, peerPort] = (await freePorts(2)) as [number, number];
  const dir = mkdtempSync(join(tmpdir(), `tenure-auth-${kind}-`));
  trackDir(dir);
  const spec = {
    name: 'a1',
    clientUrl: `https://127.0.0.1:${clientPort}`,
    peerUrl: `http://127.0.0.1:${peerPort}`,
    dataDir: join(dir, 'a1'),
  };
  const tlsFlags = [
    `--cert-file=${tlsFile('server.crt')}`,
    `--key-file=${tlsFile('server.key')}`,
    ...(options.clientCertAuth
      ? [`--trusted-ca-file=${tlsFile('ca.crt')}`, '--client-cert-auth']
      : []),
  ];
  const { file, args } = memberCommand(
    kind,
    spec,
    `a1=${spec.peerUrl}`,
    `auth-${randomBytes(4).toString('hex')}`,
    { extraArgs: tlsFlags },
  );
  const log = memberLog('ring', join(dir, 'a1.log'));
  const env = memberEnv({}, true);
  let child: ChildProcess | undefined;
  const spawnMember = (): void => {
    child = track(spawn(file, args, { env, stdio: log.stdio() }));
    log.spawned(child);
    child.on('exit', (code, signal) => log.note(`exited with code ${code} signal ${signal}`));
  };
  // A probe that trusts the CA and, for --client-cert-auth, shows the client certificate. Any
  // answer counts, an auth refusal too: the member is serving.
  const tls = {
    caFile: tlsFile('ca.crt'),
    ...(options.clientCertAuth
      ? { certFile: tlsFile('client.crt'), keyFile: tlsFile('client.key') }
      : {}),
  };
  const ready = async (): Promise<void> => {
    await pollFor(
      `${kind} member on ${spec.clientUrl} answering over TLS`,
      async () => {
        if (child === undefined || !running(child)) {
          throw new Error(`${kind} member exited:\n${log.tail(logTailLines)}`);
        }
        const probe = await connect({ endpoints: [spec.clientUrl], tls });
        try {
          await probe.status(undefined, { timeoutMs: probeTimeoutMs });
          return true;
        } catch (e) {
          return e instanceof AuthError ? true : undefined;
        } finally {
          await probe.close();
        }
      },
      {
        timeoutMs: readyTimeoutMs,
        intervalMs: probeIntervalMs,
        describe: () => log.tail(logTailLines),
      },
    );
  };
  const stopMember = async (): Promise<void> => {
    if (child !== undefined) await stopProcess(child);
  };
  spawnMember();
  try {
    await ready();
  } catch (e) {
    await stopMember();
    removeDir(dir);
    throw e;
  }
  return {
    endpoint: spec.clientUrl,
    restart: async () => {
      await stopMember();
      log.note('restart');
      spawnMember();
      await ready();
    },
    stop: async () => {
      await stopMember();
      removeDir(dir);
    },
  };
}
