// /metrics with etcd's families: a member in this process serves them on its client port and on
// --listen-metrics-urls (which answers /metrics and /health only), its counters follow what it
// serves, and every etcd_ and grpc_ family it shares with Debian's etcd 3.4 has etcd's type, help
// text, label names and bucket bounds, read from a real etcd's /metrics.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startCluster } from '../../src/launcher/cluster.js';
import { freePorts } from '../../src/launcher/ports.js';
import { ConfigError, resolveStartOptions } from '../../src/server/config.js';
import { serveMember, type RunningMember } from '../../src/server/serve.js';
import { GrpcKv } from '../cluster/grpc-kv.js';
import { eventually } from '../support/poll.js';

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

interface Family {
  help: string;
  type: string;
  readonly samples: {
    readonly name: string;
    readonly labels: Map<string, string>;
    value: number;
  }[];
}

/** The Prometheus text exposition, by family. */
function parse(text: string): Map<string, Family> {
  const out = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = out.get(name);
    if (f === undefined) {
      f = { help: '', type: '', samples: [] };
      out.set(name, f);
    }
    return f;
  };
  let current: Family | undefined;
  for (const line of text.split('\n')) {
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta !== null) {
      current = family(meta[2] as string);
      if (meta[1] === 'HELP') current.help = meta[3] as string;
      else current.type = meta[3] as string;
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (sample === null || current === undefined) continue;
    const labels = new Map<string, string>();
    for (const m of (sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels.set(m[1] as string, m[2] as string);
    current.samples.push({ name: sample[1] as string, labels, value: Number(sample[3]) });
  }
  return out;
}

async function scrape(url: string): Promise<Map<string, Family>> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parse(await res.text());
}

/** The value of the one sample of `name` whose labels include `labels`. */
function value(fams: Map<string, Family>, family: string, labels: Record<string, string> = {}) {
  const f = fams.get(family);
  assert.ok(f, `family ${family}`);
  const found = f.samples.filter((s) =>
    Object.entries(labels).every(([k, v]) => s.labels.get(k) === v),
  );
  assert.ok(found.length >= 1, `${family} ${JSON.stringify(labels)}`);
  return (found[0] as { value: number }).value;
}

/** Label names of a family's samples (le, for histograms, included). */
function labelNames(f: Family): string[] {
  return [...new Set(f.samples.flatMap((s) => [...s.labels.keys()]))].sort();
}

/** A histogram's bucket bounds. */
function bounds(f: Family): string[] {
  return [...new Set(f.samples.flatMap((s) => s.labels.get('le') ?? []))].map((le) =>
    le === '+Inf' ? le : String(Number(le)),
  );
}

