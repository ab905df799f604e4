// A membership node as a child process, for the real-process test: starts a Membership on
// 127.0.0.1 with the `local` preset and prints one JSON line per event on stdout, so the test can
// follow every member's view. SIGTERM leaves gracefully; SIGKILL is the crash under test.
//
//   node member-process.js <name> <port> [seed host:port ...]

import { Membership } from '../../src/membership/index.js';

const [name, portText, ...seeds] = process.argv.slice(2);
if (name === undefined || portText === undefined) {
  process.stderr.write('usage: member-process <name> <port> [seeds...]\n');
  process.exit(2);
}

const out = (line: object) => process.stdout.write(JSON.stringify(line) + '\n');

const m = await Membership.start({ name, port: Number(portText), seeds, preset: 'local' });
out({ ready: true, name, address: m.address, pid: process.pid });

for (const type of ['alive', 'suspect', 'dead', 'left'] as const) {
  m.on(type, (e) =>
    out({
      event: type,
      observer: name,
      target: e.member.name,
      epoch: e.member.epoch,
      inc: e.member.inc,
    }),
  );
}
m.on('stall', (e) => out({ event: 'stall', observer: name, durationMs: Math.round(e.durationMs) }));
m.on('error', (e) => process.stderr.write(`${name}: ${e.message}\n`));

process.on('SIGTERM', () => {
  m.leave().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
