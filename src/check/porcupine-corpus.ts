// Loads Porcupine's six kv histories and their expected verdicts from testdata/porcupine (copied
// unchanged from github.com/anishathalye/porcupine, MIT), for the tests and `tenure check
// porcupine`.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KvOperation } from './history.js';
import { parsePorcupineKv } from './porcupine.js';

export class PorcupineCorpusError extends Error {
  override readonly name = 'PorcupineCorpusError';
  readonly code = 'PORCUPINE_CORPUS';
}

export interface PorcupineKvCase {
  /** The file's path inside the corpus folder, e.g. `kv/c10-bad.txt`. */
  readonly name: string;
  readonly linearizable: boolean;
  readonly history: readonly KvOperation[];
}

/** The folders searched upward for the repository root (the package.json named "tenure"). */
const REPO_ROOT_DEPTH_MAX = 8;

/** The repository root, found by walking up from this module (works from src/ and any dist*). */
export function findRepoRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (let i = 0; i < REPO_ROOT_DEPTH_MAX; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      const parsed = JSON.parse(readFileSync(pkg, 'utf8')) as { name?: unknown };
      if (parsed.name === 'tenure') return dir;
    }
    dir = dirname(dir);
  }
  throw new PorcupineCorpusError(`no tenure package.json above ${from}`);
}

/** `testdata/porcupine` in the repository. */
export function defaultPorcupineDir(): string {
  return resolve(findRepoRoot(), 'testdata', 'porcupine');
}

interface VerdictsFile {
  readonly kv?: { readonly files?: Record<string, { readonly linearizable?: unknown }> };
}

/** Reads every kv history listed in verdicts.json; throws, never skips, when anything is missing. */
export function loadPorcupineKvCorpus(dir: string = defaultPorcupineDir()): PorcupineKvCase[] {
  const verdictsPath = join(dir, 'verdicts.json');
  if (!existsSync(verdictsPath)) {
    throw new PorcupineCorpusError(
      `Porcupine corpus not found: ${verdictsPath} is missing. The kv histories live in ` +
        `testdata/porcupine (see its README.md), or pass the folder that holds them.`,
    );
  }
  const verdicts = JSON.parse(readFileSync(verdictsPath, 'utf8')) as VerdictsFile;
  const files = verdicts.kv?.files;
  if (files === undefined || Object.keys(files).length === 0) {
    throw new PorcupineCorpusError(`${verdictsPath} lists no kv files`);
  }
  return Object.entries(files).map(([name, entry]) => {
    if (typeof entry.linearizable !== 'boolean') {
      throw new PorcupineCorpusError(`${verdictsPath}: ${name} has no boolean "linearizable"`);
    }
    const path = join(dir, name);
    if (!existsSync(path)) throw new PorcupineCorpusError(`Porcupine corpus file missing: ${path}`);
    return {
      name,
      linearizable: entry.linearizable,
      history: parsePorcupineKv(readFileSync(path, 'utf8')),
    };
  });
}
