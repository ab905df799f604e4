// Real processes on loopback (bounded): 8 membership processes; SIGSTOP one for 2 s → the others
// suspect it and never declare it dead, SIGCONT → it refutes and is alive everywhere; kill -9 one
// → dead in every view; restart it with the same name → alive again everywhere. Every child is
// stopped by PID at the end, whatever happens.
//
// Nothing here sleeps to assert speed: each step waits for a condition, with a generous deadline.

import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { track } from '../../src/launcher/processes.js';

const SCRIPT = fileURLToPath(new URL('./member-process.js', import.meta.url));
const N = 8;
const HOST = '127.0.0.1';
const STEP_DEADLINE_MS = 30_000;

interface Child {
  readonly name: string;
  readonly port: number;
  proc: ChildProcess;
  pid: number;
}

type Status = 'alive' | 'suspect' | 'dead' | 'left';

/** Latest status of every target in every observer's view, from the children's event lines. */
const views = new Map<string, Map<string, Status>>();
/** Every (observer, target, status) transition seen, for "never" assertions. */
const history: { observer: string; target: string; status: Status }[] = [];
const children: Child[] = [];

/** A port free for both TCP and UDP on loopback, found by binding port 0. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, HOST, () => {
        const a = s.address();
        const p = typeof a === 'object' && a !== null ? a.port : 0;
        s.close(() => resolve(p));
      });
    });
    const udpFree = await new Promise<boolean>((resolve) => {
      const u = dgram.createSocket('udp4');
      u.once('error', () => resolve(false));
      u.bind(port, HOST, () => u.close(() => resolve(true)));
    });
    if (udpFree) return port;
  }
}

function launch(name: string, port: number, seeds: string[]): Promise<Child> {
  const proc = track(
    spawn(process.execPath, [SCRIPT, name, String(port), ...seeds], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const child: Child = { name, port, proc, pid: proc.pid ?? -1 };
  let buf = '';
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const msg = JSON.parse(line) as {
          ready?: boolean;
          event?: string;
          observer?: string;
          target?: string;
        };
        if (msg.ready === true) resolve(child);
        if (msg.observer !== undefined && msg.target !== undefined && msg.event !== undefined) {
          const status = msg.event as Status;
          let v = views.get(msg.observer);
          if (v === undefined) views.set(msg.observer, (v = new Map<string, Status>()));
          v.set(msg.target, status);
          history.push({ observer: msg.observer, target: msg.target, status });
        }
      }
    });
    proc.once('exit', (code) => reject(new Error(`${name} exited early with ${code}`)));
  });
}

async function until(
  what: string,
  cond: () => boolean,
  deadlineMs = STEP_DEADLINE_MS,
): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function others(name: string): Child[] {
  return children.filter((c) => c.name !== name);
}

function everyoneSees(target: string, status: Status, observers = others(target)): boolean {
  return observers.every((o) => views.get(o.name)?.get(target) === status);
}

describe('membership: 8 real processes on loopback', { timeout: 180_000 }, () => {
  before(async () => {
    const ports: number[] = [];
    for (let i = 0; i < N; i++) ports.push(await freePort());
    const seed = `${HOST}:${ports[0]}`;
    for (let i = 0; i < N; i++) {
      children.push(await launch(`m${i}`, ports[i] as number, i === 0 ? [] : [seed]));
    }
  });

  after(() => {
    // Stop every child by PID, stopped ones included (SIGKILL works on a stopped process).
    for (const c of children) {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });

  it('forms a cluster: everyone sees everyone alive', async () => {
    await until('all alive everywhere', () => children.every((c) => everyoneSees(c.name, 'alive')));
  });

  it('a 2 s SIGSTOP gives suspect, never dead; after SIGCONT it refutes and is alive everywhere', async () => {
    const victim = children[3] as Child;
    const mark = history.length;
    const suspected = () =>
      history.slice(mark).some((h) => h.target === victim.name && h.status === 'suspect');
    const stoppedAt = Date.now();
    process.kill(victim.pid, 'SIGSTOP');
    try {
      // Stop it for 2 s (a little longer only if the machine is so loaded that nobody has noticed yet).
      await until('2 s to pass', () => Date.now() - stoppedAt >= 2000);
      await until(`someone suspects ${victim.name}`, suspected, 5000);
    } finally {
      process.kill(victim.pid, 'SIGCONT');
    }
    await until(`${victim.name} alive everywhere again`, () => everyoneSees(victim.name, 'alive'));
    const dead = history.slice(mark).filter((h) => h.target === victim.name && h.status === 'dead');
    assert.deepEqual(dead, [], `${victim.name} must never be declared dead for a 2 s pause`);
  });

  it('kill -9 → dead in every view', async () => {
    const victim = children[5] as Child;
    process.kill(victim.pid, 'SIGKILL');
    await until(`${victim.name} dead everywhere`, () => everyoneSees(victim.name, 'dead'));
  });

  it('restart with the same name → alive again everywhere', async () => {
    const old = children[5] as Child;
    const seed = `${HOST}:${(children[0] as Child).port}`;
    views.delete(old.name);
    const again = await launch(old.name, old.port, [seed]);
    children[5] = again;
    await until(`${again.name} alive again everywhere`, () => everyoneSees(again.name, 'alive'));
    await until(`${again.name} sees everyone alive`, () =>
      others(again.name).every((o) => views.get(again.name)?.get(o.name) === 'alive'),
    );
  });
});
