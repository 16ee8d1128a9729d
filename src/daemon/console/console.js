/*
 * console.js — gpupool's web console: one page, hand-written, no library.
 *
 * Security rules kept throughout: the token typed at sign-in is exchanged
 * at once for a console session (short lived, revoked by sign-out and by
 * its timeouts) and then forgotten; only the session's secret is kept, in
 * sessionStorage (this tab only), and travels as a bearer header, never in
 * a URL or a cookie;
 * every string that comes from the API is put in the page as text (el()
 * and textContent), never parsed as HTML; the page loads nothing from
 * anywhere but its own server (the Content-Security-Policy says so too).
 */
'use strict';

(function () {
  const state = {
    session: sessionStorage.getItem('gpupool.session') || '', who: null, timers: [],
    /* The session's idle timeout (ms), when it ends at the latest (this
     * browser's clock), and the reader's last key or click. */
    idleMs: Number(sessionStorage.getItem('gpupool.idle') || '0'),
    endsAt: Number(sessionStorage.getItem('gpupool.ends') || '0'),
    lastInput: Date.now(), watch: 0,
    /* What the page shown holds open (a terminal's WebSocket), closed when it is left. */
    closers: [],
  };
  const $ = (id) => document.getElementById(id);

  /* ---- Building the page as text, never as HTML ---------------------- */

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) {
      if (k === null || k === undefined || k === false) continue;
      e.append(typeof k === 'object' ? k : document.createTextNode(String(k)));
    }
    return e;
  }

  const SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) {
      if (k === null || k === undefined) continue;
      e.append(typeof k === 'object' ? k : document.createTextNode(String(k)));
    }
    return e;
  }

  /* Replaces what parent shows with kids (arrays flattened, nulls left out). */
  function show(parent, ...kids) {
    parent.replaceChildren(...kids.flat(2).filter((k) => k !== null && k !== undefined && k !== false));
  }

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }

  /* ---- Talking to the API --------------------------------------------- */

  async function api(method, path, body, bearer) {
    const headers = { Authorization: 'Bearer ' + (bearer || state.session) };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store', credentials: 'omit', redirect: 'error',
    });
    const type = r.headers.get('Content-Type') || '';
    const data = type.startsWith('application/json') ? await r.json() : await r.text();
    if (!r.ok) {
      const e = new Error(data && data.error ? data.error.message : 'HTTP ' + r.status);
      e.status = r.status;
      e.field = data && data.error ? data.error.field || '' : '';
      if (r.status === 401 && !bearer) signOut('Signed out: ' + e.message);
      throw e;
    }
    return data;
  }

  /* ---- Formatting ------------------------------------------------------ */

  const fmt = {
    gpus: (v) => (v === null || v === undefined ? '–' : v > 0 && v < 0.01 ? v.toPrecision(2) : (Math.round(v * 100) / 100).toString()),
    pct: (v) => (v === null || v === undefined || !isFinite(v) ? '–' : Math.round(v * 100) + ' %'),
    bytes: (b) => (b >= 2 ** 30 ? (b / 2 ** 30).toFixed(1) + ' GiB' : (b / 2 ** 20).toFixed(0) + ' MiB'),
    age: (ms) => {
      const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
      return s < 90 ? s + 's' : s < 5400 ? Math.round(s / 60) + 'm' : s < 172800 ? Math.round(s / 3600) + 'h' : Math.round(s / 86400) + 'd';
    },
    time: (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC',
    /* Never "-0": a rounded zero is zero. */
    money: (v) => (Math.round(v) || 0).toLocaleString('en-US'),
    /* 90 -> "1 minute", 7200 -> "2 hours", 3 days... for how much history there is. */
    span: (s) => {
      const [n, unit] = s < 5400 ? [Math.round(s / 60), 'minute'] : s < 172800 ? [Math.round(s / 3600), 'hour'] : [Math.round(s / 86400), 'day'];
      return n + ' ' + unit + (n === 1 ? '' : 's');
    },
  };

  const PALETTE = ['#2457c5', '#d9822b', '#17a36b', '#b8336a', '#7a4cc2', '#0f8b8d', '#c23a2b', '#6b8e23',
    '#8c564b', '#1f9bd1', '#e0b000', '#5c5c5c'];
  function colour(name) {
    let h = 0;
    for (const c of String(name)) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return PALETTE[h % PALETTE.length];
  }

  /* One colour each for the names shown together, in sorted order: the
   * palette first, then hues spread by the golden angle, so that no two
   * names shown share a colour (a hash of 8 colours gave batch, nlp and ops
   * the same green). */
  function coloursFor(names) {
    const m = new Map();
    [...new Set(names)].sort().forEach((n, i) =>
      m.set(n, i < PALETTE.length ? PALETTE[i] : 'hsl(' + Math.round((i * 137.508) % 360) + ', 60%, 42%)'));
    return m;
  }

  /* A command as a shell would read it back: each word quoted where it must be. */
  function shellQuote(words) {
    return words.map((w) => (/^[A-Za-z0-9_\/.,:=@%+-]+$/.test(w) ? w : "'" + String(w).replace(/'/g, "'\\''") + "'")).join(' ');
  }

  function badge(st) {
    return el('span', { class: 'badge state-' + st }, st);
  }

  const canAdmin = () => state.who && state.who.role !== 'researcher';
  const canAdminQueue = (q) => state.who && (state.who.role === 'admin' ||
    (state.who.role === 'dept-admin' && (q.name === state.who.scope || q.parent === state.who.scope)));

  /* ---- Sign in and navigation ----------------------------------------- */

  /* Leaves the console: the session is revoked at the daemon (unless it
   * has already ended there) and forgotten here; the sign-in form says why. */
  function signOut(why, revoke) {
    for (const c of state.closers) c();
    state.closers = [];
    if (revoke && state.session) {
      fetch('/api/v1/console/session', { method: 'DELETE', headers: { Authorization: 'Bearer ' + state.session },
        cache: 'no-store', credentials: 'omit', keepalive: true }).catch(() => {});
    }
    state.session = '';
    state.who = null;
    clearInterval(state.watch);
    for (const k of ['gpupool.session', 'gpupool.idle', 'gpupool.ends']) sessionStorage.removeItem(k);
    $('nav').hidden = true;
    $('signout').hidden = true;
    $('who').textContent = '';
    $('page').hidden = true;
    $('signin').hidden = false;
    $('signin-error').textContent = why || '';
  }

  /* The page's own refreshes keep the session in use at the daemon, so the
   * idle timeout is also kept here, counted from the reader's last key or
   * click; and the session's end is not waited for until a call fails. */
  function watchSession() {
    clearInterval(state.watch);
    state.lastInput = Date.now();
    state.watch = setInterval(() => {
      if (state.idleMs && Date.now() - state.lastInput > state.idleMs)
        signOut('Signed out after ' + fmt.span(state.idleMs / 1000) + ' without activity; sign in again.', true);
      else if (state.endsAt && Date.now() >= state.endsAt)
        signOut('The console session has reached its lifetime; sign in again.', true);
    }, 1000);
  }

  /* Exchanges token for a console session, then forgets the token. */
  async function signIn(token) {
    let s;
    try {
      s = await api('POST', '/api/v1/console/session', undefined, token);
    } catch (e) {
      signOut('Sign-in failed: ' + e.message);
      return;
    }
    state.session = s.session;
    state.idleMs = s.idle_timeout_s * 1000;
    state.endsAt = Date.now() + s.lifetime_s * 1000;
    sessionStorage.setItem('gpupool.session', state.session);
    sessionStorage.setItem('gpupool.idle', String(state.idleMs));
    sessionStorage.setItem('gpupool.ends', String(state.endsAt));
    await enter();
  }

  /* Shows the console for the session held (after sign-in, or a reload). */
  async function enter() {
    try {
      state.who = await api('GET', '/api/v1/whoami');
    } catch (e) {
      if (state.session) signOut('Sign-in failed: ' + e.message, true);
      return;
    }
    $('signin').hidden = true;
    $('page').hidden = false;
    $('nav').hidden = false;
    $('signout').hidden = false;
    $('who').textContent = state.who.user + ' (' + state.who.role + ')';
    watchSession();
    route();
  }

  const pages = {};

  function route() {
    if (!state.who) return;
    for (const t of state.timers) clearInterval(t);
    state.timers = [];
    /* Open sessions (a terminal's WebSocket) end with the page that shows them. */
    for (const c of state.closers) c();
    state.closers = [];
    const parts = (location.hash || '#/overview').slice(2).split('/');
    const name = pages[parts[0]] ? parts[0] : 'overview';
    for (const a of document.querySelectorAll('nav a'))
      a.classList.toggle('active', a.dataset.page === name || (name === 'workload' && a.dataset.page === 'workloads'));
    /* Each navigation renders into a container of its own: a slow page that
     * answers after the user has moved on fills a detached element, never the
     * page shown now. */
    const page = el('div', {});
    show($('page'), page);
    show(page, el('p', { class: 'muted' }, 'Loading…'));
    pages[name](page, parts.slice(1)).catch((e) => show(page, el('p', { class: 'error' }, e.message)));
  }

  /* ---- Charts: time series in SVG, axes fitted to the data ------------ */

  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function axisLabel(v, max) {
    const digits = Math.max(0, 2 - Math.floor(Math.log10(max)));
    return v.toFixed(Math.min(digits, 6));
  }

  /* series: [{label, colour, dash, points: [[t_ms, value], ...]}]; lines:
   * [{label, value, colour}] drawn across. */
  function lineChart(series, opts) {
    const W = 1000, H = 290, L = 56, R = 12, T = 26, B = 34;
    const all = series.flatMap((s) => s.points);
    const lines = (opts && opts.lines) || [];
    /* Time from the first point recorded (a young pool has no day behind
     * it) to the end of the period; values from 0 to just above the most. */
    const t0 = all.length ? Math.min(...all.map((p) => p[0])) : opts.from, t1 = opts.to;
    const ymax = niceMax(Math.max(...all.map((p) => p[1]), ...lines.map((l) => l.value), 0));
    const x = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - R);
    const y = (v) => T + (1 - v / ymax) * (H - T - B);
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': opts.title || 'chart' });
    for (let i = 0; i <= 4; i++) {
      const v = (ymax * i) / 4;
      g.append(svg('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: '#e3e6ec' }));
      g.append(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6475' }, axisLabel(v, ymax)));
    }
    for (let i = 0; i <= 4; i++) {
      const t = t0 + ((t1 - t0) * i) / 4;
      const d = new Date(t);
      const label = t1 - t0 > 2 * 86400e3 ? d.toISOString().slice(5, 10) : d.toISOString().slice(11, 16);
      /* The first and last labels lean inwards, so that neither is cut at an edge. */
      const anchor = i === 0 ? 'start' : i === 4 ? 'end' : 'middle';
      g.append(svg('text', { x: x(t), y: H - 12, 'text-anchor': anchor, 'font-size': 11, fill: '#5b6475' }, label));
    }
    g.append(svg('text', { x: 4, y: 12, 'font-size': 11, fill: '#5b6475' }, opts.unit || 'GPUs'));
    /* Lines at the same height share one label ("static = pooled 3");
     * labels closer than a line of text are moved apart. */
    const groups = [];
    for (const l of [...lines].sort((a, b) => b.value - a.value)) {
      const last = groups[groups.length - 1];
      if (last && Math.abs(last.value - l.value) < 1e-9) last.labels.push(l);
      else groups.push({ value: l.value, labels: [l] });
    }
    let prevY = -Infinity;
    for (const gr of groups) {
      for (const l of gr.labels)
        g.append(svg('line', { x1: L, x2: W - R, y1: y(l.value), y2: y(l.value), stroke: l.colour, 'stroke-dasharray': '6 4', 'stroke-width': 1.5 }));
      const ly = Math.max(y(gr.value) - 4, prevY + 13);
      prevY = ly;
      const text = gr.labels.map((l) => l.name).join(' = ') + ' ' + fmt.gpus(gr.value);
      g.append(svg('text', { x: W - R - 4, y: ly, 'text-anchor': 'end', 'font-size': 11, fill: gr.labels[0].colour, class: 'line-label' }, text));
    }
    for (const s of series) {
      if (!s.points.length) continue;
      const d = s.points.map((p, i) => (i ? 'L' : 'M') + x(p[0]).toFixed(1) + ' ' + y(p[1]).toFixed(1)).join(' ');
      g.append(svg('path', { d, fill: 'none', stroke: s.colour, 'stroke-width': 2, 'stroke-dasharray': s.dash ? '5 4' : null },
        svg('title', {}, s.label)));
      /* A lone point draws no line: mark it. */
      if (s.points.length === 1)
        g.append(svg('circle', { cx: x(s.points[0][0]), cy: y(s.points[0][1]), r: 3, fill: s.colour }));
    }
    const legend = el('div', { class: 'legend' }, series.map((s) =>
      el('span', {}, el('span', { class: 'swatch', style: null, 'data-c': s.colour }), s.label)));
    for (const sw of legend.querySelectorAll('.swatch')) sw.style.background = sw.dataset.c;
    return el('div', { class: 'chart' }, g, legend);
  }

  /* A step still under way would show as a drop: only whole steps count. */
  const whole = (u, t) => t + u.step <= Date.now() / 1000;

  /* GPU-hours per step -> average GPUs over the step. */
  function perStep(u, key, col) {
    const k = u.keys.find((x) => x.key === key);
    const i = u.columns.indexOf(col);
    if (!k) return [];
    return k.points.filter((p) => p[i] !== null && whole(u, p[0])).map((p) => [p[0] * 1000, (p[i] * 3600) / u.step]);
  }

  /* The sum over keys, per step, from the first step recorded (the axis fits
   * the history there is, not the period asked for). */
  function sumSteps(u, keys, col) {
    const i = u.columns.indexOf(col);
    const m = new Map();
    const first = recordedSteps(u, keys)[0];
    if (first !== undefined) for (let t = first; t < u.to; t += u.step) if (whole(u, t)) m.set(t, 0);
    for (const k of u.keys) if (keys.includes(k.key)) for (const p of k.points) if (p[i] !== null && whole(u, p[0])) m.set(p[0], (m.get(p[0]) || 0) + (p[i] * 3600) / u.step);
    return [...m.entries()].sort((a, b) => a[0] - b[0]).map(([t, v]) => [t * 1000, v]);
  }

  /* ---- Overview ---------------------------------------------------------- */

  pages.overview = async function (page) {
    const span = sessionStorage.getItem('gpupool.span') || '1d';
    const [nodes, queues, pending, usage] = await Promise.all([
      api('GET', '/api/v1/nodes'), api('GET', '/api/v1/queues'),
      api('GET', '/api/v1/workloads?state=pending&limit=10'),
      api('GET', '/api/v1/usage?by=queue&from=' + span + '&step=' + (span === '1d' ? '15m' : '2h')),
    ]);
    const gpus = nodes.nodes.reduce((n, x) => n + x.gpus.length, 0);
    const depts = queues.queues.filter((q) => q.depth === 0);
    const alloc = depts.reduce((n, q) => n + q.allocated.gpu, 0);
    const usedKnown = depts.every((q) => q.used && q.used.gpu !== null);
    const used = depts.reduce((n, q) => n + (q.used && q.used.gpu ? q.used.gpu : 0), 0);
    const npending = depts.reduce((n, q) => n + q.pending, 0);
    show(page, 
      el('h1', {}, 'The pool now'),
      el('div', { class: 'cards' },
        card(gpus, 'GPUs in the pool'), card(fmt.gpus(alloc), 'allocated (' + fmt.pct(alloc / gpus) + ')'),
        card(usedKnown ? fmt.gpus(used) : '–', usedKnown ? 'really busy (' + fmt.pct(used / gpus) + ')' : 'really busy: cannot be measured'),
        card(npending, 'workloads waiting')),
      nodes.emulated ? el('p', { class: 'note' }, 'These GPUs are EMULATED: nothing can measure how busy they are, so "used" is unknown.') : null,
      el('h2', {}, 'Why work waits'),
      pending.workloads.length ? el('table', {}, el('tr', {}, el('th', {}, 'workload'), el('th', {}, 'project'), el('th', {}, 'asks for'), el('th', {}, 'why it waits')),
        pending.workloads.map((w) => el('tr', {}, el('td', {}, el('a', { href: '#/workload/' + w.id }, '#' + w.id + ' ' + w.name)),
          el('td', {}, w.project), el('td', {}, w.request), el('td', { class: 'reason' }, w.pending_reason || 'not yet considered'))))
        : el('p', { class: 'muted' }, 'Nothing waits.'),
      el('h2', {}, 'Allocated against really used, per department'),
      el('div', { class: 'toolbar' }, ['1d', '7d'].map((s) => el('button', {
        type: 'button', class: s === span ? '' : 'secondary',
        onclick: () => { sessionStorage.setItem('gpupool.span', s); route(); },
      }, s === '1d' ? 'Last day' : 'Last week'))),
      usageChart(usage, depts.map((q) => q.name)),
      usageSentence(usage, depts.map((q) => q.name), span));
  };

  function card(v, k) {
    return el('div', { class: 'card' }, el('div', { class: 'v' }, v), el('div', { class: 'k' }, k));
  }

  /* The whole steps of the period that have a record, in seconds since 1970. */
  function recordedSteps(u, keys) {
    const i = u.columns.indexOf('allocated');
    const ts = new Set();
    for (const k of u.keys) if (keys.includes(k.key)) for (const p of k.points) if (p[i] !== null && whole(u, p[0])) ts.add(p[0]);
    return [...ts].sort((a, b) => a - b);
  }

  function usageChart(u, keys) {
    const steps = recordedSteps(u, keys);
    /* A young pool: say how much there is rather than draw a dot or two. */
    if (steps.length < 3)
      return el('p', { class: 'muted', id: 'usage-young' }, steps.length
        ? 'Usage recorded so far: ' + fmt.span(steps.length * u.step) + ' (' + steps.length + ' whole step' + (steps.length === 1 ? '' : 's') + ' of ' +
          fmt.span(u.step) + '). The chart is drawn from three steps on.'
        : 'No whole step of ' + fmt.span(u.step) + ' recorded in this period yet: the chart starts once a few are.');
    const series = [];
    for (const k of keys) {
      series.push({ label: k + ' allocated', colour: colour(k), points: perStep(u, k, 'allocated') });
      series.push({ label: k + ' used', colour: colour(k), dash: true, points: perStep(u, k, 'used') });
    }
    return lineChart(series, { from: u.from * 1000, to: u.to * 1000, title: 'allocated and used GPUs' });
  }

  function usageSentence(u, keys, span) {
    let a = 0, m = 0, us = 0;
    for (const k of u.keys) if (keys.includes(k.key)) { a += k.allocated_gpu_hours; m += k.measured_gpu_hours; us += k.used_gpu_hours || 0; }
    const steps = recordedSteps(u, keys);
    if (!a || !steps.length) return null;
    /* An average over the time recorded, not over a period the pool did not exist for. */
    const secs = Math.min(u.to - steps[0], u.to - u.from);
    const hrs = secs / 3600;
    const over = secs < (span === '1d' ? 86400 : 7 * 86400) - u.step ? 'Over the ' + fmt.span(secs) + ' recorded' : 'Over the ' + (span === '1d' ? 'last day' : 'last week');
    return el('p', { class: 'sentence' }, over + ', departments held ' +
      fmt.gpus(a / hrs) + ' GPUs on average' + (m > 0 ? ' and kept ' + fmt.gpus((us / m) * (a / hrs)) + ' of them busy (' + fmt.pct(us / m) + ').' : '; how busy they were cannot be measured.'));
  }

  /* ---- Quotas ------------------------------------------------------------ */

  pages.quotas = async function (page) {
    const q = await api('GET', '/api/v1/queues');
    const head = ['queue', 'deserved', 'fair share', 'allocated', 'used', 'borrowed', 'lent', 'limit', 'pending', 'running'];
    const rows = q.queues.map((x) => {
      const cells = [
        el('td', { class: 'qname' }, '\u00a0'.repeat(4 * x.depth) + x.name),
        num(fmt.gpus(x.deserved.gpu)), num(fmt.gpus(x.fair_share.gpu)), num(fmt.gpus(x.allocated.gpu)),
        num(x.used ? fmt.gpus(x.used.gpu) : '–'), num(fmt.gpus(x.borrowed ? x.borrowed.gpu : 0)), num(fmt.gpus(x.lent ? x.lent.gpu : 0)),
        num(x.limit.gpu === null ? 'none' : fmt.gpus(x.limit.gpu)), num(x.pending), num(x.running)];
      if (canAdmin()) cells.push(el('td', {}, canAdminQueue(x) ? el('button', { type: 'button', class: 'secondary edit', onclick: (ev) => editQueue(ev.target, x) }, 'Edit') : null));
      return el('tr', { 'data-queue': x.name }, cells);
    });
    show(page, el('h1', {}, 'Quotas'),
      el('p', { class: 'muted' }, 'GPUs. Deserved is guaranteed; fair share is what a queue should hold now; borrowed is held beyond deserved, lent is idle deserved quota others use.'),
      el('table', {}, el('tr', {}, head.map((h, i) => el('th', { class: i ? 'num' : '' }, h)), canAdmin() ? el('th', {}, '') : null), rows),
      q.warnings.map((w) => el('p', { class: 'note' }, w)));
  }

  function num(v) {
    return el('td', { class: 'num' }, v);
  }

  function editQueue(button, q) {
    const des = el('input', { size: 6, value: q.deserved.gpu, 'aria-label': 'deserved GPUs' });
    const lim = el('input', { size: 6, value: q.limit.gpu === null ? 'none' : q.limit.gpu, 'aria-label': 'limit' });
    const err = el('span', { class: 'error' });
    const save = el('button', { type: 'button', onclick: async () => {
      const limit = lim.value.trim() === 'none' ? null : Number(lim.value);
      try {
        await api('PATCH', '/api/v1/queues/' + encodeURIComponent(q.name), { deserved: { gpu: Number(des.value) }, limit: { gpu: limit } });
        route();
      } catch (e) { err.textContent = e.message; }
    } }, 'Save');
    button.replaceWith(el('span', { class: 'toolbar' }, 'deserved ', des, ' limit ', lim, save, err));
  }

  /* ---- Workloads ----------------------------------------------------------- */

  /* The list is ordered and paged by the server (order, cursor): a heading
     asks for its order across all pages, and cursors remembers where each page
     began so Previous can go back. */
  const wlq = { project: '', user: '', state: 'active', cursors: [''], order: 'id', limit: '100' };
  const firstClick = { id: '-id', submitted: '-submitted' };

  pages.workloads = async function (page) {
    const cursor = wlq.cursors[wlq.cursors.length - 1];
    const params = new URLSearchParams({ limit: wlq.limit, order: wlq.order });
    if (cursor) params.set('cursor', cursor);
    for (const k of ['project', 'user']) if (wlq[k]) params.set(k, wlq[k]);
    if (wlq.state !== 'any') params.set('state', wlq.state);
    const r = await api('GET', '/api/v1/workloads?' + params);
    const list = r.workloads;
    const filter = (k, attrs) => el('input', Object.assign({ value: wlq[k], placeholder: k, 'aria-label': k, onchange: (e) => { wlq[k] = e.target.value.trim(); wlq.cursors = ['']; route(); } }, attrs));
    const states = ['active', 'any', 'pending', 'starting', 'running', 'stopping', 'paused', 'suspended', 'succeeded', 'failed', 'deleted'];
    const cols = [['id', 'id'], ['name', 'name'], ['project', 'project'], ['user', 'user'], ['state', 'state'], ['', 'asks for'], ['submitted', 'age'], ['', 'why / outcome']];
    /* A new heading's first click: newest first for id and age, else ascending. */
    const reorder = (k) => { wlq.order = wlq.order === k ? '-' + k : wlq.order === '-' + k ? k : firstClick[k] || k; wlq.cursors = ['']; route(); };
    /* The arrow is the direction of what the column shows (age grows as submitted falls). */
    const arrow = (k) => (wlq.order.replace(/^-/, '') !== k ? '' : (wlq.order[0] === '-') !== (k === 'submitted') ? ' ▼' : ' ▲');
    const table = el('table', { id: 'workloads' },
      el('tr', {}, cols.map(([k, label]) => el('th', { class: k ? 'sortable' : '', onclick: k ? () => reorder(k) : null }, label + (k ? arrow(k) : '')))));
    show(page, el('h1', {}, 'Workloads'),
      el('div', { class: 'toolbar' }, filter('project'), filter('user'),
        el('select', { 'aria-label': 'state', onchange: (e) => { wlq.state = e.target.value; wlq.cursors = ['']; route(); } },
          states.map((s) => el('option', { value: s, selected: s === wlq.state }, s))),
        el('button', { type: 'button', class: 'secondary', disabled: wlq.cursors.length < 2, onclick: () => { wlq.cursors.pop(); route(); } }, '← Previous'),
        el('button', { type: 'button', class: 'secondary', disabled: !r.next_cursor, onclick: () => { wlq.cursors.push(r.next_cursor); route(); } }, 'Next →'),
        el('select', { 'aria-label': 'per page', onchange: (e) => { wlq.limit = e.target.value; wlq.cursors = ['']; route(); } },
          ['10', '100', '1000'].map((n) => el('option', { value: n, selected: n === wlq.limit }, n + ' a page'))),
        el('span', { class: 'muted' }, 'page ' + wlq.cursors.length + ', ' + r.workloads.length + ' shown; click a heading to sort all pages')),
      table);
    /* Rows are made as they come into view, a hundred at a time: a page of
     * 1,000 draws its first screen at once instead of laying out every row. */
    const row = (w, i) => {
      /* A reason the row above gives already is not written again. */
      const why = w.pending_reason || w.reason || '';
      const prev = i ? list[i - 1].pending_reason || list[i - 1].reason || '' : '';
      return el('tr', { 'data-id': w.id },
        el('td', {}, el('a', { href: '#/workload/' + w.id }, '#' + w.id)), el('td', { class: 'wname' }, w.name), el('td', {}, w.project),
        el('td', {}, w.user), el('td', {}, badge(w.state)), el('td', {}, w.request), el('td', {}, fmt.age(w.submitted_ms)),
        why && why === prev ? el('td', { class: 'muted ditto', title: why }, 'same as above') : el('td', { class: 'why' }, why));
    };
    let made = 0;
    const more = el('tr', { class: 'more' }, el('td', { colspan: cols.length, class: 'muted' }, 'more rows below…'));
    const grow = () => {
      const end = Math.min(list.length, made + 100);
      const rows = [];
      for (; made < end; made++) rows.push(row(list[made], made));
      more.remove();
      table.append(...rows);
      if (made < list.length) table.append(more);
    };
    grow();
    if (made < list.length) {
      const seen = new IntersectionObserver((es) => {
        if (!table.isConnected) seen.disconnect();
        else if (es.some((e) => e.isIntersecting)) grow();
        if (made >= list.length) seen.disconnect();
      });
      seen.observe(more);
    }
  };

  /* ---- Sessions: a workload's terminal (xterm.js) and its notebook -------- */

  /* The channel's message types (src/common/gp_channel.h, docs/api.md). */
  const CH = { STDIN: 1, STDOUT: 2, STDERR: 3, RESIZE: 4, EXIT: 6, ERROR: 8, READY: 9, HELLO: 10 };

  /* xterm.js (vendored, src/daemon/console/vendor/) is loaded the first time
   * a terminal is shown: the other pages never fetch its half a megabyte. */
  let xtermLoading = null;
  function loadXterm() {
    const add = (tag, attrs) => new Promise((resolve, reject) => document.head.append(el(tag, Object.assign({
      onload: resolve, onerror: () => reject(new Error('the terminal could not be loaded (' + (attrs.src || attrs.href) + ')')),
    }, attrs))));
    if (!xtermLoading) {
      /* Its style sheet first: the terminal measures its cells when it opens. */
      xtermLoading = add('link', { rel: 'stylesheet', href: '/console/xterm.css' })
        .then(() => add('script', { src: '/console/xterm.js' })).then(() => add('script', { src: '/console/xterm-addon-fit.js' }));
      xtermLoading.catch(() => { xtermLoading = null; });
    }
    return xtermLoading;
  }

  /* xterm.js writes the styles it computes (cell sizes, colours, cursor) into
   * <style> elements, which the console's Content-Security-Policy (style-src
   * 'self', no inline styles) rightly refuses to apply. Their text is applied
   * instead as constructed style sheets, which the policy does not govern, so
   * the policy stays strict for everything else. Returns a function that
   * stops following root and takes its sheets off the document. */
  function adoptStyles(root) {
    const sheets = new Map();
    const sync = () => {
      for (const s of root.querySelectorAll('style')) {
        let e = sheets.get(s);
        if (!e) {
          e = { sheet: new CSSStyleSheet(), text: null };
          sheets.set(s, e);
          document.adoptedStyleSheets = [...document.adoptedStyleSheets, e.sheet];
        }
        if (e.text !== s.textContent) {
          e.text = s.textContent;
          e.sheet.replaceSync(e.text);
        }
      }
    };
    const watch = new MutationObserver(sync);
    watch.observe(root, { subtree: true, childList: true, characterData: true });
    sync();
    return () => {
      watch.disconnect();
      const mine = new Set([...sheets.values()].map((e) => e.sheet));
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => !mine.has(s));
    };
  }

  /* Why a workload's page shows no terminal, or null when it may show one:
   * only the workload's own user may attach (administrators included: they
   * may stop a session, not type into it), and only to an interactive one. */
  function noTerminal(w) {
    if (!w.spec || !w.spec.tty)
      return 'This workload has no terminal: it was not started as an interactive session (gpupool run -it, or Start a notebook).';
    if (w.user !== state.who.user)
      return 'The terminal is for ' + w.user + ' only: only a session\'s own user may type into it (others may see its state; ' +
        'an administrator may stop it).';
    return null;
  }

  /* Opens the terminal of workload id in box, attached over the session
   * WebSocket (the console session's secret goes in the first message,
   * never in the URL), and
   * writes what happens to status: connected, ended (with its exit code or
   * reason) or dropped (with a Reconnect button). onOutput gets each piece
   * of output as bytes. Returns a function that closes it. */
  function openTerminal(box, status, id, onOutput) {
    const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace' });
    const fit = new FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(box);
    const unstyle = adoptStyles(box);
    let ws = null, ended = false, closed = false;
    const enc = new TextEncoder(), dec = new TextDecoder();
    const say = (cls, text, ...more) => show(status, el('span', { class: 'term-' + cls }, text), ...more);
    const send = (type, bytes) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) return;
      const m = new Uint8Array(1 + bytes.length);
      m[0] = type;
      m.set(bytes, 1);
      ws.send(m);
    };
    const size = () => new Uint8Array([term.rows >> 8, term.rows & 255, term.cols >> 8, term.cols & 255]);
    const reconnect = () => el('button', { type: 'button', class: 'secondary', id: 'term-reconnect', onclick: connect }, 'Reconnect');
    function connect() {
      ended = false;
      /* The daemon replays the recent output first: start from a clean screen. */
      term.reset();
      say('connecting', 'Connecting…');
      ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/api/v1/workloads/' + id + '/attach');
      ws.binaryType = 'arraybuffer';
      ws.onopen = () => send(CH.HELLO, enc.encode(JSON.stringify({ token: state.session, rows: term.rows, cols: term.cols })));
      ws.onmessage = (ev) => {
        const m = new Uint8Array(ev.data);
        if (!m.length) return;
        const p = m.subarray(1);
        if (m[0] === CH.READY) {
          say('connected', 'Connected: what you type here goes to the workload.');
          term.focus();
        } else if (m[0] === CH.STDOUT || m[0] === CH.STDERR) {
          term.write(p);
          onOutput(p);
        } else if (m[0] === CH.EXIT && p.length >= 8) {
          ended = true;
          const d = new DataView(p.buffer, p.byteOffset, p.byteLength);
          const code = d.getInt32(0), sig = d.getInt32(4);
          say('ended', 'The session has ended: ' + (sig ? 'its command was killed by signal ' + sig : 'its command exited with code ' + code) + '.');
        } else if (m[0] === CH.ERROR) {
          ended = true;
          say('ended', 'The session has ended: ' + dec.decode(p), ' ', reconnect());
        }
      };
      ws.onclose = () => {
        if (!ended && !closed) say('dropped', 'The connection to the session dropped; the workload goes on running.', ' ', reconnect());
      };
    }
    /* Typing here is activity (the console's idle sign-out): xterm.js keeps
     * the keys it takes from the window's listeners. */
    term.onData((s) => {
      state.lastInput = Date.now();
      send(CH.STDIN, enc.encode(s));
    });
    term.onBinary((s) => send(CH.STDIN, Uint8Array.from(s, (c) => c.charCodeAt(0) & 255)));
    term.onResize(() => send(CH.RESIZE, size()));
    const sized = new ResizeObserver(() => { if (box.isConnected) fit.fit(); });
    sized.observe(box);
    fit.fit();
    connect();
    return () => {
      closed = true;
      sized.disconnect();
      if (ws) ws.close();
      unstyle();
      term.dispose();
    };
  }

  /* A Jupyter server's address in its output ("http://127.0.0.1:PORT/?token=T",
   * or ".../tree?token=T"), or null. Jupyter shows "..." for a token it did
   * not make (JUPYTER_TOKEN given, as gpupool notebook does). */
  function jupyterAddress(text) {
    const re = /http:\/\/(?:127\.0\.0\.1|localhost):(\d+)\/[\w/]*\?token=([0-9a-zA-Z]+|\.\.\.)/g;
    let m, last = null;
    while ((m = re.exec(text))) last = { port: Number(m[1]), token: m[2] };
    return last;
  }

  const isNotebook = (w) => w.spec && Array.isArray(w.spec.command) && /(^|\/)jupyter(-notebook|-lab)?$/.test(w.spec.command[0] || '');

  /* How to reach the notebook of workload w from the user's own computer:
   * the port-forward command with its id and Jupyter's port, and the URL
   * with Jupyter's token once the server has printed it. */
  function notebookHelp(box, w, found) {
    const local = 8888;
    const fromEnv = w.spec.env && w.spec.env.JUPYTER_TOKEN;
    const token = found && found.token !== '...' ? found.token : fromEnv || null;
    const portArg = (w.spec.command.find((a) => /^--port=\d+$/.test(a)) || '').slice(7);
    const port = found ? found.port : Number(portArg) || null;
    if (!found || !token || !port) {
      show(box, el('p', { class: 'muted', id: 'notebook-wait' }, w.state === 'running'
        ? 'Jupyter is starting: its address appears here once it has printed it (below, in its terminal).'
        : 'Jupyter starts once the workload runs (it is ' + w.state + ').'));
      return;
    }
    const url = 'http://127.0.0.1:' + local + '/?token=' + token;
    show(box,
      el('p', {}, 'Jupyter is ready in this workload, on its port ' + port + '. To reach it from your computer, forward a local port to it (this stays in the foreground; Ctrl-C stops it):'),
      el('pre', { class: 'command', id: 'notebook-forward' }, 'gpupool port-forward ' + w.id + ' ' + local + ':' + port),
      el('p', {}, 'then open, in your browser:'),
      el('pre', { class: 'command', id: 'notebook-url' }, url),
      el('p', { class: 'muted' }, 'The token is Jupyter\'s own: anyone with it can run code as you in this workload, so keep it to yourself. ' +
        'Another free local port works as well as ' + local + ' (change it in both lines). Deleting the workload stops the notebook.'));
  }

  /* The Terminal section of workload w's page, and its Notebook section for
   * a Jupyter workload; both end when the page is left (state.closers). */
  async function sessionSections(w) {
    const why = noTerminal(w);
    const nb = isNotebook(w);
    const nbBox = el('div', { id: 'notebook' });
    const head = [nb ? el('h2', {}, 'Notebook') : null, nb ? nbBox : null, el('h2', {}, 'Terminal')];
    if (why) {
      if (nb) show(nbBox, el('p', { class: 'muted' }, w.user !== state.who.user ? 'Only ' + w.user + ' may reach this notebook.'
        : 'Its address is read from its terminal, which this workload does not have: see its log below.'));
      return [head, el('p', { class: 'note', id: 'no-terminal' }, why)];
    }
    if (nb) notebookHelp(nbBox, w, null);
    if (w.state !== 'running')
      return [head, el('p', { class: 'muted', id: 'no-terminal' }, ['pending', 'starting'].includes(w.state)
        ? 'The terminal opens here once the workload runs (it is ' + w.state + ').'
        : w.state === 'suspended' ? 'The session is suspended and its GPUs are back in the pool (its events say why): Resume brings it back, ' +
          'and its terminal opens here once it runs.'
          : w.state === 'paused' ? 'The session is paused: its processes are kept as they are and its GPUs are back in the pool (its events say why). ' +
          'Resume brings it back where it was, and its terminal opens here once it runs.'
          : 'The session is over (the workload is ' + w.state + '): there is no terminal to attach to.')];
    const status = el('div', { class: 'toolbar', id: 'term-status' });
    const box = el('div', { class: 'terminal', id: 'terminal' });
    /* Jupyter's address is looked for in the session's output, which keeps
     * its recent part (the daemon's replay holds the start-up lines). */
    let text = '';
    const seen = (bytes) => {
      if (!nb) return;
      text = (text + new TextDecoder().decode(bytes)).slice(-16384);
      const found = jupyterAddress(text);
      if (found) notebookHelp(nbBox, w, found);
    };
    try {
      await loadXterm();
    } catch (e) {
      return [head, el('p', { class: 'error', id: 'no-terminal' }, e.message)];
    }
    /* Opened once the section is in the page: xterm.js measures its box. */
    requestAnimationFrame(() => {
      if (!box.isConnected) return;
      state.closers.push(openTerminal(box, status, w.id, seen));
    });
    return [head, status, box];
  }

  pages.workload = async function (page, args) {
    const id = Number(args[0]);
    const [w, ev] = await Promise.all([api('GET', '/api/v1/workloads/' + id), api('GET', '/api/v1/workloads/' + id + '/events')]);
    const mine = state.who.role !== 'researcher' || w.user === state.who.user;
    const act = (label, method, path, cls) => el('button', { type: 'button', class: cls || 'secondary', 'data-action': label.toLowerCase(), onclick: async () => {
      try { await api(method, path); route(); } catch (e) { $('action-error').textContent = e.message; }
    } }, label);
    const actions = [];
    if (mine && ['pending', 'starting', 'running', 'stopping', 'paused', 'suspended'].includes(w.state)) actions.push(act('Delete', 'DELETE', '/api/v1/workloads/' + id, 'danger'));
    if (mine && ['pending', 'starting', 'running'].includes(w.state)) actions.push(act('Suspend', 'POST', '/api/v1/workloads/' + id + '/suspend'));
    /* A paused workload resumes where it was: one the idle policy paused
     * waits for this; one paused for reclaim resumes by itself once its
     * node has a GPU free (the daemon's answer says so). */
    if (mine && ['paused', 'suspended'].includes(w.state)) actions.push(act('Resume', 'POST', '/api/v1/workloads/' + id + '/resume'));
    const log = el('pre', { class: 'log', id: 'log' });
    const sessions = w.spec && w.spec.tty || isNotebook(w) ? await sessionSections(w)
      : [el('h2', {}, 'Terminal'), el('p', { class: 'muted', id: 'no-terminal' }, noTerminal(w))];
    show(page, 
      el('h1', {}, 'Workload #' + w.id + ' ', el('span', { class: 'wname' }, w.name)),
      el('div', { class: 'toolbar' }, actions, el('span', { class: 'error', id: 'action-error' })),
      el('table', {}, [['state', badge(w.state)], ['project', w.project], ['user', w.user], ['asks for', w.request],
        ['submitted', fmt.time(w.submitted_ms)], ['attempt', w.attempt], ['why it waits', w.pending_reason], ['outcome', w.reason],
        ['when evicted', w.spec && w.spec.on_preempt ? onPreemptText(w.spec.on_preempt) : ''],
        ['command', w.spec && w.spec.command ? el('code', { class: 'command' }, shellQuote(w.spec.command)) : ''],
        ['working directory', w.spec && w.spec.workdir ? w.spec.workdir : '']]
        .filter((r) => r[1] !== undefined && r[1] !== '')
        .map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', { class: k === 'why it waits' ? 'reason' : '' }, v)))),
      /* A session's terminal comes first: it is what its user came for (and
       * xterm.js draws nothing while it is out of view). */
      sessions,
      el('h2', {}, 'Attempts'),
      ev.attempts.length ? el('table', {}, el('tr', {}, ['attempt', 'node', 'started', 'ended', 'outcome', 'reason'].map((h) => el('th', {}, h))),
        ev.attempts.map((a) => el('tr', {}, el('td', {}, a.attempt), el('td', {}, a.node), el('td', {}, a.started_ms > 0 ? fmt.time(a.started_ms) : ''),
          el('td', {}, a.ended_ms > 0 ? fmt.time(a.ended_ms) : ''), el('td', {}, a.outcome), el('td', {}, a.reason || ''))))
        : el('p', { class: 'muted' }, 'Not started yet.'),
      el('h2', {}, 'Events'),
      el('table', {}, ev.events.map((e) => el('tr', {}, el('td', {}, fmt.time(e.ts_ms)), el('td', {}, e.kind), el('td', {}, e.message)))),
      el('h2', {}, 'Log (live)'), log);
    let offset = 0;
    const tail = async () => {
      const r = await fetch('/api/v1/workloads/' + id + '/logs?offset=' + offset, { headers: { Authorization: 'Bearer ' + state.session }, cache: 'no-store', credentials: 'omit' });
      if (!r.ok) return;
      const buf = await r.arrayBuffer();
      /* Where the answer begins: past offset when the output between was
       * rotated away (the daemon says so in X-Log-Offset). */
      const at = Number(r.headers.get('X-Log-Offset') || '0');
      offset = Math.max(offset, at) + buf.byteLength;
      if (!buf.byteLength) return;
      /* Follow the end as the task writes, unless the reader scrolled up. */
      const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
      log.append(document.createTextNode(new TextDecoder().decode(buf)));
      if (atEnd) log.scrollTop = log.scrollHeight;
    };
    await tail();
    /* The tail stops by itself once its page is no longer shown (the page may
     * have been left while the first tail was still on its way). */
    const timer = setInterval(() => (log.isConnected ? tail().catch(() => {}) : clearInterval(timer)), 2000);
    state.timers.push(timer);
  };

  /* How each eviction mode (on_preempt) treats a workload, for people. */
  const onPreemptHelp = {
    pause: 'its GPU state is moved to host memory and it is frozen, then resumed where it was',
    checkpoint: 'it gets the checkpoint signal and its grace period, then stops and starts again from what it saved',
    requeue: 'it is stopped at once and starts again from the beginning',
  };
  const onPreemptText = (m) => m + (onPreemptHelp[m] ? ': ' + onPreemptHelp[m] : '');

  /* ---- Submit ---------------------------------------------------------------- */

  pages.submit = async function (page) {
    const q = await api('GET', '/api/v1/queues');
    const projects = q.queues.filter((x) => x.leaf && x.depth > 0 && maySubmit(q.queues, x)).map((x) => x.name);
    if (!projects.length) {
      show(page, el('h1', {}, 'Submit a workload'),
        el('p', { class: 'note', id: 'no-project' }, 'This token may submit to no project (its scope: ' + (state.who.scope || 'none') +
          '). An administrator gives one with gpupool token create --scope PROJECT.'));
      return;
    }
    const home = state.who.home || '';
    const fields = [
      ['project', 'Project', el('select', { id: 'f-project' }, projects.map((p) => el('option', { value: p }, p)))],
      ['name', 'Name', el('input', { id: 'f-name', placeholder: 'a label for people' })],
      ['command', 'Command', el('input', { id: 'f-command', placeholder: 'python train.py --epochs 3', size: 40 })],
      ['workdir', 'Working directory', el('input', { id: 'f-workdir', value: home, size: 40,
        placeholder: 'an absolute path on the node (empty: the checkpoint directory)' })],
      ['gpu', 'GPUs', el('input', { id: 'f-gpu', placeholder: '0.5 (half a GPU), 1, 2…' })],
      ['gpu_memory', 'GPU memory', el('input', { id: 'f-gpu_memory', placeholder: '20G (instead of GPUs)' })],
      ['cpu', 'CPU cores', el('input', { id: 'f-cpu', placeholder: '4' })],
      ['memory', 'Memory', el('input', { id: 'f-memory', placeholder: '32G' })],
      ['gang', 'Gang (tasks)', el('input', { id: 'f-gang', placeholder: '1' })],
      ['priority', 'Priority', el('input', { id: 'f-priority', placeholder: '0 (-1000..1000)' })],
      ['grace', 'Grace period', el('input', { id: 'f-grace', placeholder: '30s before it is stopped' })],
      ['on_preempt', 'When evicted', el('select', { id: 'f-on_preempt' }, el('option', { value: '' }, 'the project\'s default'),
        ['pause', 'checkpoint', 'requeue'].map((m) => el('option', { value: m }, onPreemptText(m))))],
    ];
    /* The project's default mode, named in the first choice. */
    const modes = fields.find((f) => f[0] === 'on_preempt')[2];
    const project = fields[0][2];
    const showDefault = () => {
      const qi = q.queues.find((x) => x.name === project.value);
      modes.options[0].textContent = 'the project\'s default' + (qi && qi.on_preempt ? ' (' + qi.on_preempt + ')' : '');
    };
    project.addEventListener('change', showDefault);
    showDefault();
    const general = el('p', { class: 'error', id: 'err-general' });
    const form = el('form', { id: 'submit-form' }, fields.map(([k, label, input]) =>
      el('div', { class: 'field' }, el('label', { for: input.id }, label), input, el('span', { class: 'error', id: 'err-' + k }))),
    el('button', { type: 'submit' }, 'Submit'), general);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      for (const e of form.querySelectorAll('.error')) e.textContent = '';
      const body = {};
      for (const [k, , input] of fields) {
        const v = input.value.trim();
        if (!v) continue;
        if (k === 'command') body.command = ['sh', '-c', v];
        else if (k === 'gang' || k === 'priority') body[k] = /^-?\d+$/.test(v) ? Number(v) : v;
        else body[k] = v;
      }
      try {
        const r = await api('POST', '/api/v1/workloads', body);
        location.hash = '#/workload/' + r.id;
      } catch (e) {
        const slot = $('err-' + (e.field || '').split('.')[0]);
        (slot || general).textContent = e.message;
      }
    });
    show(page, el('h1', {}, 'Submit a workload'),
      el('p', { class: 'muted' }, 'The command runs with sh -c in the working directory (your home directory unless you change it; relative paths in the command start there). ' +
        'Ask for a fraction of one GPU ("0.5"), whole GPUs, or an amount of GPU memory.'), form, notebookForm(projects, home));
  };
  /* "Start a notebook": an interactive Jupyter workload as gpupool notebook
   * submits it (a terminal, the interactive kind, not preemptible), on a port
   * of its own in the task; its page then says how to reach it. */
  function notebookForm(projects, home) {
    const project = el('select', { id: 'nb-project' }, projects.map((p) => el('option', { value: p }, p)));
    const gpu = el('input', { id: 'nb-gpu', value: '0.25', placeholder: '0.25 (a quarter of a GPU)' });
    const workdir = el('input', { id: 'nb-workdir', value: home, size: 40, placeholder: 'the notebooks\' directory on the node' });
    const err = el('p', { class: 'error', id: 'nb-error' });
    const form = el('form', { id: 'notebook-form' },
      el('div', { class: 'field' }, el('label', { for: 'nb-project' }, 'Project'), project),
      el('div', { class: 'field' }, el('label', { for: 'nb-gpu' }, 'GPUs'), gpu),
      el('div', { class: 'field' }, el('label', { for: 'nb-workdir' }, 'Notebook directory'), workdir),
      el('button', { type: 'submit' }, 'Start a notebook'), err);
    form.addEventListener('input', () => { err.textContent = ''; });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      err.textContent = '';
      const port = 20000 + (crypto.getRandomValues(new Uint16Array(1))[0] % 40000);
      /* Jupyter refuses root without --allow-root: given only where the
       * daemon says this token's tasks run as root. */
      const command = ['jupyter', 'notebook', '--no-browser', '--ip=127.0.0.1', '--port=' + port, '--port-retries=0']
        .concat(state.who.runs_as_root ? ['--allow-root'] : []);
      /* Jupyter's token, given as gpupool notebook gives it: one Jupyter
       * makes itself it prints into its output, the workload's log, which
       * every member of the project may read; JUPYTER_TOKEN's value only
       * the submitter and admins see. */
      const token = Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => b.toString(16).padStart(2, '0')).join('');
      const body = { project: project.value, name: 'notebook', tty: true, kind: 'interactive', preemptible: false, command, env: { JUPYTER_TOKEN: token } };
      if (gpu.value.trim()) body.gpu = gpu.value.trim();
      if (workdir.value.trim()) body.workdir = workdir.value.trim();
      try {
        const r = await api('POST', '/api/v1/workloads', body);
        location.hash = '#/workload/' + r.id;
      } catch (e) {
        err.textContent = e.message;
      }
    });
    return [el('h2', {}, 'Start a notebook'),
      el('p', { class: 'muted' }, 'A Jupyter server in an interactive workload, running as you (like gpupool notebook). ' +
        'Its page then tells you how to reach it: the gpupool port-forward command and Jupyter\'s token.'), form];
  }


  /* Whether the signed-in token may submit to leaf x: admins anywhere,
   * department admins below their department, researchers to the projects
   * their scope lists (as the daemon decides). */
  function maySubmit(queues, x) {
    const who = state.who;
    if (who.role === 'admin') return true;
    if (who.role === 'researcher') return who.scope.split(',').includes(x.name);
    const byName = new Map(queues.map((y) => [y.name, y]));
    for (let y = x; y; y = byName.get(y.parent)) if (y.name === who.scope) return true;
    return false;
  }

  /* ---- Nodes ------------------------------------------------------------------ */

  pages.nodes = async function (page) {
    const r = await api('GET', '/api/v1/nodes');
    const projects = new Set();
    for (const n of r.nodes) for (const g of n.gpus) for (const s of g.slices) projects.add(s.project);
    const pc = coloursFor([...projects]);
    const rows = [];
    for (const n of r.nodes) {
      rows.push(el('h2', {}, n.name + ' ', el('span', { class: 'muted' }, n.domain + ', ' + n.cpu + ' cores, ' + fmt.bytes(n.memory))));
      /* What its tasks asked for, and what the node really uses. */
      const inUse = (v, f) => (v === null || v === undefined ? 'not measured' : f(v) + ' in use');
      rows.push(el('p', { class: 'muted node-use', 'data-node': n.name },
        'CPU: ' + fmt.gpus(n.cpu_used) + ' cores asked, ' + inUse(n.cpu_in_use, fmt.gpus) +
        '; memory: ' + fmt.bytes(n.memory_used) + ' asked, ' + inUse(n.memory_in_use, fmt.bytes)));
      for (const g of n.gpus) {
        const bar = svg('svg', { viewBox: '0 0 1000 24', width: '100%', height: 24, role: 'img', 'aria-label': 'slices of GPU ' + g.index });
        bar.append(svg('rect', { x: 0, y: 0, width: 1000, height: 24, fill: '#eef0f4' }));
        let x = 0;
        for (const s of g.slices) {
          const w = s.gpu * 1000;
          bar.append(svg('rect', { x, y: 0, width: Math.max(1, w - 2), height: 24, fill: pc.get(s.project), 'data-project': s.project },
            svg('title', {}, s.project + ': workload ' + s.workload + ', ' + s.gpu + ' GPU, ' + fmt.bytes(s.memory_cap) + ' cap')));
          x += w;
        }
        rows.push(el('div', { class: 'gpu' }, el('span', {}, 'GPU ' + g.index + ' ' + g.model + (g.mig ? ' (MIG)' : '')), bar,
          el('span', { class: 'muted' }, fmt.gpus(g.allocated) + ' allocated, ' + fmt.bytes(g.memory_used) + ' of ' + fmt.bytes(g.memory) + ' used')));
      }
    }
    const legend = el('div', { class: 'legend', id: 'node-legend' }, [...projects].sort().map((p) => el('span', {}, el('span', { class: 'swatch', 'data-c': pc.get(p) }), p)));
    for (const sw of legend.querySelectorAll('.swatch')) sw.style.background = sw.dataset.c;
    show(page, el('h1', {}, 'Nodes and GPUs'),
      r.emulated ? el('p', { class: 'note' }, 'EMULATED GPUs: no real GPU is used, and memory use cannot be measured.') : null,
      el('p', { class: 'muted' }, 'Each bar is one GPU; each coloured part a slice, by project.'), legend, rows);
  };

  /* ---- Usage: GPU-hours per department and project, for chargeback ------------- */

  const USAGE_COLS = [['allocated_gpu_hours', 'allocated'], ['used_gpu_hours', 'used'], ['idle_gpu_hours', 'idle'],
    ['used_percent', 'used %'], ['borrowed_gpu_hours', 'borrowed'], ['lent_gpu_hours', 'lent'],
    ['returned_gpu_hours', 'returned (idle sessions)']];

  pages.usage = async function (page) {
    const from = sessionStorage.getItem('gpupool.usagefrom') || '7d';
    const to = sessionStorage.getItem('gpupool.usageto') || '';
    const u = await api('GET', '/api/v1/usage?by=queue&from=' + encodeURIComponent(from) + (to ? '&to=' + encodeURIComponent(to) : ''));
    /* The tree: each department, then its projects below it. */
    const byParent = new Map();
    for (const k of u.keys) {
      const p = k.parent || '';
      if (!byParent.has(p)) byParent.set(p, []);
      byParent.get(p).push(k);
    }
    const ordered = [];
    const walk = (p, depth) => { for (const k of (byParent.get(p) || []).sort((a, b) => a.key.localeCompare(b.key))) { ordered.push([k, depth]); walk(k.key, depth + 1); } };
    walk('', 0);
    const cell = (v, key) => (v === null || v === undefined ? '–' : key === 'used_percent' ? v.toFixed(1) : v.toFixed(2));
    const top = u.keys.filter((k) => !k.parent);
    const total = (key) => (top.some((k) => k[key] === null) ? null : top.reduce((n, k) => n + k[key], 0));
    const period = fmt.time(u.from * 1000) + ' to ' + fmt.time(u.to * 1000);
    const csv = () => {
      const head = ['from', 'to', 'queue', 'parent'].concat(USAGE_COLS.map(([k]) => k)).join(',');
      const iso = (s) => new Date(s * 1000).toISOString().replace(/\.000Z$/, 'Z');
      /* Queue names are checked by the daemon: no commas or quotes. */
      const lines = ordered.map(([k]) => [iso(u.from), iso(u.to), k.key, k.parent || ''].concat(USAGE_COLS.map(([c]) => (k[c] === null ? '' : k[c].toFixed(3)))).join(','));
      return head + '\n' + lines.join('\n') + '\n';
    };
    const download = el('button', { type: 'button', id: 'usage-csv', onclick: () => {
      const a = el('a', { href: URL.createObjectURL(new Blob([csv()], { type: 'text/csv' })), download: 'gpupool-usage.csv' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } }, 'Download CSV');
    const setPeriod = (f, t) => { sessionStorage.setItem('gpupool.usagefrom', f); sessionStorage.setItem('gpupool.usageto', t); route(); };
    const fromIn = el('input', { type: 'date', id: 'usage-from', 'aria-label': 'from', value: /^\d{4}-\d\d-\d\d$/.test(from) ? from : '' });
    const toIn = el('input', { type: 'date', id: 'usage-to', 'aria-label': 'to', value: to });
    show(page, el('h1', {}, 'Usage'),
      el('div', { class: 'toolbar' }, ['1d', '7d', '30d', '365d'].map((s) => el('button', { type: 'button', class: s === from && !to ? '' : 'secondary',
        onclick: () => setPeriod(s, '') }, 'last ' + s)), ' or from ', fromIn, ' to ', toIn,
      el('button', { type: 'button', class: 'secondary', onclick: () => { if (fromIn.value) setPeriod(fromIn.value, toIn.value); } }, 'Show'), download),
      el('p', { class: 'muted', id: 'usage-period' }, 'GPU-hours from ' + period + '. ' + (u.note || '') +
        ' A department includes its projects: its total is not added to theirs.' +
        ' Returned: GPU-hours that sessions suspended by their project\u2019s idle GPU timeout or maximum session length gave back to the pool.'),
      ordered.length ? el('table', { id: 'usage-table' },
        el('tr', {}, el('th', {}, 'department / project'), USAGE_COLS.map(([, h]) => el('th', { class: 'num' }, h))),
        ordered.map(([k, depth]) => el('tr', { 'data-queue': k.key, class: depth ? '' : 'dept' },
          el('td', {}, '\u00a0'.repeat(4 * depth) + k.key), USAGE_COLS.map(([c]) => num(cell(k[c], c))))),
        el('tr', { class: 'total' }, el('th', {}, 'all departments'), USAGE_COLS.map(([c]) => el('th', { class: 'num' },
          c === 'used_percent' ? '' : cell(total(c), c)))))
        : el('p', { class: 'muted' }, 'No usage recorded in this period.'));
  };

  /* ---- Plan: what the recorded history says about buying ----------------------- */

  pages.plan = async function (page) {
    const span = sessionStorage.getItem('gpupool.planspan') || '7d';
    const price = Number(sessionStorage.getItem('gpupool.price') || '30000');
    const u = await api('GET', '/api/v1/usage?by=queue&step=1h&from=' + span);
    const q = await api('GET', '/api/v1/queues');
    const depts = q.queues.filter((x) => x.depth === 0).map((x) => x.name);
    const alloc = sumSteps(u, depts, 'allocated');
    const used = sumSteps(u, depts, 'used');
    const measured = u.keys.some((k) => depts.includes(k.key) && k.measured_gpu_hours > 0);
    const peak = (pts) => Math.max(0, ...pts.map((p) => p[1]));
    const staticN = depts.reduce((n, d) => n + Math.ceil(peak(perStep(u, d, 'allocated')) - 1e-9), 0);
    const pooledN = Math.ceil(peak(alloc) - 1e-9);
    const fracN = measured ? Math.ceil(peak(used) - 1e-9) : null;
    const meanUsed = used.length ? used.reduce((n, p) => n + p[1], 0) / used.length : 0;
    const priceIn = el('input', { id: 'price', value: price, size: 8, 'aria-label': 'price per GPU', onchange: (e) => { sessionStorage.setItem('gpupool.price', e.target.value); route(); } });
    /* How much history there is, and what a plan needs. */
    const hours = recordedSteps(u, depts).length;
    const history = el('p', { class: hours >= 24 * 7 ? 'muted' : 'note', id: 'plan-history' },
      hours === 0 ? 'No whole hour of usage is recorded in this period yet. The plan sizes the pool for the busiest recorded hour: it needs at least one hour, and a week or more of typical work before its figures are worth buying on.'
        : fmt.span(hours * 3600) + ' of usage recorded in this period (' + hours + ' whole hour' + (hours === 1 ? '' : 's') + '). ' +
          (hours >= 24 * 7 ? 'The plan sizes the pool for the busiest of them.' : 'The plan sizes the pool for the busiest of them; a week or more of typical work is needed before its figures are worth buying on.'));
    const rows = [
      ['Static', staticN, 'Each department buys GPUs for its own busiest hour and keeps them to itself.'],
      ['Pooled', pooledN, 'All departments share one pool, sized for the busiest hour of the whole organisation.'],
      ['Pooled, fractional', fracN, 'As pooled, and GPUs are shared in fractions, so the pool is sized for the GPU time really used.' +
        (measured ? '' : ' Not known here: nothing measures how busy these GPUs are (emulated GPUs, or no NVML).')],
    ];
    const body = hours === 0 ? [history] : [history,
      el('table', { id: 'plan-table' }, el('tr', {}, el('th', {}, 'mode'), el('th', { class: 'num' }, 'GPUs needed'), el('th', { class: 'num' }, 'cost'),
        el('th', { class: 'num' }, 'utilisation'), el('th', {}, 'what it means')),
      rows.map(([m, n, s]) => el('tr', {}, el('td', {}, m), num(n === null ? 'cannot be measured' : n), num(n === null ? '–' : fmt.money(n * price)),
        num(n && measured ? fmt.pct(meanUsed / n) : '–'), el('td', {}, s)))),
      el('p', { class: 'sentence', id: 'plan-sentence' }, staticN > pooledN
        ? 'Pooling needs ' + (staticN - pooledN) + ' fewer GPU' + (staticN - pooledN === 1 ? '' : 's') + ' than static ownership for the same demand: ' + fmt.money((staticN - pooledN) * price) + ' not spent.'
        : 'Over this period pooling would not need fewer GPUs than static ownership.',
      fracN !== null && pooledN > fracN ? ' Sharing GPUs in fractions by real use saves ' + (pooledN - fracN) + ' more (' + fmt.money((pooledN - fracN) * price) + ').' : ''),
      lineChart([{ label: 'allocated, all departments', colour: '#2457c5', points: alloc.map((p) => p) },
        { label: 'really used', colour: '#17a36b', dash: true, points: measured ? used : [] }],
      { from: u.from * 1000, to: u.to * 1000, title: 'demand and capacity', lines: [
        { name: 'static', value: staticN, colour: '#c23a2b' }, { name: 'pooled', value: pooledN, colour: '#7a4cc2' }] }),
      el('p', { class: 'muted' }, 'Sizing is for the same wait as recorded: every hour of recorded demand fits (hourly averages; peaks inside an hour are not seen). Prices are per GPU over its life; enter yours.'),
    ];
    show(page, el('h1', {}, 'Capacity plan from this pool\'s history'),
      el('div', { class: 'toolbar' }, 'history: ', ['7d', '30d', '365d'].map((s) => el('button', { type: 'button', class: s === span ? '' : 'secondary',
        onclick: () => { sessionStorage.setItem('gpupool.planspan', s); route(); } }, s)), ' price per GPU: ', priceIn,
      el('button', { type: 'button', class: 'secondary', onclick: () => window.print() }, 'Print')), body);
  };

  /* ---- Start ------------------------------------------------------------------ */

  document.addEventListener('DOMContentLoaded', () => {
    $('signin-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      signIn($('token').value.trim());
      $('token').value = '';
    });
    $('signout').addEventListener('click', () => signOut('', true));
    for (const ev of ['keydown', 'pointerdown', 'wheel'])
      window.addEventListener(ev, () => { state.lastInput = Date.now(); }, { passive: true });
    window.addEventListener('hashchange', route);
    /* The token of an older console, kept for the tab's life: gone. */
    sessionStorage.removeItem('gpupool.token');
    if (state.session) enter();
  });
})();
