// Running the differential script against a fresh cluster, and the golden etcd recording.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import { startCluster, type BackendKind } from '../cluster/cluster.js';
import { repoRoot } from '../support/paths.js';
import { runDifferentialScript, type Recording } from './differential.js';

/** The golden recording from etcd 3.4.23, in the source tree (not the build output). */
export const goldenPath = join(repoRoot(), 'test', 'compat', 'etcd-recording.json');

/** Start a fresh 3-member cluster of `kind`, run the script against member 0, stop it. */
export async function recordAgainst(kind: BackendKind): Promise<Recording> {
  const cluster = await startCluster({ kind, size: 3 });
  try {
    const endpoint = cluster.endpoints[0];
    if (endpoint === undefined) throw new Error('no endpoint');
    return await runDifferentialScript(endpoint);
  } finally {
    await cluster.stop();
  }
}

export function readGolden(): Recording {
  if (!existsSync(goldenPath)) {
    throw new Error(`${goldenPath} is missing; run the etcd differential test with REWRITE=1`);
  }
  return JSON.parse(readFileSync(goldenPath, 'utf8')) as Recording;
}

/** Write the golden file formatted as the repository's Prettier config would. */
export async function writeGolden(recording: Recording): Promise<void> {
  const options = (await prettier.resolveConfig(goldenPath)) ?? {};
  const text = await prettier.format(JSON.stringify(recording), { ...options, parser: 'json' });
  writeFileSync(goldenPath, text);
}
