import type { Command } from 'commander';

export function registerDetect(program: Command): void {
  program
    .command('detect')
    .description('failure detectors: evaluation harness (not yet built)')
    .action(() => {
      console.error('tenure detect: not built yet');
      process.exitCode = 2;
    });
}
