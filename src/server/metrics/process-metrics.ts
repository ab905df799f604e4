// The process's own families (prom-client's defaults: process_cpu_seconds_total, process_*_fds,
// process_resident_memory_bytes, nodejs_eventloop_lag_* from perf_hooks.monitorEventLoopDelay,
// nodejs_heap_*, nodejs_gc_duration_seconds, …), in one registry per process: tests run several
// members in one process, and these describe the process, not a member. Made on first use; the
// event-loop and GC observers it starts live as long as the process.
import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

export function processRegistry(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
  }
  return shared;
}
