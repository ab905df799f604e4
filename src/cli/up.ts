// `tenure up` (what `npm start` runs): a local 3-member cluster in child processes, with the
// endpoints and how to talk to it; Ctrl-C stops it. `--detach` returns once it is healthy and
// `tenure down` stops it. `--simulated` runs the old in-process simulated cluster instead.
// `--tls` runs it on https:// client and peer URLs with a throwaway CA (cluster-tls.ts), and
// prints the etcdctl flags that talk to it.
import type { Command } from 'commander';
import { parsePorts } from './args.js';
import { resolve } from 'node:path';
import { LaunchError } from '../launcher/errors.js';
import type { Cluster } from '../launcher/cluster.js';
import {
  DEFAULT_CLIENT_PORTS,
  DEFAULT_PEER_PORTS,
  isAlive,
  readState,
  startLocalCluster,
  stopCluster,
  type LocalClusterState,
} from './local-cluster.js';

interface UpFlags {
  readonly detach?: boolean;
  readonly dataDir: string;
  readonly clientPorts?: string;
  readonly peerPorts?: string;
  readonly simulated?: boolean;
  readonly tls?: boolean;
}

const HEALTHY_TIMEOUT_MS = 30_000;

/** `s` as one word of a POSIX shell command line. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function rowsOf(state: LocalClusterState): string[] {
  return state.members.map(
    (m) => `  ${m.name}  client ${m.clientUrl}  peer ${m.peerUrl}  pid ${m.pid}  log ${m.logFile}`,
  );
}

/** Every member serves the dashboard (src/server/ui) on its client URL. */
function dashboardLines(state: LocalClusterState): string[] {
  return [
    'Dashboard (every member serves one; `tenure status` prints the same in a terminal):',
    ...state.members.map((m) => `  ${m.name}  ${m.clientUrl}/ui/`),
  ];
}

/** What `up --tls` prints: every command with the CA and the client certificate. */
function tlsUsage(state: LocalClusterState, tls: NonNullable<LocalClusterState['tls']>): string {
  const eps = state.members.map((m) => m.clientUrl).join(',');
  const first = state.members[0]?.clientUrl ?? '';
  const files = `--cacert ${shellWord(tls.caFile)} --cert ${shellWord(tls.certFile)}`;
  const ctl = `etcdctl --endpoints=${eps} ${files} --key ${shellWord(tls.keyFile)}`;
  return [
    `tenure: ${state.members.length}-member cluster is up on TLS (data in ${state.dir})`,
    ...rowsOf(state),
    '',
    ...dashboardLines(state),
    `  (a browser must trust ${tls.caFile} and present ${tls.certFile} with its key)`,
    '',
    'Clients must present a certificate from its CA (client.crt has CN=root). Talk to it:',
    `  ${ctl} endpoint health`,
    `  ${ctl} put greeting hello`,
    `  ${ctl} get greeting`,
    `  curl -s ${files} --key ${shellWord(tls.keyFile)} -X POST ${first}/v3/kv/range \\`,
    `    -d '{"key":"Z3JlZXRpbmc="}'   # key is base64`,
    '',
  ].join('\n');
}

function usage(state: LocalClusterState): string {
  if (state.tls !== undefined) return tlsUsage(state, state.tls);
  const eps = state.members.map((m) => m.clientUrl.replace('http://', '')).join(',');
  const first = state.members[0]?.clientUrl ?? '';
  return [
    `tenure: ${state.members.length}-member cluster is up (data in ${state.dir})`,
    ...rowsOf(state),
    '',
    ...dashboardLines(state),
    '',
    'Talk to it:',
    `  etcdctl --endpoints=${eps} put greeting hello`,
    `  etcdctl --endpoints=${eps} get greeting`,
    `  etcdctl --endpoints=${eps} endpoint status -w table`,
    `  curl -s -X POST ${first}/v3/kv/range -d '{"key":"Z3JlZXRpbmc="}'   # key is base64`,
    `  node -e "const {Etcd3}=require('etcd3');new Etcd3({hosts:'${first}'}).get('greeting').string().then(console.log)"`,
    '',
  ].join('\n');
}

