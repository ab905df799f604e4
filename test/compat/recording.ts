// Running the differential script against a fresh cluster, and the golden etcd recording.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import { startCluster, type BackendKind } from '../cluster/cluster.js';
import { repoRoot } from '../support/paths.js';
import { AUTH_SCRIPT_TOKEN_TTL_SECONDS, runAuthScript } from './auth-differential.js';
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

/** etcd 3.4.23's answers to the Auth script (auth-differential.ts). */
export const authGoldenPath = join(repoRoot(), 'test', 'compat', 'etcd-auth-recording.json');

/** The Auth script against member 0 of a fresh 3-member cluster with a short token TTL. */
export async function recordAuthAgainst(kind: BackendKind): Promise<Recording> {
  const cluster = await startCluster({
    kind,
    size: 3,
    extraArgs: [`--auth-token-ttl=${AUTH_SCRIPT_TOKEN_TTL_SECONDS}`],
  });
  try {
    const endpoint = cluster.endpoints[0];
    if (endpoint === undefined) throw new Error('no endpoint');
    return await runAuthScript(endpoint);
  } finally {
    await cluster.stop();
  }
}

export function readGolden(path = goldenPath): Recording {
  if (!existsSync(path)) {
    throw new Error(`${path} is missing; run its etcd differential test with REWRITE=1`);
  }
  return JSON.parse(readFileSync(path, 'utf8')) as Recording;
}

/** Write a golden file formatted as the repository's Prettier config would. */
export async function writeGolden(recording: Recording, path = goldenPath): Promise<void> {
  const options = (await prettier.resolveConfig(path)) ?? {};
  const text = await prettier.format(JSON.stringify(recording), { ...options, parser: 'json' });
  writeFileSync(path, text);
}
