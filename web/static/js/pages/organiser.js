// The organiser's pages: create an event with its layout (with a live
// preview of the map), and watch a sale live: seats by status, the queue's
// depth and drain rate (GET /events/{id}/stats), and the seat map.

import * as api from '../api.js';
import * as session from '../session.js';
import { buildVenue, decodeRuns } from '../venue.js';
import { SeatMap, COLOURS } from '../seatmap.js';
import { h, fill, when, clock, count, duration, showError, field, busy, friendly, words, fieldOf, problemErrors } from '../ui.js';

const STATS_MS = 2000;
const HISTORY = 150; // samples kept for the chart: five minutes at one every 2 s

export async function render(main, params, scope, navigate) {
  const u = session.user();
  if (!u || !u.admin) {
    document.title = 'Organiser · boxoffice';
    fill(main, h('h1', {}, 'Organiser'),
      h('p', {}, 'This page is for organisers: ', h('a', { href: '/app/signin' }, 'sign in'), ' with an organiser (admin) token, such as the one ', h('code', {}, 'boxoffice serve'), ' prints.'));
    return;
  }
  if (params[0]) return watch(main, params[0], scope);
  return create(main, scope, navigate);
}

// --- create ------------------------------------------------------------------

function localInput(d) {
  // datetime-local wants local time without a zone.
  const off = d.getTimezoneOffset() * 60000;
  return new Date(d.getTime() - off).toISOString().slice(0, 16);
}

