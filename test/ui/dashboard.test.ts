// The dashboard in a real browser (Debian's chromium, driven by playwright-core) against a real
// 3-member cluster: the page of a follower shows the three members and the leader; after the
// leader is killed by PID (SIGKILL) it shows the new one; a lock taken with the SDK shows its
// holder and the token the SDK got; a lease granted with TTL 3 s and never renewed shows, then
// goes once it expires. Each step leaves a screenshot under .tenure/ui-screenshots/ (gitignored),
// whose paths the test prints. Every wait polls the page with a bound; none judges speed.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { connect, Lock, type Client } from '../../src/client/index.js';
import { startCluster } from '../cluster/cluster.js';
import { eventually } from '../support/poll.js';
import { repoRoot } from '../support/paths.js';

/** Debian's chromium (scripts/test.mjs installs it when missing). */
const CHROMIUM = '/usr/bin/chromium';
/** How long the page may take to show what the cluster did (events, or the 5 s refetch). */
const PAGE_SHOWS_MS = 20_000;
/** A new leader after kill -9: an election timeout or a few, and the page's view of it. */
const NEW_LEADER_MS = 30_000;
/** A 3 s lease's expiry, the leader's 500 ms check, and the page's view of it. */
const LEASE_GONE_MS = 30_000;
const LEASE_TTL_SECONDS = 3;

interface PageView {
  readonly leader: string;
  readonly members: readonly {
    readonly id: string;
    readonly name: string;
    readonly role: string;
    /** The suspicion cell: band, φ and time since the peer's last batch. */
    readonly suspicion: string;
  }[];
  readonly queues: readonly {
    readonly name: string;
    readonly holder: string;
    readonly token: string;
  }[];
  readonly leases: readonly string[];
}

/** What the page shows, read from its DOM (a string: the test has no DOM types). */
const READ_VIEW = `(() => {
  const rows = (sel) => [...document.querySelectorAll(sel)];
  return {
    leader: document.getElementById('leader-name').textContent.trim(),
    members: rows('#members tbody tr[data-member-id]').map((tr) => ({
      id: tr.dataset.memberId,
      name: tr.cells[0].textContent.trim(),
      role: tr.dataset.role,
      suspicion: tr.cells[8].textContent.trim(),
    })),
    queues: rows('#queues tbody tr[data-queue-name]').map((tr) => ({
      name: tr.dataset.queueName,
      holder: tr.querySelector('.holder').textContent.trim(),
      token: tr.querySelector('.token').textContent.trim(),
    })),
    leases: rows('#leases tbody tr[data-lease-id]').map((tr) => tr.dataset.leaseId),
  };
})()`;

function view(page: Page): Promise<PageView> {
  return page.evaluate<PageView>(READ_VIEW);
}

/** Poll the page until `judge` returns a value. */
function pageShows<T>(
  page: Page,
  what: string,
  judge: (v: PageView) => T | undefined,
  timeoutMs = PAGE_SHOWS_MS,
): Promise<T> {
  let last: PageView | undefined;
  return eventually(
    `the page to show ${what}`,
    async () => {
      last = await view(page);
      return judge(last);
    },
    timeoutMs,
  ).catch((e: unknown) => {
    throw new Error(`${String(e)}; the page showed ${JSON.stringify(last)}`);
  });
}

/** etcdctl's rendering of a lease ID, as the page shows it. */
const leaseText = (id: bigint): string => id.toString(16).padStart(16, '0');

test('dashboard: members, a new leader after kill -9, a lock, a lease expiring', async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium`);
  const shots = join(
    repoRoot(),
    '.tenure',
    'ui-screenshots',
    new Date().toISOString().replace(/[:.]/g, '-'),
  );
  mkdirSync(shots, { recursive: true });
  const shoot = async (page: Page, name: string): Promise<void> => {
    const path = join(shots, `${name}.png`);
    await page.screenshot({ path, fullPage: true });
    process.stdout.write(`screenshot: ${path}\n`);
  };
  const cluster = await startCluster({ kind: 'tenure', size: 3 });
  let browser: Browser | undefined;
  let client: Client | undefined;
  try {
    const leader = await cluster.waitReady();
    const follower = (leader + 1) % cluster.size;
    const names = cluster.names;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Chromium's sandbox refuses to run as root.
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1200 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${cluster.endpoints[follower]}/ui/`);

    // Three members, the leader named and badged, the page's own member a follower.
    await pageShows(page, `3 members and leader ${names[leader]}`, (v) => {
      const leaders = v.members.filter((m) => m.role === 'leader');
      return v.members.length === 3 &&
        v.leader === names[leader] &&
        leaders.length === 1 &&
        leaders[0]?.name === names[leader] &&
        // A follower hears the leader: its φ accrual suspicion is shown, and low.
        /^ok · φ \d/.test(leaders[0].suspicion)
        ? true
        : undefined;
    });
    const first = await view(page);
    assert.deepEqual(
      first.members.map((m) => m.name).sort(),
      [...names].sort(),
      'the members are the cluster’s',
    );
    await shoot(page, '1-members');

    // Kill the leader by its PID; the page shows whoever the survivors elect.
    await cluster.kill(leader, 'SIGKILL');
    const next = await cluster.waitReady(NEW_LEADER_MS);
    assert.notEqual(next, leader);
    await pageShows(
      page,
      `the new leader ${names[next]}`,
      (v) =>
        v.leader === names[next] && v.members.find((m) => m.role === 'leader')?.name === names[next]
          ? true
          : undefined,
      NEW_LEADER_MS,
    );
    await shoot(page, '2-new-leader');

    // A lock taken with the SDK: its holder key and its fencing token, as the SDK got it.
    client = await connect({ endpoints: cluster.endpoints.filter((_, i) => i !== leader) });
    const session = await client.session({ ttlSeconds: 10 });
    const lockName = 'ui-test/jobs';
    const grant = await new Lock(client, session, lockName).acquire();
    const shown = await pageShows(page, `the lock ${lockName}`, (v) =>
      v.queues.find((q) => q.name === lockName && q.token !== ''),
    );
    assert.equal(shown.token, grant.token.toString(), 'the page shows the SDK’s token');
    assert.equal(shown.holder, grant.key, 'the page shows the holder’s key');
    assert.ok(grant.key.endsWith(`/${session.leaseId.toString(16)}`), grant.key);
    await shoot(page, '3-lock');

    // A lease nobody renews: listed, then gone after it expires.
    const lease = await client.lease.grant(LEASE_TTL_SECONDS);
    const id = leaseText(lease.id);
    await pageShows(page, `the lease ${id}`, (v) => (v.leases.includes(id) ? true : undefined));
    await shoot(page, '4-lease');
    await pageShows(
      page,
      `the lease ${id} gone after its ${LEASE_TTL_SECONDS} s`,
      (v) => (v.leases.includes(id) ? undefined : true),
      LEASE_GONE_MS,
    );
    await shoot(page, '5-lease-expired');
    const ttl = await client.lease.timeToLive(lease.id);
    assert.equal(ttl.ttlSeconds, -1, 'the lease is gone on the cluster too');

    await grant.release();
    await pageShows(page, `the lock ${lockName} released`, (v) =>
      v.queues.some((q) => q.name === lockName) ? undefined : true,
    );
    await session.close();
    assert.deepEqual(errors, [], 'the page threw no error');
  } finally {
    await client?.close();
    await browser?.close();
    await cluster.stop();
  }
});
