// A recipe client in a process of its own (elector-child.ts, lock-holder-child.ts), so that the
// failover workloads can kill it with SIGKILL: started on the cluster's endpoints (and TLS files),
// its output kept, and `ready()` true once it printed `readyMarker` (it leads, it holds).
import { spawn, type ChildProcess } from 'node:child_process';
import { track } from '../../launcher/processes.js';
import type { WorkloadContext } from './workload.js';

export interface RecipeChild {
  readonly child: ChildProcess;
  ready(): boolean;
  stderr(): string;
}

export function spawnRecipeChild(
  script: string,
  ctx: WorkloadContext,
  name: string,
  args: readonly string[],
  readyMarker: string,
): RecipeChild {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      script,
      ctx.endpoints.join(','),
      name,
      ...args,
      ...(ctx.tls === undefined ? [] : [ctx.tls.caFile, ctx.tls.certFile, ctx.tls.keyFile]),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  track(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  return { child, ready: () => out.includes(readyMarker), stderr: () => err };
}