async function create(main, scope, navigate) {
  document.title = 'Organiser · boxoffice';
  const now = new Date(api.serverNow());
  const starts = new Date(now.getTime() + 30 * 86400e3);
  starts.setHours(20, 0, 0, 0);
  const inp = (attrs) => h('input', attrs);
  const f = {
    name: inp({ type: 'text', required: true, maxlength: 200, value: 'Summer Concert' }),
    venue: inp({ type: 'text', maxlength: 200, value: 'City Hall' }),
    starts: inp({ type: 'datetime-local', required: true, value: localInput(starts) }),
    opens: inp({ type: 'datetime-local', required: true, value: localInput(new Date(now.getTime() + 60e3)) }),
    mode: h('select', {}, h('option', { value: 'direct' }, 'Direct: seats are held at once'), h('option', { value: 'queued' }, 'Queued: a waiting room for a flash sale')),
    limit: inp({ type: 'number', min: 1, max: 100, value: 8, required: true }),
    refundable: inp({ type: 'checkbox', checked: true }),
    cutoff: inp({ type: 'number', min: 0, max: 8760, value: 48 }),
    resale: inp({ type: 'checkbox', checked: true }),
    cap: inp({ type: 'number', min: 0, max: 1000, value: 100 }),
  };
  const rowsBox = h('div', { class: 'sections-form' });
  const totalEl = h('p', { class: 'total', 'aria-live': 'polite' });
  const err = h('div', { class: 'notice', id: 'create-error' });
  const submit = h('button', { type: 'submit', id: 'create-event' }, 'Create event');
  const preview = h('canvas', { class: 'seatmap preview', role: 'img', 'aria-label': 'Preview of the seat map' });

  const sections = [];
  function addSection(s) {
    const row = {
      name: inp({ type: 'text', required: true, pattern: '[A-Za-z0-9_]{1,32}', value: s.name, title: '1–32 letters, digits or _' }),
      tier: inp({ type: 'text', required: true, pattern: '[A-Za-z0-9_]{1,32}', value: s.tier }),
      price: inp({ type: 'number', min: 0, step: '0.01', required: true, value: s.price }),
      rows: inp({ type: 'number', min: 1, max: 702, required: true, value: s.rows }),
      per: inp({ type: 'number', min: 1, max: 1000, required: true, value: s.per }),
    };
    const remove = h('button', { type: 'button', class: 'secondary' }, 'Remove');
    row.el = h('div', { class: 'section-row', role: 'group', 'aria-label': `Section ${sections.length + 1}` },
      field('Name', row.name), field('Price tier', row.tier), field('Price', row.price), field('Rows', row.rows), field('Seats per row', row.per), remove);
    remove.addEventListener('click', () => {
      if (sections.length === 1) return;
      sections.splice(sections.indexOf(row), 1);
      row.el.remove();
      changed();
    });
    sections.push(row);
    rowsBox.append(row.el);
  }
  [{ name: 'Stalls', tier: 'A', price: '85.00', rows: 20, per: 30 }, { name: 'Circle', tier: 'B', price: '55.00', rows: 12, per: 36 },
    { name: 'Balcony', tier: 'C', price: '30.00', rows: 10, per: 40 }].forEach(addSection);

  const sectionsJSON = () => sections.map((r) => ({
    name: r.name.value.trim(), price_tier: r.tier.value.trim(), price_cents: Math.round(Number(r.price.value) * 100),
    rows: Number(r.rows.value), seats_per_row: Number(r.per.value),
  }));

  let map = null, timer = 0;
  function changed(now) {
    const secs = sectionsJSON().filter((s) => s.rows > 0 && s.seats_per_row > 0 && s.rows <= 702 && s.seats_per_row <= 1000);
    const n = secs.reduce((a, s) => a + s.rows * s.seats_per_row, 0);
    fill(totalEl, `${count(n)} seats in ${secs.length} section${secs.length === 1 ? '' : 's'}`);
    const draw = () => {
      if (map) map.destroy();
      map = secs.length && n <= 200000 ? new SeatMap(preview, buildVenue(secs), { interactive: true }) : null;
    };
    clearTimeout(timer);
    if (now === true) draw(); else timer = setTimeout(draw, 250); // typing: wait for a pause
  }
  scope.add(() => { clearTimeout(timer); if (map) map.destroy(); });
  rowsBox.addEventListener('input', changed);

  const form = h('form', { id: 'event-form', novalidate: false },
    h('div', { class: 'card' },
      h('div', { class: 'form-grid' },
        field('Name', f.name), field('Venue', f.venue),
        field('Show starts', f.starts), field('Sale opens', f.opens),
        field('Sale mode', f.mode), field('Ticket limit per person', f.limit)),
      h('fieldset', {}, h('legend', {}, 'Refunds and resale'),
        h('div', { class: 'form-grid' },
          h('div', {}, h('label', { class: 'check' }, f.refundable, 'Refundable'), field('Until how many hours before the show', f.cutoff)),
          h('div', {}, h('label', { class: 'check' }, f.resale, 'Fan-to-fan resale'), field('Resale price cap, % of face value', f.cap, '0 means no cap'))))),
    h('fieldset', { class: 'card' }, h('legend', {}, 'Sections (the layout)'),
      h('p', { class: 'small muted' }, 'Listed front to back: best available starts with the first. Rows are lettered A, B, …, Z, AA, …; seats numbered from 1.'),
      rowsBox,
      h('div', { class: 'row' }, h('button', { type: 'button', class: 'secondary', onclick: () => { addSection({ name: `S${sections.length + 1}`, tier: 'A', price: '50.00', rows: 10, per: 20 }); changed(); } }, 'Add section'), totalEl),
      h('div', { class: 'map-wrap' }, preview)),
    h('div', { class: 'row' }, submit), err);

  // Errors are said next to the field they are about, in words (never the
  // API's field names), and summed up under the button.
  const inputOf = (apiField) => {
    const m = /^sections\[(\d+)\]\.(\w+)$/.exec(apiField || '');
    if (m) {
      const r = sections[Number(m[1])];
      return r && { name: r.name, price_tier: r.tier, price_cents: r.price, rows: r.rows, seats_per_row: r.per }[m[2]];
    }
    return { name: f.name, venue: f.venue, starts_at: f.starts, sale_opens_at: f.opens, sale_mode: f.mode, ticket_limit: f.limit,
      refund_cutoff_hours: f.cutoff, resale_cap_percent: f.cap }[apiField];
  };
  function clearErrors() {
    for (const el of form.querySelectorAll('.field-error')) el.remove();
    for (const el of form.querySelectorAll('[aria-invalid]')) {
      el.removeAttribute('aria-invalid');
      const d = (el.getAttribute('aria-describedby') || '').split(' ').filter((x) => x && !x.endsWith('-err')).join(' ');
      if (d) el.setAttribute('aria-describedby', d); else el.removeAttribute('aria-describedby');
    }
    fill(err);
    err.className = 'notice';
  }
  function markField(input, text) {
    if (!input || input.getAttribute('aria-invalid') === 'true') return;
    input.setAttribute('aria-invalid', 'true');
    const note = h('p', { class: 'field-error', id: `${input.id}-err` }, text);
    input.after(note);
    input.setAttribute('aria-describedby', `${input.getAttribute('aria-describedby') || ''} ${note.id}`.trim());
  }
  function showProblems(list) { // [{input, text}]
    for (const p of list) markField(p.input, p.text);
    showError(err, list.length === 1 ? list[0].text : `Please fix these: ${list.map((p) => p.text).join(' ')}`);
    const first = list.find((p) => p.input);
    if (first) first.input.focus();
  }
  // checkDates refuses what the server would refuse, and a show in the past,
  // before anything is sent.
  function checkDates() {
    const out = [];
    const now = api.serverNow();
    const starts = Date.parse(f.starts.value), opens = Date.parse(f.opens.value);
    if (Number.isNaN(starts)) out.push({ input: f.starts, text: 'Please say when the show starts.' });
    else if (starts <= now) out.push({ input: f.starts, text: `The show cannot start in the past: pick a date and time after ${when(new Date(now).toISOString())}.` });
    if (Number.isNaN(opens)) out.push({ input: f.opens, text: 'Please say when the sale opens.' });
    else if (!Number.isNaN(starts) && opens >= starts) out.push({ input: f.opens, text: 'The sale must open before the show starts.' });
    return out;
  }
  for (const inp2 of [f.starts, f.opens]) inp2.addEventListener('change', () => { if (inp2.getAttribute('aria-invalid')) { clearErrors(); const bad = checkDates(); if (bad.length) showProblems(bad); } });

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    clearErrors();
    const bad = checkDates();
    if (bad.length) { showProblems(bad); return; }
    const body = {
      name: f.name.value.trim(), venue: f.venue.value.trim(),
      starts_at: new Date(f.starts.value).toISOString().replace('.000Z', 'Z'),
      sale_opens_at: new Date(f.opens.value).toISOString().replace('.000Z', 'Z'),
      sale_mode: f.mode.value, ticket_limit: Number(f.limit.value), sections: sectionsJSON(),
      resale_enabled: f.resale.checked, resale_cap_percent: f.resale.checked ? Number(f.cap.value) : 0,
    };
    if (f.refundable.checked) body.refund_cutoff_hours = Number(f.cutoff.value);
    return busy(submit, 'Creating…', async () => {
      try {
        const ev = await api.createEvent(body);
        navigate(`/app/organiser/events/${ev.event_id}`);
      } catch (x) {
        // The API's problem names fields ("sale_opens_at must be before
        // starts_at"): say it in words, next to the field it is about.
        const listed = problemErrors(x);
        const list = listed.length ? listed.map((p) => ({ input: inputOf(p.field), text: p.text }))
          : [{ input: inputOf(fieldOf(x.detail || '')), text: x.code === 'invalid' ? words(x.detail || x.message) : friendly(x) }];
        showProblems(list);
      }
    });
  });

  const eventsList = h('ul', {});
  fill(main, h('h1', {}, 'Organiser'),
    h('section', { 'aria-labelledby': 'watch-h' }, h('h2', { id: 'watch-h' }, 'Watch a sale'), eventsList),
    h('h2', {}, 'Create an event'), form);
  changed(true);
  let events;
  try {
    ({ events } = await api.listEvents());
  } catch (x) {
    // The form works without the list; the list comes back with a reload.
    fill(eventsList, h('li', {}, h('span', { class: 'muted' }, `The list of sales could not be loaded. ${friendly(x)} `),
      h('button', { type: 'button', class: 'secondary', onclick: () => navigate('/app/organiser', { replace: true }) }, 'Retry')));
    return;
  }
  fill(eventsList, events.length ? events.map((e) => h('li', {}, h('a', { href: `/app/organiser/events/${e.event_id}` }, e.name), h('span', { class: 'small muted' }, ` · ${e.sale_mode} · ${count(e.seat_count)} seats · ${when(e.starts_at)}`)))
    : h('li', { class: 'muted' }, 'No events yet.'));
}

