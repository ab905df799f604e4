// A throwaway PostgreSQL server for the tests and the bench (`tenure bench --vs postgres`): initdb into a temporary directory, start
// `postgres` on a free 127.0.0.1 port (its unix socket inside the same directory), trust auth,
// one database, and stop it by PID (SIGINT = fast shutdown, SIGKILL after a bound) before removing
// the directory.
//
//   const pg = await startPostgres();
//   try { const pool = new pg.Pool({ connectionString: pg.url }); … } finally { await pg.stop(); }
//
// PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user through
// `setpriv`, which execs in place: the PID we hold is the postmaster's own, not a wrapper's that
// might not forward our signals. Debian keeps the binaries in /usr/lib/postgresql/<version>/bin,
// off PATH; the newest version found there is used, else PATH. If PostgreSQL is not installed the
// start fails naming the package: tests never skip silently.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePorts } from '../launcher/ports.js';
import { pollUntil } from '../launcher/poll.js';
import { running, stopProcess, track } from '../launcher/processes.js';

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` */
  readonly url: string;
  readonly port: number;
  readonly database: string;
  readonly pid: number;
  /** Fast shutdown by PID, SIGKILL after a bound, then remove the data. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

// Named limits.
/** How long the server may take to accept connections after start. */
const readyTimeoutMs = 30_000;
const readyPollIntervalMs = 100;
/** After SIGINT (fast shutdown), how long before SIGKILL. */
const stopGraceMs = 10_000;
/** Output kept for the error message when the server does not come up. */
const logCharsMax = 8_000;

const debianRoot = '/usr/lib/postgresql';

/** The directory holding initdb and postgres, or an error naming the package to install. */
export function postgresBinDir(): string {
  if (existsSync(debianRoot)) {
    const versions = readdirSync(debianRoot)
      .filter((v) => existsSync(join(debianRoot, v, 'bin', 'initdb')))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
    if (versions[0] !== undefined) return join(debianRoot, versions[0], 'bin');
  }
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  const onPath = which.status === 0 ? which.stdout.trim() : '';
  if (onPath !== '') return join(onPath, '..');
  throw new Error(
    'PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH): install ' +
      'the Debian package "postgresql" (apt-get install -y postgresql)',
  );
}

function asPostgresUser(): { prefix: string[]; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number => {
    const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    if (r.status !== 0) {
      throw new Error('running as root, but there is no "postgres" user to run PostgreSQL as');
    }
    return Number(r.stdout.trim());
  };
  const uid = id('-u');
  const gid = id('-g');
  return {
    prefix: ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--'],
    uid,
    gid,
  };
}

export async function startPostgres(options: { database?: string } = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const database = options.database ?? 'fence_test';
  const user = asPostgresUser();
  const dir = mkdtempSync(join(tmpdir(), 'tenure-pg-'));
  const data = join(dir, 'data');
  const sockets = join(dir, 'sock');
  mkdirSync(sockets);
  if (user !== undefined) {
    chownSync(dir, user.uid, user.gid);
    chownSync(sockets, user.uid, user.gid);
  }
  const cmd = (exe: string, args: string[]): [string, string[]] =>
    user === undefined
      ? [join(bin, exe), args]
      : [user.prefix[0] ?? 'setpriv', [...user.prefix.slice(1), join(bin, exe), ...args]];

  try {
    const [initCmd, initArgs] = cmd('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--no-locale',
      // A throwaway cluster: nothing to lose, so no fsync during initdb.
      '--no-sync',
    ]);
    const init = spawnSync(initCmd, initArgs, { encoding: 'utf8', cwd: dir });
    if (init.status !== 0) {
      throw new Error(`initdb failed (${init.status}): ${init.stderr}${init.stdout}`);
    }
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  const [port] = await freePorts(1);
  if (port === undefined) throw new Error('no free port');
  const [serverCmd, serverArgs] = cmd('postgres', [
    '-D',
    data,
    '-p',
    `${port}`,
    '-k',
    sockets,
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'max_connections=200',
  ]);
  const child = track(
    spawn(serverCmd, serverArgs, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  let log = '';
  const keep = (chunk: Buffer): void => {
    log = (log + chunk.toString()).slice(-logCharsMax);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      // SIGINT is PostgreSQL's fast shutdown.
      await stopProcess(child, stopGraceMs, 'SIGINT');
      rmSync(dir, { recursive: true, force: true });
    })());

  try {
    await waitReady(
      port,
      () => running(child),
      () => log,
    );
    const admin = new pg.Client({
      host: '127.0.0.1',
      port,
      user: 'postgres',
      database: 'postgres',
    });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${database}`);
    } finally {
      await admin.end();
    }
  } catch (e) {
    await stop();
    throw e;
  }
  if (child.pid === undefined) throw new Error('postgres has no PID');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/${database}`,
    port,
    database,
    pid: child.pid,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

async function waitReady(port: number, running: () => boolean, log: () => string): Promise<void> {
  await pollUntil(
    'postgres to accept connections',
    async () => {
      if (!running()) throw new Error(`postgres exited during start:\n${log()}`);
      const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
      c.on('error', () => {});
      try {
        await c.connect();
        await c.end();
        return true;
      } catch {
        await c.end().catch(() => {});
        return false;
      }
    },
    { timeoutMs: readyTimeoutMs, intervalMs: readyPollIntervalMs, describe: log },
  );
}
