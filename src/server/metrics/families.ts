// prom-client families whose values are read when Prometheus scrapes (prom-client's `collect`),
// from counters the member keeps as plain numbers: nothing is done per request but an addition.
import { Counter, Gauge, type Registry } from 'prom-client';

export type Labels = Readonly<Record<string, string>>;
/** One series of a family: its labels and value. */
export type Sample = readonly [Labels, number];

/** A gauge of one value, read at scrape. */
export function gauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** A gauge family by labels, read at scrape; a label set no longer read disappears. */
export function gauges(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
  read: () => Iterable<Sample>,
): void {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.set(labels, value);
    },
  });
}

/** A counter of one total kept elsewhere, read at scrape. */
export function counter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

/** A counter family by labels, of totals kept elsewhere, read at scrape. */
export function counters(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly string[],
  read: () => Iterable<Sample>,
): void {
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read()) this.inc(labels, value);
    },
  });
}
