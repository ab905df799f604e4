// The file fence: a directory whose writes are fenced, for single-host resources (a spool, an
// export directory, a config file that a leader rewrites).
//
//   const dir = await FileFence.open('/var/lib/app/out');
//   await dir.write('reports', token, (files) => files.writeFile('daily.json', json));
//
// Each scope's high-water mark is a small file `.fence/<scope>.token` holding the token in decimal.
// A write, holding the scope's mutex:
//   1. reads the mark and refuses a lower token (StaleTokenError; nothing is touched);
//   2. if the token is higher, records it durably first (temp file, fsync, rename, fsync dir);
//   3. runs the effect, whose every file is replaced atomically the same way.
// Recording the mark before the effect is the safe order: a crash between 2 and 3 leaves a raised
// mark and no effect, which only the same holder (equal token, admitted) can follow up on. The
// opposite order could leave a written file under an old mark, open to a zombie overwriting it.
//
// Scope of the guarantee: one process per directory. The mutex is in-process (shared by every
// FileFence that this process opens on the same directory); two processes writing the same scope
// of one directory are NOT serialised and must not do it. A multi-file effect is not atomic as a
// whole: each file is, and the effect stops at the first error. The effect's handle is dead once
// the effect has settled, so a leaked handle cannot write later without the check.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  assertAdmitted,
  checkScope,
  checkToken,
  parseToken,
  type Fence,
  type FenceCallOptions,
} from './contract.js';
import { FenceError, InvalidScopeError } from './errors.js';
import { KeyedMutex } from './mutex.js';

/** What a fenced effect writes through; valid only until the effect settles. */
export interface FencedFiles {
  readonly scope: string;
  readonly token: bigint;
  /** Replace (or create) `name` atomically and durably: temp file, fsync, rename, fsync dir. */
  writeFile(name: string, data: string | Uint8Array): Promise<void>;
  /** Remove `name` (no error if absent), durably. */
  removeFile(name: string): Promise<void>;
  /** Read `name`, or undefined if absent. */
  readFile(name: string): Promise<Buffer | undefined>;
}

/** The subdirectory that holds the marks; effects may not touch it. */
export const markDirName = '.fence';

/** One mutex per absolute directory, shared by every FileFence of this process. */
const mutexes = new Map<string, KeyedMutex>();

export class FileFence implements Fence<FencedFiles> {
  /** The directory, absolute. */
  readonly dir: string;
  readonly #marks: string;
  readonly #mutex: KeyedMutex;

  private constructor(dir: string) {
    this.dir = dir;
    this.#marks = join(dir, markDirName);
    let m = mutexes.get(dir);
    if (m === undefined) mutexes.set(dir, (m = new KeyedMutex()));
    this.#mutex = m;
  }

  /** Open (creating if needed) a fenced directory. Marks recorded earlier are in force at once. */
  static async open(dir: string): Promise<FileFence> {
    const abs = resolve(dir);
    await mkdir(join(abs, markDirName), { recursive: true });
    await fsyncDir(abs);
    return new FileFence(abs);
  }

  async write<T>(
    scope: string,
    token: bigint,
    effect: (files: FencedFiles) => Promise<T> | T,
    options: FenceCallOptions = {},
  ): Promise<T> {
    checkScope(scope);
    checkToken(token);
    return this.#mutex.run(
      scope,
      async () => {
        const mark = await this.#readMark(scope);
        assertAdmitted(scope, token, mark);
        if (mark !== token) await writeDurably(this.#marks, markFileName(scope), `${token}\n`);
        let live = true;
        const guard = (): void => {
          if (!live) {
            throw new FenceError(
              'FENCE_HANDLE_CLOSED',
              `fence ${JSON.stringify(scope)}: file handle used after its fenced write ended`,
            );
          }
        };
        const files: FencedFiles = {
          scope,
          token,
          writeFile: async (name, data) => {
            guard();
            await writeDurably(this.dir, checkName(name), data);
          },
          removeFile: async (name) => {
            guard();
            await rm(join(this.dir, checkName(name)), { force: true });
            await fsyncDir(this.dir);
          },
          readFile: async (name) => {
            guard();
            return readOptional(join(this.dir, checkName(name)));
          },
        };
        try {
          return await effect(files);
        } finally {
          live = false;
        }
      },
      options.signal,
    );
  }

  async current(scope: string, options: FenceCallOptions = {}): Promise<bigint | undefined> {
    checkScope(scope);
    options.signal?.throwIfAborted();
    return this.#readMark(scope);
  }

  /** Read a file of the directory without fencing (reads cannot harm the resource). */
  readFile(name: string): Promise<Buffer | undefined> {
    return readOptional(join(this.dir, checkName(name)));
  }

  async #readMark(scope: string): Promise<bigint | undefined> {
    const text = await readOptional(join(this.#marks, markFileName(scope)));
    if (text === undefined) return undefined;
    // A mark file is only ever replaced by rename, so it is complete or absent; anything else
    // is outside interference, and guessing a token would defeat the fence.
    return parseToken(text.toString('utf8').trimEnd());
  }
}

/**
 * The mark's file name: base64url of the scope, so any scope (slashes, dots, `..`) maps to one
 * flat, safe name. Long scopes would exceed NAME_MAX (255), hence the scope length limit.
 */
function markFileName(scope: string): string {
  const name = `${Buffer.from(scope).toString('base64url')}.token`;
  if (name.length > 255) throw new InvalidScopeError('fence scope is too long for a file name');
  return name;
}

/** Effect file names are flat: no separators, no dot files (which hide temp files and marks). */
function checkName(name: string): string {
  if (name.length === 0 || name.length > 255 || /[/\\\0]/.test(name) || name.startsWith('.')) {
    throw new InvalidScopeError(
      `file name ${JSON.stringify(name)} must be a flat name without / \\ or a leading dot`,
    );
  }
  return name;
}

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Write temp, fsync, rename over `name`, fsync the directory: all-or-nothing and durable. */
async function writeDurably(dir: string, name: string, data: string | Uint8Array): Promise<void> {
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(temp, 'wx', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(temp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await rename(temp, join(dir, name));
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
  await fsyncDir(dir);
}

/** fsync a directory so that a rename or create in it survives a crash. */
async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
