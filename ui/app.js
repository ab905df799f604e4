// The tenure dashboard page: the member's state from /ui/api/state every STATE_REFRESH_MS, and
// between refreshes the events of /ui/api/events (Server-Sent Events) merged into it. Plain
// browser JavaScript, no build step; uPlot (served from its npm package) draws the charts.
'use strict';

(() => {
  /** How often the whole state is fetched again, in ms: events fill in between. */
  const STATE_REFRESH_MS = 5000;
  /** Events listed at most. */
  const EVENTS_SHOWN_MAX = 200;
  /** Samples charted at most (one a second: five minutes). */
  const SAMPLES_MAX = 300;
  /** Waiters named per queue row. */
  const QUEUE_NAMES_MAX = 3;
  const CHART_HEIGHT_PX = 150;
  const NONE = '<span class="dim">—</span>';
  const PALETTE = ['#388bfd', '#2ea043', '#d29922', '#a371f7', '#f85149', '#39c5cf', '#db61a2'];

  /** The last state, with the events since merged in; null before the first fetch. */
  let state = null;
  /** Browser clock ms minus the member's wall clock (for "held for"). */
  let clockOffsetMs = 0;
  let fetchedAtMs = 0;
  let samples = [];
  const events = [];
  const charts = {};
  let renderQueued = false;

  const $ = (id) => document.getElementById(id);

  function esc(v) {
    return String(v).replace(
      /[&<>"']/g,
      (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
    );
  }

  /** " (φ 2.1, 83 ms since its last message)", or what of it is known. */
  function peerDetail(e) {
    const parts = [];
    if (e.phi !== null && e.phi !== undefined) parts.push(`φ ${e.phi.toFixed(1)}`);
    if (e.silentMs !== null) parts.push(`${duration(e.silentMs)} since its last message`);
    return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
  }

  function duration(ms) {
    if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${Math.floor(s % 60)} s`;
    const h = Math.floor(m / 60);
    return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
  }

  function bytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  }

  function clock(atMs) {
    return new Date(atMs).toLocaleTimeString([], { hour12: false });
  }

  function nameOf(id) {
    if (id === null || id === undefined) return 'none';
    const m = state && state.members.find((x) => x.id === id);
    return m && m.name ? m.name : id;
  }

  function roleOf(m, peer) {
    if (m.isSelf) return m.isLearner ? 'learner' : state.member.role;
    // Our connection to it is down, or it went silent where we expect to hear it: whatever
    // it is, it is not answering us.
    if (peer && ((peer.link && !peer.link.connected) || peer.silence === 'suspect'))
      return 'unreachable';
    if (m.isLearner) return 'learner';
    if (m.isLeader) return 'leader';
    return state.member.leader === null ? 'unknown' : 'follower';
  }

  function serverNow() {
    return Date.now() - clockOffsetMs;
  }

  // ---- Fetching and merging ----

  function applyState(s) {
    const now = Date.now();
    clockOffsetMs = now - s.at;
    fetchedAtMs = now;
    for (const l of s.leases.items) l.asOf = now;
    state = s;
    // The server's samples cover what happened before this page opened; the stream's since.
    const byAt = new Map();
    for (const x of [...s.samples, ...samples]) byAt.set(x.at, x);
    samples = [...byAt.values()].sort((a, b) => a.at - b.at).slice(-SAMPLES_MAX);
    queueRender();
  }

  async function fetchState() {
    const r = await fetch('api/state', { cache: 'no-store' });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    applyState(await r.json());
  }

  async function refresh() {
    try {
      await fetchState();
    } catch (e) {
      $('fetched').textContent = `state fetch failed: ${e.message}`;
    } finally {
      setTimeout(refresh, STATE_REFRESH_MS);
    }
  }

  function addEvent(e) {
    events.unshift(e);
    if (events.length > EVENTS_SHOWN_MAX) events.length = EVENTS_SHOWN_MAX;
  }

  function merge(e) {
    if (state === null) return;
    switch (e.type) {
      case 'role':
        // Leading or not changes what the state holds (replication, round trips): fetch it.
        if ((e.role === 'leader') !== (state.member.role === 'leader')) refreshSoon();
        state.member.role = e.role;
        state.member.term = e.term;
        addEvent(e);
        break;
      case 'leader':
        state.member.leader = e.leader;
        state.member.term = e.term;
        for (const m of state.members) m.isLeader = m.id === e.leader;
        state.leaderChanges.push({ term: e.term, leader: e.leader, at: e.at });
        addEvent(e);
        break;
      case 'lease': {
        const items = state.leases.items;
        const i = items.findIndex((l) => l.id === e.id);
        if (e.action === 'granted' && i < 0) {
          items.push({
            id: e.id,
            ttlSeconds: e.ttlSeconds,
            remainingMs: state.member.role === 'leader' ? e.ttlSeconds * 1000 : null,
            keyCount: 0,
            keys: [],
            asOf: Date.now(),
          });
          state.leases.count++;
        } else if (e.action !== 'granted' && i >= 0) {
          items.splice(i, 1);
          state.leases.count = Math.max(0, state.leases.count - 1);
        }
        addEvent(e);
        break;
      }
      case 'lock':
        mergeLock(e);
        addEvent(e);
        break;
      case 'peer': {
        const p = state.peers.find((x) => x.id === e.peer);
        if (p) {
          p.silence = e.silence;
          p.silentMs = e.silentMs;
          p.phi = e.phi;
        }
        addEvent(e);
        break;
      }
      case 'sample': {
        if (samples.length === 0 || e.at > samples[samples.length - 1].at) samples.push(e);
        if (samples.length > SAMPLES_MAX) samples.shift();
        state.member.commitIndex = e.commit;
        state.member.appliedIndex = e.applied;
        state.member.revision = e.revision;
        for (const ps of e.peers) {
          const p = state.peers.find((x) => x.id === ps.id);
          if (!p) continue;
          p.silentMs = ps.silentMs;
          if (ps.lag !== null)
            p.replication = Object.assign({ match: null, next: null }, p.replication, {
              lag: ps.lag,
            });
          else if (e.leader !== state.member.id) p.replication = null;
          if (ps.rttMs !== null) p.rtt = Object.assign({}, p.rtt, { lastMs: ps.rttMs });
        }
        break;
      }
    }
    queueRender();
  }

  function mergeLock(e) {
    const items = state.queues.items;
    let q = items.find((x) => x.name === e.name);
    const entry = { key: e.key, lease: e.lease, token: e.token };
    if (e.action === 'acquired') {
      if (!q) {
        q = { name: e.name, kind: 'lock', waiters: [], waiting: 0 };
        items.push(q);
        state.queues.count++;
      }
      q.waiters = q.waiters.filter((w) => w.key !== e.key);
      // A key created before this revision waited in the queue until now.
      if (e.token < e.revision) q.waiting = Math.max(0, q.waiting - 1);
      q.holder = Object.assign({ value: '', heldSince: e.at, heldSinceApprox: false }, entry);
    } else if (e.action === 'queued' && q) {
      if (!q.waiters.some((w) => w.key === e.key)) q.waiters.push(entry);
      q.waiting++;
    } else if (q && (e.action === 'released' || e.action === 'withdrawn')) {
      if (q.holder && q.holder.key === e.key) q.holder = null;
      q.waiters = q.waiters.filter((w) => w.key !== e.key);
      if (e.action === 'withdrawn') q.waiting = Math.max(0, q.waiting - 1);
      if (!q.holder && q.waiters.length === 0) {
        items.splice(items.indexOf(q), 1);
        state.queues.count = Math.max(0, state.queues.count - 1);
      }
    }
  }

  function connect() {
    const es = new EventSource('api/events');
    let wasDown = false;
    es.onopen = () => {
      $('live').className = 'live on';
      $('live').textContent = 'live';
      // Events missed while the stream was down: the state has their outcome.
      if (wasDown) refreshSoon();
    };
    es.onerror = () => {
      wasDown = true;
      $('live').className = 'live off';
      $('live').textContent = 'reconnecting';
    };
    for (const type of ['role', 'leader', 'lease', 'lock', 'peer', 'sample']) {
      es.addEventListener(type, (m) => merge(JSON.parse(m.data)));
    }
  }

  let soon = null;
  /** One fetch shortly (after the stream came back), besides the regular ones. */
  function refreshSoon() {
    if (soon !== null) return;
    soon = setTimeout(() => {
      soon = null;
      fetchState().catch(() => undefined);
    }, 500);
  }

  // ---- Rendering ----

  function queueRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      render();
    });
  }

  function render() {
    if (state === null) return;
    const me = state.member;
    $('self-name').textContent = me.name || me.id;
    $('self-id').textContent = me.id;
    const role = me.isLearner ? 'learner' : me.role;
    $('self-role').textContent = role;
    $('self-role').className = `badge role-${role}`;
    $('leader-name').textContent = nameOf(me.leader);
    $('term').textContent = me.term;
    $('commit').textContent = me.commitIndex;
    $('applied').textContent = me.appliedIndex;
    $('revision').textContent = me.revision;
    document.title = `tenure · ${me.name} (${role}) · leader ${nameOf(me.leader)}`;
    renderMembers();
    renderChanges();
    renderQueues();
    renderLeases();
    renderEvents();
    renderCharts();
    $('watches').textContent = `watchers ${state.watches.watchers} in ${state.watches.hubs} hubs`;
    $('db-size').textContent =
      `key space ${bytes(me.dbSizeBytes)} of ${bytes(me.dbSizeQuotaBytes)}`;
    tick();
  }

  function renderMembers() {
    const peers = new Map(state.peers.map((p) => [p.id, p]));
    const rows = state.members.map((m) => {
      const p = peers.get(m.id);
      const role = roleOf(m, p);
      const url = m.clientUrls[0];
      const none = '<span class="dim">—</span>';
      const link = url ? `<a href="${esc(url)}/ui/">${esc(url)}</a>` : none;
      const rep = p && p.replication;
      const silence = m.isSelf ? 'self' : p ? p.silence : 'n/a';
      const silenceText = m.isSelf
        ? '<span class="dim">—</span>'
        : `<span class="dot ${silence === 'n/a' ? 'na' : esc(silence)}">${esc(silence)}${
            p && p.phi !== null && silence !== 'n/a' ? ` · φ ${p.phi.toFixed(1)}` : ''
          }${p && p.silentMs !== null && silence !== 'n/a' ? ` · ${duration(p.silentMs)}` : ''}</span>`;
      const linkState = p && p.link ? (p.link.connected ? 'up' : 'down') : null;
      const linkText =
        linkState === null
          ? '<span class="dim">—</span>'
          : `<span class="dot ${linkState}" title="${esc(p.link.error || '')}">${linkState}</span>`;
      return `<tr data-member-id="${esc(m.id)}" data-role="${esc(role)}" class="${
        m.isSelf ? 'self' : ''
      }">
        <td><b>${esc(m.name || '(unstarted)')}</b></td>
        <td class="mono">${esc(m.id)}</td>
        <td><span class="badge role-${esc(role)}">${esc(role)}</span></td>
        <td>${link}</td>
        <td class="num mono">${rep && rep.match !== null ? rep.match : '—'}</td>
        <td class="num mono">${rep && rep.next !== null ? rep.next : '—'}</td>
        <td class="num mono">${rep ? rep.lag : '—'}</td>
        <td class="num mono">${p && p.rtt ? `${p.rtt.lastMs.toFixed(1)} ms` : '—'}</td>
        <td>${silenceText}</td>
        <td>${linkText}</td>
      </tr>`;
    });
    $('members').tBodies[0].innerHTML = rows.join('');
    $('members-view').textContent = `(as ${state.member.name} sees them)`;
    $('members-note').textContent =
      state.member.role === 'leader'
        ? `${state.notes.replication}; ${state.notes.rtt}. ${state.notes.silence}.`
        : `Replication and round trips are known on the leader only: open the leader's ` +
          `dashboard for them. ${state.notes.silence}.`;
  }

  function renderChanges() {
    const items = state.leaderChanges.slice(-12).reverse();
    $('leader-changes').innerHTML = items
      .map(
        (c) =>
          `<li><span class="t">${esc(clock(c.at))}</span>term <b>${esc(c.term)}</b> · ${
            c.leader === null
              ? '<span class="dim">no leader</span>'
              : `<b>${esc(nameOf(c.leader))}</b>`
          }</li>`,
      )
      .join('');
  }

  function renderQueues() {
    const items = state.queues.items;
    $('queue-count').textContent = `(${state.queues.count}${state.queues.truncated ? '+' : ''})`;
    $('queues').tBodies[0].innerHTML =
      items.length === 0
        ? '<tr><td class="empty" colspan="7">no locks or elections held</td></tr>'
        : items
            .map((q) => {
              const h = q.holder;
              const names = q.waiters
                .slice(0, QUEUE_NAMES_MAX)
                .map((w) => `${esc(w.key)} <span class="dim">(${esc(w.token)})</span>`)
                .join(', ');
              const more = q.waiting > QUEUE_NAMES_MAX ? ` … ${q.waiting} waiting` : '';
              const queue =
                q.waiting === 0 ? '<span class="dim">nobody waits</span>' : `${names}${more}`;
              const value = h && h.value ? ` <span class="dim">= ${esc(h.value)}</span>` : '';
              return `<tr data-queue-name="${esc(q.name)}">
                <td><b>${esc(q.name)}</b></td>
                <td>${esc(q.kind)}</td>
                <td class="mono holder">${h ? esc(h.key) + value : NONE}</td>
                <td class="mono">${h ? esc(h.lease) : ''}</td>
                <td class="num mono token">${h ? esc(h.token) : ''}</td>
                <td class="held" data-since="${h && h.heldSince !== null ? h.heldSince : ''}"
                  data-approx="${h && h.heldSinceApprox ? '1' : ''}"></td>
                <td class="wrap">${queue}</td>
              </tr>`;
            })
            .join('');
    $('queues-note').textContent = state.notes.queues;
  }

  function renderLeases() {
    const ls = state.leases;
    $('lease-count').textContent =
      ls.count > ls.items.length ? `(${ls.items.length} of ${ls.count})` : `(${ls.count})`;
    const rows = [...ls.items].sort((a, b) => remainingOf(a) - remainingOf(b));
    $('leases').tBodies[0].innerHTML =
      rows.length === 0
        ? '<tr><td class="empty" colspan="5">no leases</td></tr>'
        : rows
            .map(
              (l) => `<tr data-lease-id="${esc(l.id)}">
                <td class="mono">${esc(l.id)}</td>
                <td class="num mono">${esc(l.ttlSeconds)} s</td>
                <td class="ttl"><div class="bar" data-lease="${esc(l.id)}">
                  <div class="fill"></div><span></span>
                </div></td>
                <td class="num mono">${esc(l.keyCount)}</td>
                <td class="mono wrap">${l.keys.map(esc).join(', ')}${
                  l.keyCount > l.keys.length ? ' …' : ''
                }</td>
              </tr>`,
            )
            .join('');
    $('leases-note').textContent =
      `remaining: ${ls.remainingSource}; it counts down from the last fetch, so a lease that is ` +
      `kept alive jumps back up at the next. ${state.notes.leases}.`;
  }

  function remainingOf(l) {
    if (l.remainingMs === null) return Infinity;
    return Math.max(0, l.remainingMs - (Date.now() - l.asOf));
  }

  function describe(e) {
    switch (e.type) {
      case 'leader':
        return e.leader === null
          ? `no leader (term ${e.term})`
          : `leader is <b>${esc(nameOf(e.leader))}</b> (term ${e.term})`;
      case 'role':
        return `this member is <b>${esc(e.role)}</b> (term ${e.term})`;
      case 'lease':
        return `lease <span class="mono">${esc(e.id)}</span> ${esc(e.action)}${
          e.ttlSeconds !== null ? `, TTL ${e.ttlSeconds} s` : ''
        }`;
      case 'lock':
        return (
          `<b>${esc(e.name)}</b> ${esc(e.action)}: <span class="mono">${esc(e.key)}</span> ` +
          `(token ${esc(e.token)})`
        );
      case 'peer':
        return `peer <b>${esc(nameOf(e.peer))}</b> is ${esc(e.silence)}${peerDetail(e)}`;
      default:
        return esc(e.type);
    }
  }

  function renderEvents() {
    $('events').innerHTML =
      events.length === 0
        ? '<li class="dim">nothing yet: events appear here as they happen</li>'
        : events
            .map(
              (e) =>
                `<li><span class="t">${esc(clock(e.at))}</span><span class="k ${esc(e.type)}">${esc(
                  e.type,
                )}</span> ${describe(e)}</li>`,
            )
            .join('');
  }

  /** Once a second: counters that run between renders (TTL bars, held-for, freshness). */
  function tick() {
    if (state === null) return;
    for (const el of document.querySelectorAll('#leases .bar')) {
      const l = state.leases.items.find((x) => x.id === el.dataset.lease);
      if (!l) continue;
      const fill = el.firstElementChild;
      const label = el.lastElementChild;
      if (l.remainingMs === null) {
        fill.className = 'fill unknown';
        fill.style.width = '';
        label.textContent = 'unknown here (the leader keeps lease time)';
        continue;
      }
      const left = remainingOf(l);
      const frac = Math.max(0, Math.min(1, left / (l.ttlSeconds * 1000)));
      fill.className = `fill${frac < 0.2 ? ' low' : frac < 0.5 ? ' mid' : ''}`;
      fill.style.width = `${(frac * 100).toFixed(1)}%`;
      label.textContent = left <= 0 ? 'expiring…' : duration(left);
    }
    for (const el of document.querySelectorAll('#queues td.held')) {
      const since = Number(el.dataset.since);
      if (!el.dataset.since) el.textContent = 'before this member’s records';
      else
        el.textContent = `${el.dataset.approx ? '≥ ' : ''}${duration(
          Math.max(0, serverNow() - since),
        )}`;
    }
    $('fetched').textContent = `state ${duration(Date.now() - fetchedAtMs)} old`;
  }

  // ---- Charts (uPlot) ----

  function chartWidth(el) {
    return Math.max(260, el.clientWidth || 400);
  }

  function axis(extra) {
    return Object.assign(
      { stroke: '#8b949e', grid: { stroke: '#30363d', width: 1 }, ticks: { stroke: '#30363d' } },
      extra,
    );
  }

  /** Build or update the chart `key` in `el`; rebuilt when its series change. */
  function chart(key, el, series, data, opts) {
    const shape = series.map((s) => s.label).join('|');
    let c = charts[key];
    if (c && c.shape !== shape) {
      c.plot.destroy();
      c = undefined;
    }
    if (!c) {
      const plot = new window.uPlot(
        Object.assign(
          {
            width: chartWidth(el),
            height: CHART_HEIGHT_PX,
            scales: { x: { time: true } },
            legend: { live: false },
            cursor: { drag: { x: false, y: false } },
            series: [{}].concat(series),
          },
          opts,
        ),
        data,
        el,
      );
      c = { plot, shape, el };
      charts[key] = c;
    } else c.plot.setData(data);
  }

  /** At least the last minute, up to now: a chart of a few seconds would tick in ms. */
  function timeRange(now) {
    return (_u, min, max) => [
      Math.min(min === null || min === undefined ? now : min, now - 60),
      Math.max(max === null || max === undefined ? now : max, now),
    ];
  }

  function renderCharts() {
    if (typeof window.uPlot !== 'function') {
      $('charts-note').textContent =
        'Charts need uPlot (npm package uplot), which is missing here.';
      return;
    }
    const now = serverNow() / 1000;
    // Leader over time: one step per change, held until the next, up to now.
    const members = state.members;
    const indexOf = (id) => (id === null ? -1 : members.findIndex((m) => m.id === id));
    const changes = state.leaderChanges;
    const xs = changes.map((c) => c.at / 1000);
    const ys = changes.map((c) => indexOf(c.leader));
    const terms = changes.map((c) => c.term);
    if (changes.length > 0) {
      xs.push(Math.max(now, xs[xs.length - 1]));
      ys.push(ys[ys.length - 1]);
      terms.push(terms[terms.length - 1]);
    }
    const stepped = window.uPlot.paths.stepped({ align: 1 });
    chart(
      'leader',
      $('leader-chart'),
      [
        { label: 'leader', stroke: '#2ea043', width: 2, paths: stepped, points: { show: false } },
        {
          label: 'term',
          stroke: '#8b949e',
          width: 1,
          dash: [4, 4],
          scale: 'term',
          paths: stepped,
          points: { show: false },
        },
      ],
      [xs, ys, terms],
      {
        scales: {
          x: { time: true, range: timeRange(now) },
          y: { range: [-1.5, members.length - 0.5] },
          term: {},
        },
        axes: [
          axis({}),
          axis({
            size: 70,
            splits: () => [-1, ...members.map((_, i) => i)],
            values: (_u, vals) =>
              vals.map((v) => (v === -1 ? 'none' : (members[v] || {}).name || '')),
          }),
          axis({ side: 1, scale: 'term', grid: { show: false }, size: 40 }),
        ],
      },
    );
    const peers = state.peers;
    const sx = samples.map((s) => s.at / 1000);
    const perPeer = (field) =>
      peers.map((p) =>
        samples.map((s) => {
          const ps = s.peers.find((q) => q.id === p.id);
          return ps && ps[field] !== null ? ps[field] : null;
        }),
      );
    const peerSeries = peers.map((p, i) => ({
      label: p.name || p.id,
      stroke: PALETTE[i % PALETTE.length],
      width: 1.5,
      spanGaps: false,
      points: { show: false },
    }));
    chart('lag', $('lag-chart'), peerSeries, [sx, ...perPeer('lag')], {
      axes: [axis({}), axis({ size: 50 })],
      scales: {
        x: { time: true, range: timeRange(now) },
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
      },
    });
    chart('rtt', $('rtt-chart'), peerSeries, [sx, ...perPeer('rttMs')], {
      axes: [axis({}), axis({ size: 50 })],
      scales: {
        x: { time: true, range: timeRange(now) },
        y: { range: (_u, _min, max) => [0, Math.max(1, max)] },
      },
    });
    const anyLeaderData = samples.some((s) => s.peers.some((p) => p.lag !== null));
    $('charts-note').textContent = anyLeaderData
      ? 'One sample a second while this member led; gaps are times it did not.'
      : 'This member has not led in the charted window: lag and round trips are the leader’s.';
  }

  window.addEventListener('resize', () => {
    for (const c of Object.values(charts))
      c.plot.setSize({ width: chartWidth(c.el), height: CHART_HEIGHT_PX });
  });

  setInterval(tick, 1000);
  connect();
  void refresh();
})();
