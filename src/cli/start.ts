// `tenure start`: one member, configured with etcd's flags. Logs are JSON lines (pino) on stderr;
// SIGTERM and SIGINT stop it gracefully (a leader hands on leadership first, as etcd's does;
// then client calls drained, peers closed, data synced: serve.ts).
import type { Command } from 'commander';
import {
  CLIENT_LIMIT_FLAGS,
  ConfigError,
  DEFAULT_MAX_REQUEST_BYTES,
  NODE_DEFAULTS,
  resolveStartOptions,
  type StartFlags,
} from '../server/config.js';
import { unsafeConfigWarnings } from '../server/config-warnings.js';
import { DiskFailure } from '../server/file-disk.js';
import { memberLog } from '../server/member-log.js';
import { PLANTED_BUGS_ENV, plantedBugsFrom } from '../server/planted-bugs.js';
import { DEFAULT_CLIENT_API_CONFIG } from '../server/api/api-config.js';

export function registerStart(program: Command): void {
  const start = program
    .command('start')
    .description('run one cluster member (etcd-compatible flags; binds 127.0.0.1 by default)')
    .option('--name <name>', 'human-readable name of this member', 'default')
    .option('--data-dir <dir>', 'where the WAL and snapshots live (default ./<name>.tenure)')
    .option('--listen-client-urls <urls>', 'client URLs to listen on', 'http://127.0.0.1:2379')
    .option('--advertise-client-urls <urls>', 'client URLs told to the cluster (default: listen)')
    .option('--listen-peer-urls <urls>', 'peer URL to listen on', 'http://127.0.0.1:2380')
    .option('--initial-advertise-peer-urls <urls>', 'peer URLs told to the cluster')
    .option('--initial-cluster <list>', 'name=peerURL,... of every initial member')
    .option('--initial-cluster-state <state>', "'new' or 'existing'", 'new')
    .option('--initial-cluster-token <token>', 'separates clusters started from the same list')
    .option(
      '--heartbeat-interval <ms>',
      'Raft heartbeat interval in ms',
      String(NODE_DEFAULTS.heartbeatMs),
    )
    .option(
      '--election-timeout <ms>',
      'Raft election timeout in ms',
      String(NODE_DEFAULTS.electionMs),
    )
    .option(
      '--pause-tolerance <ms>',
      'a leader pause this long causes no election (default 1.5 × --election-timeout; 0: off)',
    )
    .option('--leader-detector <kind>', "what judges the leader's silence: phi or fixed", 'phi')
    .option(
      '--snapshot-count <n>',
      'applied entries between snapshots',
      String(NODE_DEFAULTS.snapshotCount),
    )
    .option(
      '--max-request-bytes <n>',
      'largest client request accepted',
      String(DEFAULT_MAX_REQUEST_BYTES),
    )
    .option('--auto-tls', 'serve https:// client URLs with a self-signed certificate')
    .option(
      '--peer-cert-file <path>',
      'PEM certificate of https:// peer URLs, served and presented',
    )
    .option('--peer-key-file <path>', 'PEM private key of --peer-cert-file')
    .option('--peer-trusted-ca-file <path>', "CA bundle; peers' certificates must be signed by it")
    .option('--peer-client-cert-auth', 'refuse peers without a certificate from the peer CA')
    .option(
      '--peer-cert-allowed-cn <cn>',
      "refuse peers whose verified certificate's CN is not this one",
    )
    .option('--peer-auto-tls', 'self-signed peer certificates: encryption, no authentication')
    .option('--cert-file <path>', 'PEM certificate served on https:// client URLs')
    .option('--key-file <path>', 'PEM private key of --cert-file')
    .option('--trusted-ca-file <path>', 'CA bundle; clients must present a certificate it signed')
    .option(
      '--client-cert-auth',
      'refuse clients without a certificate from --trusted-ca-file; with auth on, its CN is the user',
    )
    .option('--auth-token <type>', "token type: 'simple' (etcd's default)", 'simple')
    .option('--auth-token-ttl <seconds>', 'a simple token unused this long expires', '300')
    .option('--bcrypt-cost <n>', 'bcrypt cost of stored password hashes (4..31)', '10')
    .option(
      '--experimental-initial-corrupt-check',
      "compare the key space's hash with the peers' before serving; refuse to start if one differs",
    )
    .option(
      '--experimental-corrupt-check-time <duration>',
      "while leading, compare members' hashes this often (e.g. 1m); CORRUPT alarm on a mismatch",
      '0s',
    )
    .option(
      '--no-lease-checkpoint',
      'a new leader gives every lease its full TTL again, not the remainder the old one recorded',
    )
    .option(
      '--experimental-enable-lease-checkpoint [bool]',
      "etcd's flag; lease checkpoints are on by default here, =false turns them off",
    )
    .option('--log-level <level>', 'debug, info, warn or error', 'info')
    .option(
      '--log-format <format>',
      "'json' (pino, etcd's fields) or 'text' (one line each)",
      'json',
    )
    .option('--listen-metrics-urls <urls>', 'more URLs serving only /metrics and /health')
    .action(async (flags: StartFlags) => {
      let opts: ReturnType<typeof resolveStartOptions> & {
        readonly mutants: ReturnType<typeof plantedBugsFrom>;
      };
      try {
        opts = { ...resolveStartOptions(flags), mutants: plantedBugsFrom(process.env) };
      } catch (e) {
        if (e instanceof ConfigError) {
          process.stderr.write(`tenure start: ${e.message}\n`);
          process.exit(2);
        }
        throw e;
      }
      const log = memberLog({ name: opts.name, level: opts.logLevel, format: opts.logFormat });
      for (const warning of unsafeConfigWarnings(opts)) {
        log.warn({ warning }, 'unsafe configuration');
        process.stderr.write(`tenure start: warning: ${warning}\n`);
      }
      if (opts.mutants.size > 0)
        log.error(
          { plantedBugs: [...opts.mutants], env: PLANTED_BUGS_ENV },
          'planted bugs enabled: this member is broken on purpose, for a test',
        );
      const { serveMember } = await import('../server/serve.js');
      let member;
      try {
        member = await serveMember(opts, log);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        log.error({ err: msg }, 'could not start');
        process.stderr.write(`tenure start: ${msg}\n`);
        process.exit(e instanceof DiskFailure ? 70 : 1);
      }
      log.info(
        { clientUrls: member.clientUrls, dataDir: opts.dataDir, pid: process.pid },
        'serving clients',
      );
      const shutdown = (signal: string): void => {
        log.info({ signal }, 'shutting down');
        const force = setTimeout(() => process.exit(1), 10_000);
        force.unref();
        member.stop().then(
          () => {
            log.info({}, 'stopped');
            log.flush();
            process.exit(0);
          },
          (e: unknown) => {
            log.error({ err: String(e) }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.once('SIGTERM', () => shutdown('SIGTERM'));
      process.once('SIGINT', () => shutdown('SIGINT'));
    });
  // The client port's per-client limits (api-config.ts), one flag each.
  for (const { flag, field, help } of CLIENT_LIMIT_FLAGS)
    start.option(`${flag} <n>`, help, String(DEFAULT_CLIENT_API_CONFIG[field]));
}
