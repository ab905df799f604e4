// The part of hpack.js (indutny, MIT) that src/server/api/h2-authority.ts uses; the package
// ships no types.
declare module 'hpack.js' {
  interface HpackHeader {
    readonly name: string;
    readonly value: string;
    readonly neverIndex?: boolean;
  }
  interface Decompressor {
    write(bytes: Buffer): boolean;
    execute(): void;
    read(): HpackHeader | null;
    updateTableSize(bytes: number): void;
  }
  const hpack: {
    readonly decompressor: { create(options: { table: { size: number } }): Decompressor };
  };
  export default hpack;
}
