// The `tenure` command line. Each subcommand lives in its own file and registers itself here.
// Only the subcommand being run is loaded: a member (`tenure start`) then carries none of the
// simulator, checker, demo or benchmark code (and none of their dependencies) in its memory.
import { Command } from 'commander';

type Registrar = (program: Command) => void;

const COMMANDS: Readonly<Record<string, () => Promise<Registrar>>> = {
  start: async () => (await import('./start.js')).registerStart,
  up: async () => (await import('./up.js')).registerUp,
  status: async () => (await import('./status.js')).registerStatus,
  sim: async () => (await import('./sim.js')).registerSim,
  detect: async () => (await import('./detect.js')).registerDetect,
  check: async () => (await import('./check.js')).registerCheck,
  bench: async () => (await import('./bench.js')).registerBench,
  demo: async () => (await import('./demo.js')).registerDemo,
  chaos: async () => (await import('./chaos.js')).registerChaos,
  snapshot: async () => (await import('./snapshot.js')).registerSnapshot,
};

const program = new Command();
program
  .name('tenure')
  .description('tenure: failure detection, Raft consensus, leases, locks and fencing tokens')
  .showHelpAfterError();

// A known subcommand registers alone; anything else (help, no command, a typo) sees them all.
const asked = process.argv[2];
const chosen =
  asked !== undefined && Object.hasOwn(COMMANDS, asked) ? [asked] : Object.keys(COMMANDS);
for (const name of chosen) {
  const load = COMMANDS[name];
  if (load !== undefined) (await load())(program);
}

await program.parseAsync(process.argv);
