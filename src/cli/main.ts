// The `tenure` command line. Each subcommand lives in its own file and registers itself here.
import { Command } from 'commander';
import { registerSim } from './sim.js';
import { registerDetect } from './detect.js';
import { registerUp } from './up.js';
import { registerCheck } from './check.js';
import { registerStart } from './start.js';
import { registerDemo } from './demo.js';
import { registerBench } from './bench.js';

const program = new Command();
program
  .name('tenure')
  .description('tenure: failure detection, Raft consensus, leases, locks and fencing tokens')
  .showHelpAfterError();

registerStart(program);
registerUp(program);
registerSim(program);
registerDetect(program);
registerCheck(program);
registerBench(program);
registerDemo(program);

await program.parseAsync(process.argv);
