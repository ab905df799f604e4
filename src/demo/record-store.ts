// The store the demo's workers write their record to, in two flavours that differ only in the
// fence: `fenced` checks the writer's token at the store (tenure/fence), `unfenced` writes
// whatever arrives. A record is `parts` parts; each part names the writer and token that wrote it,
// so a record mixed from two writers is visible in the final state.
//
// Backends: a directory (FileFence; the default, needs nothing installed) and PostgreSQL
// (fencedTransaction). The store lives in the demo process, which serves the workers' writes over
// IPC: files.ts fences one process per directory, and one process owning the store is also what a
// database or a storage service is to its clients.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FileFence, StaleTokenError, createFenceTable, fencedTransaction } from '../fence/index.js';
import type { PgPool } from '../fence/index.js';

export type StoreBackend = 'files' | 'postgres';

/** One part of the record as stored. */
export interface RecordPart {
  readonly part: number;
  readonly writer: string;
  readonly token: bigint;
}

export type WriteOutcome =
  { readonly accepted: true } | { readonly accepted: false; readonly error: StaleTokenError };

export interface RecordStore {
  readonly fenced: boolean;
  /** One line for the timeline: what and where the store is. */
  readonly description: string;
  /** Write one part. A stale token is an outcome, not an exception; other failures throw. */
  write(part: number, writer: string, token: bigint): Promise<WriteOutcome>;
  /** The record as it stands, by part number. */
  read(): Promise<RecordPart[]>;
  /** Release what the store holds (connections); the data stays for inspection or is removed. */
  close(): Promise<void>;
}

/** The fence scope of the record: one token sequence per record. */
export const recordScope = 'record';

const partFile = (part: number): string => `part-${part}.json`;

function encodePart(p: RecordPart): string {
  return `${JSON.stringify({ part: p.part, writer: p.writer, token: p.token.toString() })}\n`;
}

function decodePart(text: string): RecordPart {
  const o = JSON.parse(text) as { part: number; writer: string; token: string };
  return { part: o.part, writer: o.writer, token: BigInt(o.token) };
}

async function outcomeOf(write: () => Promise<void>): Promise<WriteOutcome> {
  try {
    await write();
    return { accepted: true };
  } catch (e) {
    if (e instanceof StaleTokenError) return { accepted: false, error: e };
    throw e;
  }
}

/** A record in a directory, one file per part. */
export class FileRecordStore implements RecordStore {
  readonly fenced: boolean;
  readonly description: string;
  readonly #dir: string;
  readonly #fence: FileFence | undefined;

  private constructor(dir: string, fence: FileFence | undefined) {
    this.#dir = dir;
    this.#fence = fence;
    this.fenced = fence !== undefined;
    this.description =
      fence === undefined
        ? `unfenced directory ${dir} (plain file writes, no token check)`
        : `fenced directory ${dir} (tenure/fence FileFence, scope "${recordScope}")`;
  }

  static async open(dir: string, fenced: boolean): Promise<FileRecordStore> {
    await mkdir(dir, { recursive: true });
    return new FileRecordStore(dir, fenced ? await FileFence.open(dir) : undefined);
  }

  write(part: number, writer: string, token: bigint): Promise<WriteOutcome> {
    const data = encodePart({ part, writer, token });
    const fence = this.#fence;
    if (fence === undefined) return outcomeOf(() => replaceFile(this.#dir, partFile(part), data));
    return outcomeOf(() =>
      fence.write(recordScope, token, (files) => files.writeFile(partFile(part), data)),
    );
  }

  async read(): Promise<RecordPart[]> {
    const parts: RecordPart[] = [];
    for (let part = 1; part <= partsMax; part++) {
      let text: string;
      try {
        text = await readFile(join(this.#dir, partFile(part)), 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      parts.push(decodePart(text));
    }
    return parts;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** The most parts a record may have (a bound for read()). */
export const partsMax = 16;

/** The unfenced write: atomic per file (temp + rename), but no check of who writes. */
async function replaceFile(dir: string, name: string, data: string): Promise<void> {
  const temp = join(dir, `.${name}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(temp, 'wx', 0o644);
  try {
    await fh.writeFile(data);
  } finally {
    await fh.close();
  }
  try {
    await rename(temp, join(dir, name));
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
}

/**
 * A record in PostgreSQL: table `tenure_demo_record (run, part, writer, token)`, one row per part,
 * written with an upsert; fenced through fencedTransaction (fence table `tenure_fence`, scope
 * `split-brain/<run>`). Each run has its own rows and scope, and removes them on close.
 */
export class PostgresRecordStore implements RecordStore {
  readonly fenced: boolean;
  readonly description: string;
  readonly #pool: PgPool & { end(): Promise<void> };
  readonly #run: string;
  readonly #scope: string;

  private constructor(pool: PgPool & { end(): Promise<void> }, run: string, fenced: boolean) {
    this.#pool = pool;
    this.#run = run;
    this.#scope = `split-brain/${run}`;
    this.fenced = fenced;
    this.description = fenced
      ? `PostgreSQL table tenure_demo_record, run ${run} (fencedTransaction, scope "${this.#scope}")`
      : `PostgreSQL table tenure_demo_record, run ${run} (plain upsert, no token check)`;
  }

  static async open(url: string, fenced: boolean): Promise<PostgresRecordStore> {
    // Loaded only for this backend, so the files demo runs without touching the driver.
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => {}); // an idle connection dying is reported by the next query
    try {
      await createFenceTable(pool);
      await pool.query(
        `CREATE TABLE IF NOT EXISTS tenure_demo_record (
           run text NOT NULL, part int NOT NULL, writer text NOT NULL, token bigint NOT NULL,
           PRIMARY KEY (run, part))`,
      );
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PostgresRecordStore(pool, randomBytes(4).toString('hex'), fenced);
  }

  write(part: number, writer: string, token: bigint): Promise<WriteOutcome> {
    const upsert = `INSERT INTO tenure_demo_record (run, part, writer, token) VALUES ($1, $2, $3, $4)
      ON CONFLICT (run, part) DO UPDATE SET writer = EXCLUDED.writer, token = EXCLUDED.token`;
    const values = [this.#run, part, writer, token.toString()];
    if (!this.fenced) return outcomeOf(async () => void (await this.#pool.query(upsert, values)));
    return outcomeOf(() =>
      fencedTransaction(this.#pool, { scope: this.#scope, token }, async (c) => {
        await c.query(upsert, values);
      }),
    );
  }

  async read(): Promise<RecordPart[]> {
    const r = await this.#pool.query(
      'SELECT part, writer, token FROM tenure_demo_record WHERE run = $1 ORDER BY part',
      [this.#run],
    );
    return r.rows.map((row) => ({
      part: Number(row.part),
      writer: String(row.writer),
      token: BigInt(String(row.token)),
    }));
  }

  async close(): Promise<void> {
    try {
      await this.#pool.query('DELETE FROM tenure_demo_record WHERE run = $1', [this.#run]);
      await this.#pool.query('DELETE FROM tenure_fence WHERE scope = $1', [this.#scope]);
    } finally {
      await this.#pool.end();
    }
  }
}