// --- watch -------------------------------------------------------------------

async function watch(main, id, scope) {
  const ev = await api.getEvent(id);
  document.title = `Sale: ${ev.name} · boxoffice`;
  const venue = buildVenue(ev.sections);
  const tiles = h('div', { class: 'stats', id: 'stats' });
  const bar = h('div', { class: 'bar', role: 'img', 'aria-label': 'Seats by status' });
  const built = h('p', { class: 'small muted' });
  const err = h('div', { class: 'notice' });
  const chart = h('canvas', { class: 'spark', role: 'img', 'aria-label': 'Seats sold and queue depth over the last five minutes' });
  const canvas = h('canvas', { class: 'seatmap', role: 'img', tabindex: 0, 'aria-label': 'Live seat map' });
  canvas.style.aspectRatio = `${venue.width} / ${venue.height}`;
  fill(main,
    h('h1', {}, `Sale: ${ev.name}`),
    h('p', { class: 'muted' }, `${ev.venue} · ${when(ev.starts_at)} · ${ev.sale_mode === 'queued' ? 'queued (waiting room)' : 'direct'} sale, opens ${when(ev.sale_opens_at)} · `, h('a', { href: `/app/events/${id}` }, 'public page')),
    err, tiles, bar, built,
    h('h2', {}, 'The last five minutes'), chart,
    h('h2', {}, 'Seat map'), h('div', { class: 'map-wrap' }, canvas));
  const map = new SeatMap(canvas, venue, {});
  scope.add(() => map.destroy());

  const history = [];
  let etag = null;
  async function tick() {
    let s;
    try {
      s = await api.eventStats(id);
    } catch (x) {
      showError(err, x, 'Could not update');
      return;
    }
    fill(err);
    err.className = 'notice';
    const seats = s.seats || {};
    const q = s.queue;
    const tile = (n, l, idAttr) => h('div', { class: 'stat', id: idAttr }, h('div', { class: 'n' }, n), h('div', { class: 'l' }, l));
    const drain = q && q.drain_rate > 0 ? q.depth / q.drain_rate : null;
    fill(tiles,
      tile(count(seats.sold || 0), 'sold', 'stat-sold'),
      tile(count(seats.held || 0), 'held (awaiting payment)', 'stat-held'),
      tile(count(seats.available || 0), 'available', 'stat-available'),
      tile(count(seats.resale || 0), 'on resale', 'stat-resale'),
      q ? [
        tile(count(q.depth), 'in the queue', 'stat-depth'),
        tile(count(q.waiting), 'in the waiting room (before opening)', 'stat-waiting'),
        tile(count(q.served), `served of ${count(q.admitted)} admitted`, 'stat-served'),
        tile(q.drain_rate > 0 ? `${q.drain_rate.toFixed(1)}/s` : '—', q.drain_rate > 0 ? 'drain rate' : 'drain rate (measured while the queue drains)', 'stat-rate'),
        tile(drain === null ? '—' : duration(drain), 'to drain the queue', 'stat-drain'),
      ] : null);
    const total = s.seat_count || 1;
    fill(bar, ['sold', 'held', 'resale', 'available'].map((k) => {
      const span = h('span', { title: `${k}: ${seats[k] || 0}` });
      span.style.width = `${((seats[k] || 0) / total) * 100}%`;
      span.style.background = k === 'available' ? COLOURS.available : COLOURS[k];
      return span;
    }));
    bar.setAttribute('aria-label', `Seats: ${seats.sold || 0} sold, ${seats.held || 0} held, ${seats.resale || 0} on resale, ${seats.available || 0} available of ${s.seat_count}`);
    fill(built, `${count(s.seat_count)} seats · counts as of ${clock(new Date(s.seat_map_built_at))} (the seat map is cached for a few seconds) · updated ${clock(new Date())}`);
    history.push({ sold: seats.sold || 0, depth: q ? q.depth : 0 });
    if (history.length > HISTORY) history.shift();
    drawChart(chart, history, s.seat_count);
    try {
      const got = await api.availability(id, etag);
      if (got) {
        etag = got.etag;
        map.setStatuses(decodeRuns(got.data.runs, venue.seatCount));
      }
    } catch { /* the tiles are what matters here */ }
  }
  await tick();
  scope.interval(tick, STATS_MS);
}

// drawChart draws sold seats (of the seat count) and queue depth (of its
// own maximum) as two lines.
function drawChart(canvas, history, seatCount) {
  const r = canvas.getBoundingClientRect();
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(r.width * dpr);
  canvas.height = Math.round(r.height * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, r.width, r.height);
  const maxDepth = Math.max(1, ...history.map((p) => p.depth));
  const line = (key, max, colour) => {
    ctx.beginPath();
    history.forEach((p, i) => {
      const x = (i / (HISTORY - 1)) * (r.width - 8) + 4;
      const y = r.height - 6 - (p[key] / max) * (r.height - 22);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2;
    ctx.stroke();
  };
  line('sold', Math.max(1, seatCount), COLOURS.sold);
  line('depth', maxDepth, '#0072B2');
  ctx.font = '12px system-ui, sans-serif';
  ctx.fillStyle = COLOURS.sold;
  ctx.fillText('— sold', 8, 14);
  ctx.fillStyle = '#0072B2';
  ctx.fillText(`— queue depth (max ${maxDepth})`, 70, 14);
}
