// The API layer's logger: the subset of pino's interface it uses, so a pino instance can be
// passed as is once the server has one. Library code never writes to the console.

export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLogger: Logger = Object.freeze({
  info: () => {},
  warn: () => {},
  error: () => {},
});
