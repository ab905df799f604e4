import type { Command } from 'commander';

export function registerUp(program: Command): void {
  program
    .command('up')
    .description('start a local cluster (until the server exists: a short simulated cluster)')
    .action(async () => {
      const { runDemoCluster } = await import('../sim/demo.js');
      runDemoCluster();
    });
}
