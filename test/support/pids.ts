// Whether processes a test started are gone: by PID, from what a demo's timeline names.

/** PIDs named in a timeline (`pid 123`, `pids 1, 2, 3`). */
export function pidsIn(text: string): number[] {
  const pids: number[] = [];
  for (const m of text.matchAll(/\bpids? ((?:\d+)(?:, \d+)*)/g)) {
    for (const p of (m[1] ?? '').split(', ')) pids.push(Number(p));
  }
  return [...new Set(pids)];
}

/** True while a process with this PID exists. */
export { pidExists as alive } from '../../src/launcher/processes.js';
