// Where libfaketime (Debian's faketime package) is: members started under it with LD_PRELOAD see
// a skewed clock. Used by `tenure chaos` (src/chaos/faults-clock.ts) and `tenure demo redlock`;
// each says in its own error what is missing.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const faketimeLibraryName = 'libfaketime.so.1';

/**
 * The library's path, or undefined if it is not installed: Debian puts it in
 * /usr/lib/<multiarch triple>/faketime/, other builds in /usr/lib/faketime or
 * /usr/local/lib/faketime.
 */
export function findFaketimeLibrary(): string | undefined {
  const dirs = ['/usr/local/lib/faketime', '/usr/lib/faketime'];
  try {
    for (const d of readdirSync('/usr/lib')) dirs.push(join('/usr/lib', d, 'faketime'));
  } catch {
    // No /usr/lib: only the fixed places.
  }
  return dirs.map((d) => join(d, faketimeLibraryName)).find((p) => existsSync(p));
}
