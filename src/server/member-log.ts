// A member's log: pino JSON lines on stderr, with the fields etcd's zap logger writes
// (`level` as a word, `ts` as an ISO 8601 time, `msg`) so that log pipelines built for etcd read
// them; or, with `--log-format text`, the same records as one readable line each (pino-pretty),
// in colour on a terminal. Both write synchronously: a member that exits right after logging why
// must not lose the line.
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFormat } from './config.js';

export interface MemberLogOptions {
  readonly name: string;
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly format: LogFormat;
  /** The file descriptor written to; stderr unless a test says otherwise. */
  readonly fd?: number;
  /** Colour the text format (default: when the descriptor is a terminal). */
  readonly colorize?: boolean;
}

export function memberLog(o: MemberLogOptions): Logger {
  const fd = o.fd ?? 2;
  const options: pino.LoggerOptions = {
    level: o.level,
    base: { member: o.name },
    formatters: { level: (label) => ({ level: label }) },
    timestamp: () => `,"ts":"${new Date().toISOString()}"`,
  };
  if (o.format === 'json') return pino(options, pino.destination({ fd, sync: true }));
  const stream = pretty({
    destination: fd,
    sync: true,
    colorize: o.colorize ?? (fd === 2 && process.stderr.isTTY),
    timestampKey: 'ts',
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,member',
    messageKey: 'msg',
    messageFormat: '{member}: {msg}',
    singleLine: true,
  });
  return pino(options, stream);
}
