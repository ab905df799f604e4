// A small LD_PRELOAD library, compiled here with gcc once per run, that moves a process's wall
// clock by an offset read from a file at every call: the Redis side of the demo's clock-jump
// scenario. libfaketime (what `tenure chaos` uses for tenure members, src/chaos/faults-clock.ts)
// does not load into Debian's redis-server: Redis links jemalloc statically, jemalloc calls
// clock_gettime while libfaketime is still initialising, and libfaketime gives up with
// "Unexpected recursive calls to clock_gettime()" (libfaketime issues #130 and #327). This shim
// needs no initialisation: it asks the kernel for the time with syscall(2) (no dlsym, no malloc)
// and adds the offset to CLOCK_REALTIME, gettimeofday and time only. CLOCK_MONOTONIC is left
// alone, as with FAKETIME_DONT_FAKE_MONOTONIC: a wall clock that jumps (NTP step, an operator,
// a VM resumed from a snapshot) is the fault, not a clock that runs fast.
//
// Redis 7 decides key expiry with mstime() (gettimeofday: src/server.c), so a key set with
// PX 8000 on a node whose wall clock then jumps +60 s is gone at the next access. redis-nodes.ts
// checks that on the live node before the scenario counts anything.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DemoSetupError } from './redis-errors.js';

/** The environment variable that names the offset file (milliseconds, signed, one line). */
export const offsetFileEnv = 'TENURE_DEMO_CLOCK_OFFSET_FILE';

const source = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long offset_us(void) {
  const char *path = getenv("${offsetFileEnv}");
  if (path == NULL) return 0;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32];
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  long long ms = 0;
  int neg = 0;
  long i = 0;
  if (n > 0 && (buf[0] == '-' || buf[0] == '+')) { neg = buf[0] == '-'; i = 1; }
  for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) ms = ms * 10 + (buf[i] - '0');
  return (neg ? -ms : ms) * 1000LL;
}

static long long real_us(void) {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  int r = (int)syscall(SYS_clock_gettime, id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_us() * 1000LL;
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
  }
  return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  (void)tz;
  long long us = real_us() + offset_us();
  tv->tv_sec = us / 1000000LL;
  tv->tv_usec = us % 1000000LL;
  return 0;
}

time_t time(time_t *t) {
  time_t s = (time_t)((real_us() + offset_us()) / 1000000LL);
  if (t != NULL) *t = s;
  return s;
}
`;

/** Compile the shim into `dir`; returns the library's path. */
export function buildWallClockShim(dir: string): string {
  const c = join(dir, 'wall-clock-shim.c');
  const so = join(dir, 'wall-clock-shim.so');
  writeFileSync(c, source);
  try {
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-Wall', '-o', so, c], { stdio: 'pipe' });
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    throw new DemoSetupError(
      err.code === 'ENOENT'
        ? 'the clock-jump scenario compiles a small LD_PRELOAD shim and needs gcc and ' +
            'libc6-dev: apt-get install -y gcc libc6-dev'
        : `gcc could not build the wall clock shim: ${err.stderr?.toString() ?? String(e)}`,
    );
  }
  return so;
}
