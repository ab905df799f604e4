// The golden Go-format values of testdata/naming (hand-written from etcd's documented format) and
// what each means on the Node side, for registry-unit.test.ts and registry-contract.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonValue } from '../../src/client/index.js';
import { repoRoot } from '../support/paths.js';

export interface FixtureLine {
  readonly key: string;
  /** The value bytes exactly as in the file. */
  readonly value: Buffer;
  /** Further tab-separated fields. */
  readonly rest: readonly string[];
}

/** The cases of testdata/naming/<file>: `KEY\tVALUE[\tMORE]` lines; `#` lines are comments. */
export function fixture(file: string): FixtureLine[] {
  const text = readFileSync(join(repoRoot(), 'testdata', 'naming', file), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.length > 0 && !l.startsWith('#'))
    .map((l) => {
      const [key, value, ...rest] = l.split('\t');
      if (key === undefined || value === undefined) throw new Error(`bad fixture line: ${l}`);
      return { key, value: Buffer.from(value, 'utf8'), rest };
    });
}

/** What each golden line of go-endpoints.txt is the Go encoding of: id, addr and metadata. */
export const goEndpoints: ReadonlyMap<
  string,
  { readonly id: string; readonly addr: string; readonly metadata: JsonValue }
> = new Map([
  ['svc/127.0.0.1:50051', { id: '127.0.0.1:50051', addr: '127.0.0.1:50051', metadata: null }],
  [
    'svc/10.0.0.2:8080',
    {
      id: '10.0.0.2:8080',
      addr: '10.0.0.2:8080',
      metadata: { zone: 'eu-1', weight: 3, version: 'v2' },
    },
  ],
  ['svc/[::1]:9000', { id: '[::1]:9000', addr: '[::1]:9000', metadata: { note: 'a<b>&c' } }],
  [
    'svc/host-4:1',
    { id: 'host-4:1', addr: 'host-4:1', metadata: { x: { b: true, a: null }, tags: ['a', 'b'] } },
  ],
  ['svc/instance-5', { id: 'instance-5', addr: 'ü.example:443', metadata: 'plain string' }],
]);

/** What each line of go-decodable.txt decodes to. */
export const goDecodable: ReadonlyMap<
  string,
  { readonly addr: string; readonly metadata: JsonValue }
> = new Map<string, { readonly addr: string; readonly metadata: JsonValue }>([
  ['svc/lower:1', { addr: 'lower:1', metadata: { k: 'v' } }],
  ['svc/extra:2', { addr: 'extra:2', metadata: null }],
  ['svc/noop:3', { addr: 'noop:3', metadata: null }],
  ['svc/spaced:4', { addr: 'spaced:4', metadata: null }],
  ['svc/op-one:5', { addr: 'op-one:5', metadata: null }],
]);
