// Real processes on loopback (bounded): 8 membership processes; SIGSTOP one for 2 s → the others
// suspect it and never declare it dead, SIGCONT → it refutes and is alive everywhere; kill -9 one
// → dead in every view; restart it with the same name → alive again everywhere. Every child is
// stopped by PID at the end, whatever happens.
//
// Nothing here sleeps to assert speed: each step waits for a condition, with a generous deadline.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { freePorts } from '../../src/launcher/ports.js';
import { LineChild } from '../support/line-child.js';
import { until } from '../support/poll.js';

const SCRIPT = fileURLToPath(new URL('./member-process.js', import.meta.url));
const N = 8;
const HOST = '127.0.0.1';
const STEP_DEADLINE_MS = 30_000;

interface Child {
  readonly name: string;
  readonly port: number;
  proc: LineChild;
  pid: number;
}

type Status = 'alive' | 'suspect' | 'dead' | 'left';

/** Latest status of every target in every observer's view, from the children's event lines. */
const views = new Map<string, Map<string, Status>>();
/** Every (observer, target, status) transition seen, for "never" assertions. */
const history: { observer: string; target: string; status: Status }[] = [];
const children: Child[] = [];

interface MemberLine {
  ready?: boolean;
  event?: string;
  observer?: string;
  target?: string;
}

/** Start member `name`, following its event lines into `views` and `history`, until it is ready. */
async function launch(name: string, port: number, seeds: string[]): Promise<Child> {
  let ready = false;
  const proc = new LineChild(process.execPath, [SCRIPT, name, String(port), ...seeds], {
    onLine: (line) => {
      const msg = JSON.parse(line) as MemberLine;
      if (msg.ready === true) ready = true;
      if (msg.observer !== undefined && msg.target !== undefined && msg.event !== undefined) {
        const status = msg.event as Status;
        let v = views.get(msg.observer);
        if (v === undefined) views.set(msg.observer, (v = new Map<string, Status>()));
        v.set(msg.target, status);
        history.push({ observer: msg.observer, target: msg.target, status });
      }
    },
  });
  await proc.waitFor(`${name}'s ready line`, () => (ready ? true : undefined), STEP_DEADLINE_MS);
  return { name, port, proc, pid: proc.pid };
}

function others(name: string): Child[] {
  return children.filter((c) => c.name !== name);
}

function everyoneSees(target: string, status: Status, observers = others(target)): boolean {
  return observers.every((o) => views.get(o.name)?.get(target) === status);
}

describe('membership: 8 real processes on loopback', { timeout: 180_000 }, () => {
  before(async () => {
    const ports = await freePorts(N, { udp: true });
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
    await until(
      'all alive everywhere',
      () => children.every((c) => everyoneSees(c.name, 'alive')),
      STEP_DEADLINE_MS,
    );
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
      await until('2 s to pass', () => Date.now() - stoppedAt >= 2000, STEP_DEADLINE_MS);
      await until(`someone suspects ${victim.name}`, suspected, 5000);
    } finally {
      process.kill(victim.pid, 'SIGCONT');
    }
    await until(
      `${victim.name} alive everywhere again`,
      () => everyoneSees(victim.name, 'alive'),
      STEP_DEADLINE_MS,
    );
    const dead = history.slice(mark).filter((h) => h.target === victim.name && h.status === 'dead');
    assert.deepEqual(dead, [], `${victim.name} must never be declared dead for a 2 s pause`);
  });

  it('kill -9 → dead in every view', async () => {
    const victim = children[5] as Child;
    process.kill(victim.pid, 'SIGKILL');
    await until(
      `${victim.name} dead everywhere`,
      () => everyoneSees(victim.name, 'dead'),
      STEP_DEADLINE_MS,
    );
  });

  it('restart with the same name → alive again everywhere', async () => {
    const old = children[5] as Child;
    const seed = `${HOST}:${(children[0] as Child).port}`;
    views.delete(old.name);
    const again = await launch(old.name, old.port, [seed]);
    children[5] = again;
    await until(
      `${again.name} alive again everywhere`,
      () => everyoneSees(again.name, 'alive'),
      STEP_DEADLINE_MS,
    );
    await until(
      `${again.name} sees everyone alive`,
      () => others(again.name).every((o) => views.get(again.name)?.get(o.name) === 'alive'),
      STEP_DEADLINE_MS,
    );
  });
});
