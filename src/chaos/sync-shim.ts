// A small LD_PRELOAD library, compiled here with gcc once per run, that stands between a member
// and its disk's syncs (Node's fs.fdatasync and fsync call glibc's fdatasync(2) and fsync(2),
// which a preloaded library overrides: ld.so(8)). Two things the disk faults need and a real disk
// does not give on demand (there is no device-mapper here, so no dm-flakey):
//
//   - Once the trigger file exists, every fsync and fdatasync either fails with EIO (mode 'fail':
//     a disk that fails, fsync-fail) or never returns (mode 'hang': a disk that stops taking
//     writes, as before a power cut; wal-tail).
//   - The record file gets a line after every fsync or fdatasync that succeeded: the file's inode
//     and how far the bytes written to it reached when the call began (the end of its furthest
//     non-zero pwrite or pwritev: the zeros tenure preallocates do not count, and its appends go
//     out as one pwritev per sync, file-disk.ts). Everything before that offset is durable;
//     anything after it was never promised by a sync. That is what a torn write may cut.
//
// The record is written before the sync's caller hears of it (the worker thread writes it, then
// returns to libuv, which only then runs the member's callback), so a member killed at any moment
// has acknowledged nothing past the recorded offset.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChaosError } from './errors.js';

export type SyncShimMode = 'fail' | 'hang';

const source = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define FDS 65536
static long written_end[FDS];
static long synced_end[FDS];
static const char *trigger;
static int hang;
static int record_fd = -1;
static char hung_path[4096];
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;

static int (*real_fdatasync)(int);
static int (*real_fsync)(int);
static int (*real_close)(int);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);

__attribute__((constructor)) static void init(void) {
  real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  real_pwrite64 = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
  real_pwritev64 =
      (ssize_t (*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev64");
  real_pwritev2 =
      (ssize_t (*)(int, const struct iovec *, int, off_t, int))dlsym(RTLD_NEXT, "pwritev2");
  trigger = getenv("TENURE_CHAOS_SYNC_TRIGGER");
  const char *mode = getenv("TENURE_CHAOS_SYNC_MODE");
  hang = mode != NULL && strcmp(mode, "hang") == 0;
  const char *record = getenv("TENURE_CHAOS_SYNC_RECORD");
  if (record != NULL) record_fd = open(record, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (trigger != NULL) snprintf(hung_path, sizeof hung_path, "%s.hung", trigger);
}

static int nonzero(const void *buf, size_t n) {
  const unsigned char *b = buf;
  for (size_t i = 0; i < n; i++) if (b[i] != 0) return 1;
  return 0;
}

static void wrote(int fd, const void *buf, ssize_t r, off_t off) {
  if (fd < 0 || fd >= FDS || r <= 0 || !nonzero(buf, (size_t)r)) return;
  long end = (long)off + (long)r;
  long cur = __atomic_load_n(&written_end[fd], __ATOMIC_SEQ_CST);
  while (end > cur &&
         !__atomic_compare_exchange_n(&written_end[fd], &cur, end, 0, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST)) {
  }
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  ssize_t r = real_pwrite64(fd, buf, n, off);
  wrote(fd, buf, r, off);
  return r;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return pwrite64(fd, buf, n, off); }

/* The first r bytes of the buffers, as one write at off: the end of the furthest non-zero one. */
static void wrotev(int fd, const struct iovec *iov, int n, ssize_t r, off_t off) {
  long at = (long)off;
  for (int i = 0; i < n && r > 0; i++) {
    ssize_t len = (ssize_t)iov[i].iov_len < r ? (ssize_t)iov[i].iov_len : r;
    wrote(fd, iov[i].iov_base, len, (off_t)at);
    at += len;
    r -= len;
  }
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) {
  ssize_t r = real_pwritev64(fd, iov, n, off);
  wrotev(fd, iov, n, r, off);
  return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  return pwritev64(fd, iov, n, off);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags) {
  ssize_t r = real_pwritev2(fd, iov, n, off, flags);
  if (off >= 0) wrotev(fd, iov, n, r, off);
  return r;
}

int close(int fd) {
  if (fd >= 0 && fd < FDS) {
    __atomic_store_n(&written_end[fd], 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&synced_end[fd], 0, __ATOMIC_SEQ_CST);
  }
  return real_close(fd);
}

/** 0 to go on; else the call fails or never returns. */
static int tripped(void) {
  if (trigger == NULL || access(trigger, F_OK) != 0) return 0;
  if (!hang) { errno = EIO; return -1; }
  int h = open(hung_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (h >= 0) real_close(h);
  for (;;) pause();
}

static void record(int fd, long end) {
  if (record_fd < 0 || fd < 0 || fd >= FDS || end <= 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  pthread_mutex_lock(&record_lock);
  if (end > synced_end[fd]) {
    synced_end[fd] = end;
    char line[64];
    int n = snprintf(line, sizeof line, "%20lu %20ld\\n", (unsigned long)st.st_ino, end);
    if (n > 0 && write(record_fd, line, (size_t)n) != n) record_fd = -1;
  }
  pthread_mutex_unlock(&record_lock);
}

int fdatasync(int fd) {
  if (tripped() != 0) return -1;
  long end = fd >= 0 && fd < FDS ? __atomic_load_n(&written_end[fd], __ATOMIC_SEQ_CST) : 0;
  int r = real_fdatasync(fd);
  if (r == 0) record(fd, end);
  return r;
}

int fsync(int fd) {
  if (tripped() != 0) return -1;
  long end = fd >= 0 && fd < FDS ? __atomic_load_n(&written_end[fd], __ATOMIC_SEQ_CST) : 0;
  int r = real_fsync(fd);
  if (r == 0) record(fd, end);
  return r;
}
`;

/** The library, built into `dir` the first time it is asked for. */
export function syncShim(dir: string): string {
  const lib = join(dir, 'sync-shim.so');
  if (existsSync(lib)) return lib;
  const src = join(dir, 'sync-shim.c');
  writeFileSync(src, source);
  try {
    execFileSync('gcc', ['-shared', '-fPIC', '-O1', '-o', lib, src, '-ldl', '-lpthread'], {
      stdio: 'pipe',
    });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new ChaosError('SETUP', `the disk faults need gcc to build their sync shim: ${why}`);
  }
  return lib;
}

/** The environment that runs a member over the shim. */
export function syncShimEnv(
  lib: string,
  mode: SyncShimMode,
  trigger: string,
  record: string,
): Record<string, string> {
  return {
    LD_PRELOAD: lib,
    TENURE_CHAOS_SYNC_MODE: mode,
    TENURE_CHAOS_SYNC_TRIGGER: trigger,
    TENURE_CHAOS_SYNC_RECORD: record,
    // The shim sees only syncs made through glibc; a libuv that sent them through io_uring
    // would pass them by (and a failing disk would never fail).
    UV_USE_IO_URING: '0',
  };
}
