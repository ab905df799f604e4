// `tenure status`: the cluster at a glance in a terminal — members (name, ID, role, term,
// commit, applied, lag, DB size, alarms), then the lease count and the locks and elections with
// holder and fencing token (status-report.ts). Default endpoints: the cluster `tenure up`
// recorded in --data-dir. `--watch` redraws it in place every second until Ctrl-C; `--json`
// prints it as JSON (one object per refresh with --watch).
import type { Command } from 'commander';
import { DEFAULT_CLIENT_PORTS, readState } from './local-cluster.js';
import { collectStatus, renderStatus, type StatusTls } from './status-report.js';

/** How often --watch redraws, in ms. */
const WATCH_INTERVAL_MS = 1000;

interface StatusFlags {
  readonly endpoints?: string;
  readonly dataDir: string;
  readonly watch?: boolean;
  readonly json?: boolean;
  readonly cacert?: string;
  readonly cert?: string;
  readonly key?: string;
}

// ANSI (ECMA-48) controls: cursor home, erase below, hide and show the cursor.
const HOME = '\x1b[H';
const ERASE_BELOW = '\x1b[J';
const ERASE_LINE_RIGHT = '\x1b[K';
const HIDE_CURSOR = '\x1b[?25l';
const SHOW_CURSOR = '\x1b[?25h';

/** The endpoints and TLS files to use: the flags, else the recorded `tenure up` cluster. */
function target(flags: StatusFlags): { endpoints: string[]; tls: StatusTls | undefined } {
  const state = readState(flags.dataDir);
  const tls: StatusTls | undefined =
    flags.cacert !== undefined || flags.cert !== undefined || flags.key !== undefined
      ? {
          ...(flags.cacert === undefined ? {} : { caFile: flags.cacert }),
          ...(flags.cert === undefined ? {} : { certFile: flags.cert }),
          ...(flags.key === undefined ? {} : { keyFile: flags.key }),
        }
      : state?.tls;
  if (flags.endpoints !== undefined) {
    const endpoints = flags.endpoints
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
    return { endpoints, tls };
  }
  if (state !== undefined) return { endpoints: state.members.map((m) => m.clientUrl), tls };
  return { endpoints: DEFAULT_CLIENT_PORTS.map((p) => `http://127.0.0.1:${p}`), tls };
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('members, leader, lag, alarms, leases and locks of a cluster (etcd API + /ui)')
    .option('--endpoints <urls>', 'comma-separated client URLs (default: the `tenure up` cluster)')
    .option('--data-dir <dir>', 'the data dir given to `up`, for its endpoints', '.tenure')
    .option('--watch', 'redraw every second until Ctrl-C')
    .option('--json', 'print JSON instead of a table')
    .option('--cacert <file>', 'CA of https:// endpoints (default: the `up --tls` one)')
    .option('--cert <file>', 'client certificate for https:// endpoints')
    .option('--key <file>', 'its key')
    .action(async (flags: StatusFlags) => {
      const { endpoints, tls } = target(flags);
      if (endpoints.length === 0) {
        process.stderr.write('tenure status: --endpoints names no endpoint\n');
        process.exit(2);
      }
      const once = async (): Promise<{ text: string; anyAnswered: boolean }> => {
        const s = await collectStatus(endpoints, tls);
        const anyAnswered = s.members.some((m) => m.role !== 'unreachable');
        if (flags.json === true) return { text: `${JSON.stringify(s)}\n`, anyAnswered };
        return { text: `${renderStatus(s).join('\n')}\n`, anyAnswered };
      };
      if (flags.watch !== true) {
        const { text, anyAnswered } = await once();
        process.stdout.write(text);
        process.exit(anyAnswered ? 0 : 1);
      }
      // A reader that went away (`| head`) ends the watch, quietly.
      process.stdout.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'EPIPE') process.exit(0);
        throw e;
      });
      const ansi = flags.json !== true && process.stdout.isTTY;
      const stop = (): void => {
        if (ansi) process.stdout.write(SHOW_CURSOR);
        process.exit(0);
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      if (ansi) process.stdout.write(`${HIDE_CURSOR}${HOME}${ERASE_BELOW}`);
      for (;;) {
        const started = Date.now();
        const { text } = await once();
        const stamp = `tenure status: ${new Date().toLocaleTimeString()}, every ${
          WATCH_INTERVAL_MS / 1000
        } s; Ctrl-C stops\n`;
        if (!ansi) process.stdout.write(flags.json === true ? text : `${stamp}${text}\n`);
        // In place: each line overwritten and cleared to its end, then whatever was below.
        else
          process.stdout.write(
            `${HOME}${`${stamp}${text}`.replace(/\n/g, `${ERASE_LINE_RIGHT}\n`)}${ERASE_BELOW}`,
          );
        await new Promise((r) =>
          setTimeout(r, Math.max(0, WATCH_INTERVAL_MS - (Date.now() - started))),
        );
      }
    });
}
