// Planted bugs in a real member, for the harnesses that must prove they can fail (`tenure chaos
// --tenure`, docs/testing.md "Chaos"): the simulator's mutants (src/core/base/mutants.ts), named
// in one environment variable that nothing sets but a test. Off by default; a name that is not a
// mutant is refused (exit code 2), and a member that runs with any logs it at error level at
// every start, so a planted bug cannot pass unnoticed. Mutants of the SDK or of the simulator's
// clients (sessionFromAnswer, repeatUnknownWrite) do nothing in a member.
import { MUTANT_NAMES, NO_MUTANTS, type MutantName, type Mutants } from '../core/base/mutants.js';
import { ConfigError } from './config.js';

export const PLANTED_BUGS_ENV = 'TENURE_TEST_PLANTED_BUGS';

export function plantedBugsFrom(env: NodeJS.ProcessEnv): Mutants {
  const text = env[PLANTED_BUGS_ENV];
  if (text === undefined || text.trim() === '') return NO_MUTANTS;
  const names = text.split(',').map((s) => s.trim());
  for (const n of names) {
    if (!(MUTANT_NAMES as readonly string[]).includes(n))
      throw new ConfigError(`${PLANTED_BUGS_ENV}: '${n}' is not a planted bug`);
  }
  return new Set(names as MutantName[]);
}
