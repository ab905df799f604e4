// A 3-member tenure cluster of real processes inside the private network namespace this process
// runs in (deposed-leader.test.ts starts it under `unshare --net --pid`), where a member's peer
// links can be cut by the kernel while its clients still reach it, as iptables cuts them between
// hosts. Member i listens on 127.0.0.(i+1), clients on port 2379 and peers on 2380; its peer
// connections leave from its own address, so the chaos harness's rules (src/chaos/links.ts: one
// iptables rule per directed link, by source and destination address) cut exactly its links.
// Every member is stopped by its PID; the namespace, its rules and anything left in it vanish
// with this process.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLIENT_PORT,
  cut,
  memberHost,
  PEER_PORT,
  restoreAll,
  type Link,
} from '../../src/chaos/links.js';
import { memberCommand } from '../../src/launcher/member-command.js';
import { pollFor } from '../../src/launcher/poll.js';
import { removeDir, stopProcess, track, trackDir } from '../../src/launcher/processes.js';
import { EtcdGrpc, type Message } from '../compat/grpc-client.js';

export const MEMBERS = 3;
/** A hang guard for start-up and leader election, not a speed check. */
const READY_TIMEOUT_MS = 30_000;
const POLL_MS = 100;
/** Bytes of a member's log quoted when something fails. */
const LOG_TAIL_BYTES = 2_000;

export { memberHost };

export class NsCluster {
  readonly clients: readonly EtcdGrpc[];
  private readonly children: ChildProcess[];

  private constructor(
    private readonly dir: string,
    children: ChildProcess[],
  ) {
    this.children = children;
    this.clients = children.map((_, i) => new EtcdGrpc(`${memberHost(i)}:${CLIENT_PORT}`));
  }

  /** Start three members of `tenureBin` (a path to bin/tenure) and wait for a leader. */
  static async start(tenureBin: string): Promise<NsCluster> {
    execFileSync('ip', ['link', 'set', 'lo', 'up']);
    const dir = mkdtempSync(join(tmpdir(), 'tenure-faults-'));
    trackDir(dir);
    const initialCluster = Array.from(
      { length: MEMBERS },
      (_, i) => `m${i + 1}=http://${memberHost(i)}:${PEER_PORT}`,
    ).join(',');
    const children = Array.from({ length: MEMBERS }, (_, i) => {
      const dataDir = join(dir, `m${i + 1}`);
      mkdirSync(dataDir);
      const log = openSync(join(dir, `m${i + 1}.log`), 'w');
      const { file, args } = memberCommand(
        'tenure',
        {
          name: `m${i + 1}`,
          dataDir,
          clientUrl: `http://${memberHost(i)}:${CLIENT_PORT}`,
          peerUrl: `http://${memberHost(i)}:${PEER_PORT}`,
        },
        initialCluster,
        'faults',
        { tenureBin },
      );
      try {
        return track(spawn(file, args, { stdio: ['ignore', log, log] }));
      } finally {
        closeSync(log);
      }
    });
    const c = new NsCluster(dir, children);
    await c.leader();
    return c;
  }

  pid(i: number): number {
    const pid = this.children[i]?.pid;
    if (pid === undefined) throw new Error(`member ${i + 1} has no PID`);
    return pid;
  }

  /**
   * The index of the member every member names as leader, waiting until they agree and it
   * serves a linearizable read.
   */
  async leader(timeoutMs = READY_TIMEOUT_MS): Promise<number> {
    return pollFor(
      'an agreed leader',
      async () => {
        const seen = await Promise.all(
          this.clients.map((c) => c.unary('Maintenance', 'Status', {}, 1_000)),
        );
        const ids = seen.map((o) => ('ok' in o ? (o.ok.header as Message).member_id : undefined));
        const leaders = new Set(seen.map((o) => ('ok' in o ? o.ok.leader : undefined)));
        const [only] = [...leaders];
        if (leaders.size !== 1 || typeof only !== 'string' || only === '0') return undefined;
        const i = ids.indexOf(only);
        if (i < 0) return undefined;
        const read = await this.clients[i]!.unary('KV', 'Range', { key: Buffer.from('x') }, 1_000);
        return 'ok' in read ? i : undefined;
      },
      { timeoutMs, intervalMs: POLL_MS, describe: () => this.logTails() },
    );
  }

  /**
   * Cut member i's peer links both ways (its clients still reach it): nothing from the other
   * members reaches its peer port, and nothing it sends reaches theirs. Packets are dropped, not
   * refused, so TCP holds what was in flight and retransmits it once the cut heals.
   */
  cut(i: number): void {
    const links: Link[] = [];
    for (let j = 0; j < MEMBERS; j++)
      if (j !== i) links.push({ from: i, to: j }, { from: j, to: i });
    cut(links);
  }

  heal(): void {
    restoreAll();
  }

  signal(i: number, sig: 'SIGSTOP' | 'SIGCONT'): void {
    process.kill(this.pid(i), sig);
  }

  logTails(): string {
    return this.children
      .map((_, i) => {
        let text = '';
        try {
          text = readFileSync(join(this.dir, `m${i + 1}.log`), 'utf8').slice(-LOG_TAIL_BYTES);
        } catch {
          // No log yet.
        }
        return `--- m${i + 1} (${memberHost(i)}):\n${text}`;
      })
      .join('\n');
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.close();
    for (const [i, child] of this.children.entries()) {
      // A stopped process would not act on SIGTERM.
      if (child.exitCode === null && child.signalCode === null) this.signal(i, 'SIGCONT');
    }
    await Promise.all(this.children.map((c) => stopProcess(c)));
    removeDir(this.dir);
  }
}