export function registerUp(program: Command): void {
  program
    .command('up')
    .description('start a local 3-member cluster (ports 2379/22379/32379); Ctrl-C stops it')
    .option('--detach', 'start, print the endpoints and return; `tenure down` stops it')
    .option('--data-dir <dir>', 'where members keep data and logs', '.tenure')
    .option('--client-ports <p,p,p>', 'client ports (default 2379,22379,32379)')
    .option('--peer-ports <p,p,p>', 'peer ports (default 2380,22380,32380)')
    .option('--simulated', 'run a short simulated cluster in this process instead')
    .option('--tls', 'https:// client and peer URLs, client certificates required (throwaway CA)')
    .action(async (flags: UpFlags) => {
      if (flags.simulated) {
        const { runDemoCluster } = await import('../sim/demo.js');
        await runDemoCluster();
        return;
      }
      const clientPorts = parsePorts('--client-ports', flags.clientPorts, DEFAULT_CLIENT_PORTS);
      const peerPorts = parsePorts('--peer-ports', flags.peerPorts, DEFAULT_PEER_PORTS);
      if (clientPorts.length !== peerPorts.length) {
        process.stderr.write(
          'tenure up: --client-ports and --peer-ports must name as many ports\n',
        );
        process.exit(2);
      }
      let cluster: Cluster;
      let state: LocalClusterState;
      try {
        ({ cluster, state } = await startLocalCluster({
          dir: flags.dataDir,
          clientPorts,
          peerPorts,
          detached: flags.detach === true,
          tls: flags.tls === true,
        }));
      } catch (e) {
        if (e instanceof LaunchError) {
          process.stderr.write(`tenure up: ${e.message}\n`);
          process.exit(1);
        }
        throw e;
      }
      try {
        let last = -1;
        await cluster.waitReady(HEALTHY_TIMEOUT_MS, {
          onProgress: (n) => {
            if (n !== last)
              process.stderr.write(
                `waiting for a leader: ${n}/${state.members.length} members healthy\n`,
              );
            last = n;
          },
        });
      } catch (e) {
        process.stderr.write(`tenure up: ${e instanceof Error ? e.message : String(e)}\n`);
        for (const line of await stopCluster(state)) process.stderr.write(`${line}\n`);
        process.exit(1);
      }
      process.stdout.write(usage(state));
      if (flags.detach) {
        process.stdout.write('Detached. Stop it with: bin/tenure down\n');
        return;
      }
      process.stdout.write(
        'Ctrl-C stops the cluster (data stays; rm -rf the data dir to start fresh).\n',
      );
      const watch = setInterval(() => {
        for (const m of state.members) {
          if (m.pid > 0 && !isAlive(m.pid)) {
            process.stderr.write(`${m.name} (pid ${m.pid}) exited; see ${m.logFile}\n`);
            m.pid = 0;
          }
        }
      }, 1000);
      const stop = (): void => {
        clearInterval(watch);
        process.stdout.write('\nstopping the cluster...\n');
        stopCluster(state).then(
          (lines) => {
            for (const l of lines) process.stdout.write(`${l}\n`);
            process.stdout.write('stopped.\n');
            process.exit(0);
          },
          (e: unknown) => {
            process.stderr.write(`tenure up: ${String(e)}\n`);
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });

  program
    .command('down')
    .description('stop a cluster started with `tenure up --detach`')
    .option('--data-dir <dir>', 'the data dir given to `up`', '.tenure')
    .action(async (flags: { dataDir: string }) => {
      const dir = resolve(flags.dataDir);
      const state = readState(dir);
      if (!state) {
        process.stdout.write(`no cluster is recorded in ${dir}; nothing to stop\n`);
        return;
      }
      for (const line of await stopCluster(state)) process.stdout.write(`${line}\n`);
      process.stdout.write('stopped.\n');
    });
}
