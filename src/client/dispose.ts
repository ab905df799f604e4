// Symbol.asyncDispose exists from Node 20.4 (and in TypeScript's ESNext.Disposable lib); on an older
// runtime, define it the way Node does, as the registered symbol 'nodejs.asyncDispose', so that
// `await using` in user code and our `[Symbol.asyncDispose]` methods agree.
const symbols = Symbol as unknown as { asyncDispose?: symbol; dispose?: symbol };
symbols.asyncDispose ??= Symbol.for('nodejs.asyncDispose');
symbols.dispose ??= Symbol.for('nodejs.dispose');

export {};
