#!/usr/bin/env node
// `npm test`: sets up what the suites need, then lint, type check and build, then every suite with
// node's test runner, which ends with its pass/fail summary. Nothing is skipped silently: a missing
// system package is installed through apt-get when we are root, or named in a clear error.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);

// Debian packages the suites need, by the command that proves each is present.
const systemNeeds = [
  // Real etcd 3.4 and etcdctl for test/cluster and test/compat. The harness starts its own members
  // on OS-chosen 127.0.0.1 ports and stops them by PID. etcd-server's postinst runs
  // `invoke-rc.d etcd start` (and enables etcd.service under systemd): containers with a
  // policy-rc.d that denies starts (exit 101) or without an init get no daemon; elsewhere a
  // daemon is left on 127.0.0.1:2379/2380. The suites never use those ports, but stop it with
  // `sudo systemctl disable --now etcd` (or `sudo service etcd stop`) if it is not wanted.
  { command: 'etcd', pkg: 'etcd-server' },
  { command: 'etcdctl', pkg: 'etcd-client' },
  // A throwaway PostgreSQL server for test/fence, test/pg and `tenure bench --vs postgres`
  // (src/pg/throwaway-server.ts starts it as the postgres user). Debian keeps initdb off PATH, in /usr/lib/postgresql/<version>/bin, so the
  // check also accepts that layout: `have` runs `command -v <command>` in sh, and `ls` of an
  // unmatched glob fails.
  { command: 'initdb || ls /usr/lib/postgresql/*/bin/initdb', pkg: 'postgresql' },
  // test/faults cuts a member's peer links with iptables inside a network namespace it makes
  // (`unshare --net`, from util-linux, which every Debian has; `ip` from iproute2).
  { command: 'iptables', pkg: 'iptables' },
  { command: 'ip', pkg: 'iproute2' },
  // tenure chaos's clock faults run a member under libfaketime (LD_PRELOAD); its disk faults
  // build a small LD_PRELOAD sync shim with gcc. test/demo/redlock runs tenure members under
  // libfaketime too, and builds a wall clock shim with gcc for Redis (libfaketime does not load
  // into redis-server: jemalloc).
  { command: 'faketime', pkg: 'faketime' },
  { command: 'gcc', pkg: 'gcc' },
  // gcc-12 only recommends the C library's headers, and an apt configured without recommends
  // would leave the shim's #include <stdio.h> unresolved.
  { command: 'true && test -e /usr/include/stdio.h', pkg: 'libc6-dev' },
  // test/demo/redlock starts five throwaway Redis servers for Redlock (@sesamecare-oss/redlock)
  // on free 127.0.0.1 ports and stops them by PID. redis-server's postinst starts a daemon on
  // 127.0.0.1:6379 where an init allows it; the demo never uses that port.
  { command: 'test -x /usr/bin/redis-server', pkg: 'redis-server' },
  // test/ops/prometheus.test.ts runs Debian's Prometheus (and promtool, in the same package) on a
  // free 127.0.0.1 port with its own config and data directory, stopped by PID. The package's
  // postinst starts a daemon on :9090 where an init allows it; the test never uses that port.
  { command: 'promtool', pkg: 'prometheus' },
  // test/ui drives the dashboard in Debian's chromium, headless, through playwright-core (which
  // downloads no browser of its own).
  { command: 'test -x /usr/bin/chromium', pkg: 'chromium' },
];

function have(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function run(label, cmd, args, extraEnv = {}) {
  const started = Date.now();
  process.stdout.write(`\n== ${label}\n`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...extraEnv } });
  const s = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    process.stdout.write(`== ${label}: FAILED after ${s}s\n`);
    process.exit(r.status ?? 1);
  }
  process.stdout.write(`== ${label}: ok in ${s}s\n`);
}

const missing = systemNeeds.filter((n) => !have(n.command));
if (missing.length > 0) {
  const pkgs = [...new Set(missing.map((m) => m.pkg))];
  if (process.getuid?.() === 0) {
    run('apt-get update', 'apt-get', ['update', '-q']);
    run(`apt-get install ${pkgs.join(' ')}`, 'apt-get', ['install', '-y', '-q', ...pkgs], {
      DEBIAN_FRONTEND: 'noninteractive',
    });
  } else {
    console.error(
      `npm test needs these Debian packages: ${pkgs.join(' ')}\n` +
        `install them with: sudo apt-get install -y ${pkgs.join(' ')}`,
    );
    process.exit(1);
  }
}

const started = Date.now();
run('lint (eslint + prettier)', 'npx', ['--no-install', 'eslint', '.']);
run('format check', 'npx', ['--no-install', 'prettier', '--check', '.', '--log-level', 'warn']);
run('type check and build', 'npx', ['--no-install', 'tsc', '-p', 'tsconfig.json']);

function findTests(dir, out) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const files = [...findTests('dist/src', []), ...findTests('dist/test', [])];
if (files.length === 0) {
  console.error('no test files found under dist/: the build produced nothing to run');
  process.exit(1);
}
const filter = process.env.TEST_FILTER;
const selected = filter ? files.filter((f) => f.includes(filter)) : files;
// A file that hangs, or whose process cannot exit because something it started keeps running,
// fails after this bound instead of using up CI's 90 minutes (a closed client's retry loop once
// kept a test process alive for 15 minutes). The runner ends it with SIGTERM, on which
// test/child-processes.ts kills what it started. Above every test's own budget (the simulator
// sweep allows 15 minutes); the longest file takes under 2 minutes here.
const fileTimeoutMs = 20 * 60_000;
run(`test suites (${selected.length} files)`, process.execPath, [
  '--test',
  '--test-concurrency=2',
  `--test-timeout=${fileTimeoutMs}`,
  '--test-reporter=spec',
  ...selected,
]);
console.log(`\nnpm test: all green in ${((Date.now() - started) / 1000).toFixed(1)}s`);
