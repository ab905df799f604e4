// Histograms whose observations cost a comparison loop and two additions: the counts live in plain
// arrays next to the code that measures (an fsync, a gRPC call, a peer round trip), and are laid
// out in Prometheus's form only when /metrics is scraped. prom-client's own Histogram hashes its
// label set on every observe, which is too much for a call made per request.
import { Histogram, type Registry } from 'prom-client';

/** prometheus.ExponentialBuckets(start, factor, count): the bounds etcd's histograms use. */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, b = start; i < count; i++, b *= factor) out.push(Number(b.toPrecision(12)));
  return out;
}

/** prometheus.DefBuckets, go-grpc-prometheus's default for grpc_server_handling_seconds. */
export const DEFAULT_BUCKETS_SECONDS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** One label set's observations: a count per bucket (not cumulative), their sum and number. */
export class Buckets {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    if (i < bounds.length) this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

type Labels = Readonly<Record<string, string>>;

interface Series {
  readonly labels: Labels;
  readonly buckets: Buckets;
}

interface ExportedValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
}

interface Exported {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly values: ExportedValue[];
  readonly aggregator: 'sum';
}

/**
 * A histogram family on `registry` whose series are Buckets kept elsewhere: `series()` is asked
 * at every scrape. A prom-client Histogram in the registry (so the exposition, HELP and TYPE are
 * prom-client's), whose own observe is never used.
 */
export class BucketsHistogram extends Histogram {
  constructor(
    registry: Registry,
    private readonly family: string,
    private readonly text: string,
    private readonly series: () => Iterable<Series>,
  ) {
    super({ name: family, help: text, registers: [registry] });
  }

  private exported(): Exported {
    const values: ExportedValue[] = [];
    const bucketName = `${this.family}_bucket`;
    for (const { labels, buckets } of this.series()) {
      let acc = 0;
      for (const [i, le] of buckets.bounds.entries()) {
        acc += buckets.counts[i] as number;
        values.push({ labels: { ...labels, le }, value: acc, metricName: bucketName });
      }
      values.push({
        labels: { ...labels, le: '+Inf' },
        value: buckets.count,
        metricName: bucketName,
      });
      values.push({ labels: { ...labels }, value: buckets.sum, metricName: `${this.family}_sum` });
      values.push({
        labels: { ...labels },
        value: buckets.count,
        metricName: `${this.family}_count`,
      });
    }
    return { name: this.family, help: this.text, type: 'histogram', values, aggregator: 'sum' };
  }

  // What the registry calls for the text exposition (prom-client lib/registry.js), and what the
  // base class's get() reads.
  getForPromString(): Promise<Exported> {
    return Promise.resolve(this.exported());
  }
}

/** A family of Buckets by label set, made on first use: per peer, per method. */
export class BucketsByLabels {
  private readonly byKey = new Map<string, Series>();

  constructor(private readonly bounds: readonly number[]) {}

  /** The Buckets of `labels`; keep it rather than asking per observation. */
  of(key: string, labels: Labels): Buckets {
    let s = this.byKey.get(key);
    if (s === undefined) {
      s = { labels, buckets: new Buckets(this.bounds) };
      this.byKey.set(key, s);
    }
    return s.buckets;
  }

  series(): Iterable<Series> {
    return this.byKey.values();
  }
}