describe('a member serving /metrics', () => {
  let dir: string;
  let member: RunningMember;
  let client: string;
  let metricsUrl: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tenure-metrics-'));
    const [clientPort, peerPort, metricsPort] = await freePorts(3);
    member = await serveMember(
      resolveStartOptions({
        name: 'm1',
        dataDir: join(dir, 'm1'),
        listenClientUrls: `http://127.0.0.1:${String(clientPort)}`,
        listenPeerUrls: `http://127.0.0.1:${String(peerPort)}`,
        listenMetricsUrls: `http://127.0.0.1:${String(metricsPort)}`,
      }),
      quiet,
    );
    client = member.clientUrls[0] as string;
    metricsUrl = member.metricsUrls[0] as string;
    await eventually('a leader', async () =>
      (await fetch(`${client}/health`)).ok ? true : undefined,
    );
  });
  after(async () => {
    await member.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('counters follow what it serves', async () => {
    const before = await scrape(client);
    assert.equal(value(before, 'etcd_server_has_leader'), 1);
    assert.equal(value(before, 'etcd_server_is_leader'), 1);
    const puts = value(before, 'etcd_mvcc_put_total');
    const kv = new GrpcKv(client);
    try {
      await kv.put('metrics/a', '1');
      await kv.put('metrics/b', '2');
      await kv.range('metrics/');
    } finally {
      kv.close();
    }
    const after = await scrape(client);
    assert.equal(value(after, 'etcd_mvcc_put_total'), puts + 2);
    assert.ok(value(after, 'etcd_debugging_mvcc_keys_total') >= 2);
    const put = { grpc_method: 'Put', grpc_service: 'etcdserverpb.KV', grpc_type: 'unary' };
    assert.equal(value(after, 'grpc_server_started_total', put), 2);
    assert.equal(value(after, 'grpc_server_handled_total', { ...put, grpc_code: 'OK' }), 2);
    assert.equal(value(after, 'grpc_server_handled_total', { ...put, grpc_code: 'Internal' }), 0);
    assert.equal(value(after, 'grpc_server_msg_sent_total', put), 2);
    const fsyncs = after
      .get('etcd_disk_wal_fsync_duration_seconds')
      ?.samples.find((x) => x.name === 'etcd_disk_wal_fsync_duration_seconds_count');
    assert.ok((fsyncs?.value ?? 0) >= 2, 'WAL fsyncs timed');
    assert.ok(
      value(after, 'etcd_server_proposals_applied_total') >=
        value(before, 'etcd_server_proposals_applied_total') + 2,
    );
    const id = [...(after.get('etcd_server_id')?.samples[0]?.labels.values() ?? [])][0];
    assert.equal(id, member.node.member.memberId.toString(16));
    assert.ok(after.has('process_cpu_seconds_total'), 'the process defaults');
    assert.ok(after.has('nodejs_eventloop_lag_p99_seconds'), 'event-loop delay');
    assert.ok(after.has('tenure_lease_keepalive_duration_seconds'));
  });

  test('the Lock service reports each lock it was asked for', async () => {
    const name = Buffer.from('metrics-lock').toString('base64');
    const res = await fetch(`${client}/v3/lock/lock`, {
      method: 'POST',
      body: JSON.stringify({ name }),
    });
    assert.equal(res.status, 200);
    const key = ((await res.json()) as { key: string }).key;
    const held = await scrape(client);
    assert.equal(value(held, 'tenure_lock_holders', { lock: 'metrics-lock' }), 1);
    assert.equal(value(held, 'tenure_lock_queue_length', { lock: 'metrics-lock' }), 0);
    const token = value(held, 'tenure_lock_fencing_token', { lock: 'metrics-lock' });
    assert.ok(token > 0);
    const unlock = await fetch(`${client}/v3/lock/unlock`, {
      method: 'POST',
      body: JSON.stringify({ key }),
    });
    assert.equal(unlock.status, 200);
    const free = await scrape(client);
    assert.equal(value(free, 'tenure_lock_holders', { lock: 'metrics-lock' }), 0);
    // The last token stays: what a fenced resource should have seen last.
    assert.equal(value(free, 'tenure_lock_fencing_token', { lock: 'metrics-lock' }), token);
  });

  test('--listen-metrics-urls answers /metrics and /health, and nothing else', async () => {
    const fams = await scrape(metricsUrl);
    assert.equal(value(fams, 'etcd_server_has_leader'), 1);
    const health = await fetch(`${metricsUrl}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { health: 'true' });
    const kv = await fetch(`${metricsUrl}/v3/kv/range`, { method: 'POST', body: '{}' });
    assert.equal(kv.status, 404);
  });

  test("families shared with etcd 3.4 have etcd's type, help, labels and buckets", async () => {
    const etcd = await startCluster({ kind: 'etcd', size: 1, logs: 'ring' });
    let theirs: Map<string, Family>;
    try {
      const kv = new GrpcKv(etcd.endpoints[0] as string);
      try {
        await kv.put('metrics/a', '1'); // so that etcd's histograms and counters have series
      } finally {
        kv.close();
      }
      theirs = await scrape(etcd.endpoints[0] as string);
    } finally {
      await etcd.stop();
    }
    const ours = await scrape(client);
    let compared = 0;
    for (const [name, mine] of ours) {
      if (!/^(etcd|grpc)_/.test(name)) continue;
      const etcdFamily = theirs.get(name);
      // Peer families need a peer (this member has none); etcd exposes handling_seconds only
      // with --metrics=extensive.
      if (etcdFamily === undefined) continue;
      compared++;
      assert.equal(mine.type, etcdFamily.type, `${name}: type`);
      assert.equal(mine.help, etcdFamily.help, `${name}: help`);
      if (etcdFamily.samples.length > 0)
        assert.deepEqual(labelNames(mine), labelNames(etcdFamily), `${name}: labels`);
      if (mine.type === 'histogram' && etcdFamily.samples.length > 0)
        assert.deepEqual(bounds(mine), bounds(etcdFamily), `${name}: buckets`);
    }
    assert.ok(compared >= 30, `compared only ${compared} families`);
  });
});

test('an https:// --listen-metrics-urls needs the client certificate', () => {
  assert.throws(
    () =>
      resolveStartOptions({
        listenMetricsUrls: 'https://127.0.0.1:2381',
      }),
    ConfigError,
  );
  const ok = resolveStartOptions({ listenMetricsUrls: 'http://127.0.0.1:2381' });
  assert.deepEqual(ok.listenMetricsUrls, ['http://127.0.0.1:2381']);
});
