// The event page: the seat map, and every way to get seats: clicking them,
// a keyboard picker (section, row, seat), best available, a resale
// listing; and the waitlist when nothing suits. The map follows the compact
// availability view, revalidated every few seconds with If-None-Match.

import * as api from '../api.js';
import * as session from '../session.js';
import { buildVenue, decodeRuns, seat, indexOf, rowLabel, STATUS, STATUS_NAMES, FEATURES, FEATURE_NAMES } from '../venue.js';
import { SeatMap, COLOURS, describeSeat } from '../seatmap.js';
import { mountFilters } from '../filters.js';
import { h, fill, when, clock, count, money, duration, announce, showError, field, busy, friendly, seatName, seatNames, shortSeat, clockShort } from '../ui.js';

const POLL_MS = 5000; // the seat map is cached for 10 s by default: poll at twice that rate
const TAKEN_MS = 30000; // how long a seat we were refused stays greyed before the map catches up
const MILESTONES = [300, 120, 60, 30, 10]; // a hold's countdown is read out at these seconds left

export async function render(main, [id], scope, navigate) {
  const ev = await api.getEvent(id);
  document.title = `${ev.name} · boxoffice`;
  const venue = buildVenue(ev.sections);
  // One request holds at most 10 seats (the server's default
  // --max-seats-per-request) and never more than the event's limit.
  const limit = Math.min(ev.ticket_limit, 10);
  const queued = ev.sale_mode === 'queued';

  let statuses = new Uint8Array(venue.seatCount);
  let etag = null;
  const selected = new Set();
  const taken = new Map(); // seat index → until (ms): refused to us, shown as held meanwhile
  let listings = new Map(); // seat id → active listing
  let resalePick = null;
  let lastAttempt = null; // {body, key}: a retry after a network failure reuses the key
  let held = null; // a booking of this browser's for this event, still held: {booking_id, seat_ids, amount_cents, held_until}
  let secSel, rowSel, seatSel, resaleList; // made with their sections below

  // --- layout ------------------------------------------------------------
  const saleBox = h('div');
  const mapStatus = h('p', { class: 'small muted', id: 'map-status' }, 'Loading seats…');
  const canvas = h('canvas', {
    class: 'seatmap', tabindex: 0, role: 'img',
    'aria-label': `Seat map of ${ev.venue}: ${count(venue.seatCount)} seats. Drag or use the arrow keys to move, + and − to zoom, 0 to fit. Pick seats with the form beside the map.`,
    'aria-describedby': 'map-status',
  });
  canvas.style.aspectRatio = `${venue.width} / ${venue.height}`;
  const tip = h('div', { class: 'map-tip', hidden: true, 'aria-hidden': 'true' });
  const colourSel = h('select', { id: 'colour-by' }, h('option', { value: 'tier' }, 'by price tier'), h('option', { value: 'status' }, 'by status'));
  const legend = h('ul', { class: 'legend', 'aria-label': 'Legend' });
  const selList = h('ul', { class: 'selection', 'aria-label': 'Seats you picked' });
  const totalEl = h('p', { class: 'total', 'aria-live': 'polite' });
  const reserveBtn = h('button', { type: 'button', id: 'reserve' }, queued ? 'Join the queue for these seats' : 'Reserve these seats');
  const reserveErr = h('div', { class: 'notice', id: 'reserve-error' });
  const signHint = h('p', { class: 'small' });
  const resaleBox = h('div', { id: 'resale-pick' });
  const heldBox = h('div', { id: 'held-here' });
  // When the seat map cannot be refreshed: said plainly, above the map.
  const staleBox = h('div', { class: 'notice warn map-stale', id: 'map-stale', role: 'status', hidden: true });

  // The cart bar: on a phone it stays at the bottom of the screen with the
  // picks, the total, the hold's countdown and the main action. cart.css
  // shows it below 860 px only, where the "Your seats" card is screens
  // away from the map.
  const cartPicks = h('span', { class: 'cart-picks', id: 'cart-picks' });
  const cartTotal = h('span', { class: 'cart-total', id: 'cart-total' });
  const cartTimer = h('span', { class: 'cart-timer', id: 'cart-timer', role: 'timer', 'aria-live': 'off', hidden: true });
  const cartBtn = h('button', { type: 'button', id: 'cart-action' });
  const cartPay = h('a', { class: 'button', id: 'cart-continue', hidden: true }, 'Continue to payment');
  const cart = h('section', { class: 'cartbar', id: 'cartbar', 'aria-label': 'Your seats and the next step', hidden: true },
    h('div', { class: 'cart-info' }, cartPicks, h('span', { class: 'cart-line' }, cartTotal, cartTimer)),
    h('div', { class: 'cart-actions' }, cartBtn, cartPay));

  const map = new SeatMap(canvas, venue, {
    onSeat: (i) => clickSeat(i),
    onHover: (i, x, y) => {
      tip.hidden = i < 0;
      if (i < 0) return;
      const st = STATUS_NAMES[shownStatus(i)];
      const l = st === 'resale' && listings.get(seat(venue, i).id);
      tip.textContent = describeSeat(venue, i, st) + (l ? ` at ${money(l.price_cents)}` : '');
      tip.style.left = `${x}px`;
      tip.style.top = `${y + 40}px`;
    },
  });
  scope.add(() => map.destroy());
  // Price, tier and seat-needs filters: seats out of them are dimmed on
  // the map and cannot be picked.
  const filtersBox = h('section', { class: 'card', id: 'filters' });
  const filters = mountFilters(filtersBox, map, venue);
  scope.add(() => filters.destroy());
  window.boxoffice.seatmap = map; // tests find seats on the canvas through it
  window.boxoffice.venue = venue;
  window.boxoffice.seatIndex = (sid) => indexOf(venue, sid);
  scope.add(() => { delete window.boxoffice.seatmap; delete window.boxoffice.venue; delete window.boxoffice.seatIndex; });
  scope.on(colourSel, 'change', () => { map.setColourBy(colourSel.value); drawLegend(); });

  const tools = h('div', { class: 'map-tools' },
    h('button', { type: 'button', class: 'icon secondary', 'aria-label': 'Zoom in', onclick: () => map.zoomAt(1.5) }, '+'),
    h('button', { type: 'button', class: 'icon secondary', 'aria-label': 'Zoom out', onclick: () => map.zoomAt(1 / 1.5) }, '−'),
    h('button', { type: 'button', class: 'secondary', onclick: () => map.fit() }, 'Fit'),
    h('span', { class: 'spacer' }),
    h('span', { class: 'row' }, h('label', { for: 'colour-by' }, 'Colours'), colourSel));

  const mapWrap = h('div', { class: 'map-wrap' }, tools, canvas, tip, legend);
  fill(main,
    h('h1', {}, ev.name),
    h('p', { class: 'muted' }, `${ev.venue} · ${when(ev.starts_at)} · up to ${ev.ticket_limit} tickets each`),
    saleBox,
    h('div', { class: 'grid-2' },
      h('section', { 'aria-label': 'Seat map' },
        staleBox,
        mapWrap,
        mapStatus),
      h('div', {},
        h('section', { class: 'card', 'aria-labelledby': 'pick-h' },
          h('h2', { id: 'pick-h' }, 'Your seats'),
          h('p', { class: 'small muted' }, `Click seats on the map (up to ${limit}), or use the forms below.`),
          heldBox, selList, totalEl, resaleBox, reserveBtn, signHint, reserveErr),
        filtersBox,
        keyboardPicker(),
        bestAvailable(),
        resaleSection(),
        waitlistSection())),
    cart);

  // --- sale state ----------------------------------------------------------
  function drawSale() {
    const now = api.serverNow(), opens = Date.parse(ev.sale_opens_at), starts = Date.parse(ev.starts_at);
    if (now >= starts) {
      fill(saleBox, h('div', { class: 'notice warn' }, 'This event has taken place.'));
      reserveBtn.disabled = true;
      return;
    }
    const parts = [];
    if (now < opens) {
      parts.push(h('strong', {}, `The sale opens in ${duration((opens - now) / 1000)}`), ` (${when(ev.sale_opens_at)}). `);
    }
    if (queued) {
      parts.push('A flash sale: requests go through a waiting room and are served in queue order. ',
        now < opens ? 'Join from up to an hour before the opening: everyone who joins before it gets a random place, so there is no need to rush.' : '');
    }
    fill(saleBox, parts.length ? h('div', { class: now < opens ? 'notice warn' : 'notice' }, parts) : null);
  }
  drawSale();
  if (api.serverNow() < Date.parse(ev.sale_opens_at)) scope.interval(drawSale, 1000);

  // --- availability --------------------------------------------------------
  function shownStatus(i) {
    const st = statuses[i];
    const until = taken.get(i);
    if (until && until > Date.now() && st === STATUS.available) return STATUS.held;
    return st;
  }

  function effective() {
    const out = statuses.slice();
    const now = Date.now();
    for (const [i, until] of taken) {
      if (until < now) taken.delete(i);
      else if (out[i] === STATUS.available) out[i] = STATUS.held;
    }
    return out;
  }

  // The map is refreshed every POLL_MS. When that fails the page says so
  // plainly (the seats shown may be out of date, and since when), greys the
  // map, and goes back to normal by itself at the first answer.
  let lastGood = null; // when the map last matched the server
  let failingSince = null;
  let refreshing = false;
  function stale(e) {
    if (!failingSince) failingSince = new Date();
    mapWrap.classList.add('stale');
    const since = lastGood ? `since ${clock(lastGood)}` : 'yet';
    fill(staleBox,
      h('p', {}, h('strong', {}, lastGood ? `The seat map is out of date: it has not been updated since ${clock(lastGood)}.` : 'The seat map could not be loaded yet.'),
        ' Seats shown as free may already be taken. ', api.transient(e) ? 'The box office is not answering; this page keeps trying by itself.' : friendly(e)),
      h('button', { type: 'button', class: 'secondary', id: 'map-retry', onclick: () => refresh(true) }, 'Try now'));
    if (staleBox.hidden) announce(`The seat map is out of date ${since}.`);
    staleBox.hidden = false;
    mapStatus.textContent = lastGood ? `Seats as of ${clock(lastGood)}, not up to date.` : 'The seats are not loaded yet.';
  }
  function fresh() {
    lastGood = new Date();
    if (!failingSince) return;
    failingSince = null;
    mapWrap.classList.remove('stale');
    staleBox.hidden = true;
    fill(staleBox);
    announce('The seat map is up to date again.');
  }

  async function refresh(force) {
    if (document.hidden && force !== true) return; // nobody is looking: save the requests
    if (refreshing) return;
    refreshing = true;
    try { await refreshOnce(); } finally { refreshing = false; }
  }

  async function refreshOnce() {
    let got;
    try {
      got = await api.availability(id, etag);
    } catch (e) {
      if (scope.disposed) return;
      stale(e);
      return;
    }
    if (scope.disposed) return;
    if (got) {
      etag = got.etag;
      try {
        statuses = decodeRuns(got.data.runs, venue.seatCount);
      } catch {
        stale({ status: 500, code: 'internal', detail: 'The seat map could not be read.' });
        return;
      }
      // Seats picked that someone else has taken in the meantime.
      const gone = [...selected].filter((i) => statuses[i] !== STATUS.available);
      for (const i of gone) selected.delete(i);
      if (gone.length) {
        const names = seatNames(gone.map((i) => seat(venue, i).id));
        showError(reserveErr, `${names} ${gone.length === 1 ? 'was' : 'were'} just taken by someone else and ${gone.length === 1 ? 'has' : 'have'} been removed from your picks.`);
        drawSelection();
      }
      if (got.data.counts && got.data.counts.resale) await loadListings();
      else listings = new Map();
      drawResale();
      refreshPicker();
    }
    fresh();
    const overrides = taken.size; // effective() drops the lapsed ones
    const shown = effective();
    if (got || overrides) map.update(shown, selected); // a 304 with nothing of ours to show changes nothing
    const c = countsOf(shown);
    mapStatus.textContent = `${count(c[0])} available · ${count(c[1])} held · ${count(c[2])} sold · ${count(c[3])} for resale — updated ${clock(new Date())}`;
  }

  async function loadListings() {
    try {
      const { listings: ls } = await api.eventListings(id);
      listings = new Map(ls.filter((l) => l.status === 'active').map((l) => [l.seat_id, l]));
    } catch { /* the map still shows the resale seats */ }
  }

  function countsOf(st) {
    const c = [0, 0, 0, 0];
    for (let i = 0; i < st.length; i++) c[st[i]]++;
    return c;
  }

  await refresh();
  scope.interval(refresh, POLL_MS);
  scope.on(document, 'visibilitychange', () => { if (!document.hidden) refresh(); });
  scope.on(window, 'online', () => refresh(true));

  // --- picking -------------------------------------------------------------
  function clickSeat(i) {
    const s = seat(venue, i);
    const st = shownStatus(i);
    if (st === STATUS.resale) {
      const l = listings.get(s.id);
      if (!l) { announce(`${seatName(s.id)} is on resale; its listing is loading.`); return; }
      pickResale(l);
      return;
    }
    if (st !== STATUS.available && !selected.has(i)) {
      announce(`${describeSeat(venue, i)} is ${STATUS_NAMES[st]}.`);
      showError(reserveErr, `${s.section} row ${s.row} seat ${s.number} is ${STATUS_NAMES[st]}. Pick an available seat.`);
      return;
    }
    toggle(i);
  }

  function toggle(i, add) {
    const s = seat(venue, i);
    resalePick = null;
    drawResalePick();
    fill(reserveErr);
    if (selected.has(i) && add !== true) {
      selected.delete(i);
      announce(`Removed ${s.section} row ${s.row} seat ${s.number}.`);
    } else if (!selected.has(i)) {
      if (selected.size >= limit) {
        showError(reserveErr, `You can pick up to ${limit} seats at a time.`);
        return;
      }
      selected.add(i);
      announce(`Added ${s.section} row ${s.row} seat ${s.number}. ${selected.size} picked, ${money(total())} in all.`);
    }
    map.setSelected(selected);
    drawSelection();
  }

  const total = () => [...selected].reduce((a, i) => a + seat(venue, i).price, 0);

  function drawSelection() {
    const items = [...selected].sort((a, b) => a - b).map((i) => {
      const s = seat(venue, i);
      return h('li', {},
        h('span', {}, `${s.section} · Row ${s.row} · Seat ${s.number}`, h('br'), h('span', { class: 'small muted' }, `${s.tier} · ${money(s.price)}`)),
        h('button', { type: 'button', class: 'secondary', 'aria-label': `Remove ${seatName(s.id)}`, onclick: () => toggle(i) }, 'Remove'));
    });
    fill(selList, items.length ? items : h('li', { class: 'muted' }, 'No seats picked yet.'));
    fill(totalEl, selected.size ? `${selected.size} seat${selected.size === 1 ? '' : 's'} · ${money(total())}` : '');
    reserveBtn.hidden = selected.size === 0;
    fill(signHint, selected.size && !session.token() ? ['You will need to ', h('a', { href: '/app/signin' }, 'sign in'), ' to reserve.'] : '');
    drawCart();
  }

  function pickResale(l) {
    selected.clear();
    map.setSelected(selected);
    drawSelection();
    resalePick = l;
    drawResalePick();
    announce(`Resale seat picked: ${seatName(l.seat_id)}, ${money(l.price_cents)}.`);
  }

  function drawResalePick() {
    drawCart();
    if (!resalePick) { fill(resaleBox); return; }
    const l = resalePick;
    fill(resaleBox, h('div', { class: 'notice' },
      h('p', {}, h('strong', {}, 'Resale: '), `${l.section} · Row ${l.row} · Seat ${l.number}`),
      h('p', {}, `${money(l.price_cents)} (face value ${money(l.face_value_cents)}), sold by another fan.`),
      h('button', { type: 'button', id: 'buy-resale', onclick: (e) => buyListing(l, e.currentTarget) }, 'Buy this resale seat')));
  }

  // --- the cart bar, and seats already held here ------------------------------
  function drawCart() {
    const n = selected.size;
    let has = false;
    if (resalePick) {
      has = true;
      fill(cartPicks, `Resale: ${shortSeat(resalePick.seat_id)}`);
      fill(cartTotal, money(resalePick.price_cents));
      fill(cartBtn, 'Buy this seat');
      cartBtn.setAttribute('aria-label', `Buy the resale seat ${seatName(resalePick.seat_id)} for ${money(resalePick.price_cents)}`);
      cartBtn.hidden = false;
    } else if (n) {
      has = true;
      const ids = [...selected].sort((a, b) => a - b).map((i) => seat(venue, i).id);
      const shown = ids.slice(0, 3).map(shortSeat).join(', ') + (ids.length > 3 ? ` +${ids.length - 3}` : '');
      fill(cartPicks, `${n} seat${n === 1 ? '' : 's'}: ${shown}`);
      fill(cartTotal, money(total()));
      fill(cartBtn, queued ? 'Join the queue' : 'Reserve');
      cartBtn.setAttribute('aria-label', `${queued ? 'Join the queue for' : 'Reserve'} ${n} seat${n === 1 ? '' : 's'}, ${money(total())}: ${seatNames(ids)}`);
      cartBtn.hidden = false;
    } else if (held) {
      has = true;
      const k = held.seat_ids.length;
      fill(cartPicks, `Held: ${k} seat${k === 1 ? '' : 's'}: ${held.seat_ids.slice(0, 3).map(shortSeat).join(', ')}${k > 3 ? ` +${k - 3}` : ''}`);
      fill(cartTotal, money(held.amount_cents));
      cartBtn.hidden = true;
    } else {
      cartBtn.hidden = true;
    }
    cartBtn.disabled = reserveBtn.disabled && !resalePick;
    cartPay.hidden = !held;
    cartTimer.hidden = !held;
    if (held) {
      cartPay.href = `/app/checkout/${held.booking_id}`;
      fill(cartPay, n || resalePick ? 'Pay for held seats' : 'Continue to payment');
    }
    cart.hidden = !has && !held;
  }

  // A hold this browser made for this event (remembered per tab when the
  // seats were held) and not yet paid: the bar counts it down and offers to
  // continue to payment.
  async function findHold() {
    if (!session.token()) return;
    const ids = [];
    for (let k = 0; k < sessionStorage.length; k++) {
      const m = /^bo:booking:(\d+)$/.exec(sessionStorage.key(k) || '');
      if (!m) continue;
      let v = null;
      try { v = JSON.parse(sessionStorage.getItem(sessionStorage.key(k))); } catch { /* ignore */ }
      if (v && String(v.event_id) === String(id)) ids.push(m[1]);
    }
    ids.sort((a, b) => Number(b) - Number(a)); // the newest first
    for (const bid of ids.slice(0, 5)) {
      let b;
      try { b = await api.getBooking(bid); } catch { continue; }
      if (scope.disposed) return;
      if (b.status === 'pending' && Date.parse(b.held_until) > api.serverNow()) {
        held = b;
        break;
      }
      if (b.status !== 'pending') sessionStorage.removeItem(`bo:booking:${bid}`);
    }
    drawHeld();
  }

  const said = new Set();
  function drawHeld() {
    if (!held) { fill(heldBox); drawCart(); return; }
    const left = (Date.parse(held.held_until) - api.serverNow()) / 1000;
    if (left <= 0) {
      held = null;
      announce('Your hold has run out: those seats went back on sale.');
      fill(heldBox, h('div', { class: 'notice warn', role: 'status' }, 'Your hold ran out and those seats went back on sale.'));
      drawCart();
      return;
    }
    const t = duration(left);
    fill(cartTimer, `${t} left`);
    cartTimer.setAttribute('aria-label', `Time left to pay for your held seats: ${t}`);
    cartTimer.classList.toggle('low', left < 60);
    for (const m of MILESTONES) {
      if (left <= m && left > m - 5 && !said.has(m)) {
        said.add(m);
        announce(m >= 60 ? `${m / 60} minute${m === 60 ? '' : 's'} left to pay for your held seats.` : `${m} seconds left to pay for your held seats.`);
      }
    }
    if (!heldBox.firstChild) {
      fill(heldBox, h('div', { class: 'notice good', role: 'status' },
        h('p', {}, h('strong', {}, 'Held for you: '), seatNames(held.seat_ids), ` · ${money(held.amount_cents)}`),
        h('p', {}, `Pay by ${clockShort(new Date(Date.parse(held.held_until)))} or the seats go back on sale.`),
        h('a', { class: 'button', href: `/app/checkout/${held.booking_id}` }, 'Continue to payment')));
    }
    drawCart();
  }
  scope.interval(() => { if (held) drawHeld(); }, 1000);
  drawSelection();
  findHold().catch(() => { /* the bar just shows no hold */ });

  // --- reserving -----------------------------------------------------------
  function reserveSelected(btn) {
    const seatIds = [...selected].sort((a, b) => a - b).map((i) => seat(venue, i).id);
    if (!seatIds.length) return null;
    return busy(btn, queued ? 'Joining the queue…' : 'Holding your seats…', () => doReserve({ event_id: id, seat_ids: seatIds }, seatIds.length));
  }
  scope.on(reserveBtn, 'click', () => reserveSelected(reserveBtn));
  scope.on(cartBtn, 'click', () => {
    if (resalePick) return buyListing(resalePick, cartBtn);
    const p = reserveSelected(cartBtn);
    // The answer (an error) is in the card: bring it into view.
    if (p) p.then(() => { if (reserveErr.textContent && location.pathname.startsWith('/app/events/')) reserveErr.scrollIntoView({ block: 'center' }); });
    return p;
  });

  function buyListing(l, btn) {
    return busy(btn, 'Holding the seat…', () => doReserve({ listing_id: l.listing_id }, 1));
  }

  // doReserve sends a reserve and moves on to checkout (201) or the
  // waiting room (202), or says why not.
  async function doReserve(body, quantity) {
    fill(reserveErr);
    reserveErr.className = 'notice';
    if (!session.token()) {
      fill(reserveErr, 'Please ', h('a', { href: '/app/signin' }, 'sign in'), ' first.');
      reserveErr.className = 'notice bad';
      return;
    }
    const bodyText = JSON.stringify(body);
    const key = lastAttempt && lastAttempt.body === bodyText ? lastAttempt.key : api.newKey('reserve');
    lastAttempt = { body: bodyText, key };
    let res;
    try {
      res = await api.reserve(body, key);
    } catch (e) {
      showError(reserveErr, e); // network: the same click retries with the same key
      return;
    }
    lastAttempt = null;
    const data = await res.json().catch(() => null);
    if (res.status === 201) {
      sessionStorage.setItem(`bo:booking:${data.booking_id}`, JSON.stringify({ event_id: id }));
      navigate(`/app/checkout/${data.booking_id}`);
      return;
    }
    if (res.status === 202) {
      sessionStorage.setItem(`bo:queue:${data.request_id}`, JSON.stringify({ event_id: id, quantity, body }));
      navigate(`/app/queue/${data.request_id}`);
      return;
    }
    const p = new api.Problem(res.status, data);
    if (p.code === 'seat_taken') {
      const ids = p.seats.length ? p.seats : (body.seat_ids || []);
      const until = Date.now() + TAKEN_MS;
      for (const sid of ids) {
        const i = indexOf(venue, sid);
        if (i >= 0) { taken.set(i, until); selected.delete(i); }
      }
      drawSelection();
      map.update(effective(), selected);
      const list = seatNames(ids);
      showError(reserveErr, body.listing_id
        ? 'Someone else is buying that resale seat right now. Pick another one.'
        : `Sorry: ${list || 'a seat you picked'} ${ids.length === 1 ? 'was' : 'were'} just taken by someone else. ${ids.length === 1 ? 'It is' : 'They are'} now greyed out on the map; please pick other seats.`);
      announce('Seat taken by someone else. Please pick other seats.');
      return;
    }
    if (p.status === 401) {
      fill(reserveErr, 'Your sign-in is not valid any more. ', h('a', { href: '/app/signin' }, 'Sign in again'), '.');
      reserveErr.className = 'notice bad';
      return;
    }
    showError(reserveErr, p);
  }

  // --- keyboard picker -------------------------------------------------------
  function keyboardPicker() {
    secSel = h('select', { id: 'pick-section' }, ev.sections.map((s) => h('option', { value: s.name }, `${s.name} (${s.price_tier}, ${money(s.price_cents)})`)));
    rowSel = h('select', { id: 'pick-row' });
    seatSel = h('select', { id: 'pick-seat' });
    const add = h('button', { type: 'button', id: 'pick-add' }, 'Add seat');
    const show = h('button', { type: 'button', class: 'secondary', id: 'pick-show' }, 'Show on map');
    secSel.addEventListener('change', () => { fillRows(); refreshPicker(); });
    rowSel.addEventListener('change', refreshPicker);
    const pickedIndex = () => indexOf(venue, `${secSel.value}-${rowSel.value}-${seatSel.value}`);
    add.addEventListener('click', () => {
      const i = pickedIndex();
      if (i < 0) return;
      if (shownStatus(i) !== STATUS.available) {
        showError(reserveErr, `That seat is ${STATUS_NAMES[shownStatus(i)]}.`);
        return;
      }
      toggle(i, true);
      map.showSeat(i);
    });
    show.addEventListener('click', () => { const i = pickedIndex(); if (i >= 0) map.showSeat(i); });
    fillRows();
    return h('section', { class: 'card', 'aria-labelledby': 'kbd-h' },
      h('h2', { id: 'kbd-h' }, 'Pick a seat by name'),
      h('div', { class: 'picker' }, field('Section', secSel), field('Row', rowSel), field('Seat', seatSel)),
      h('div', { class: 'row' }, add, show));
  }

  function fillRows() {
    const s = venue.bySection.get(secSel.value);
    fill(rowSel, Array.from({ length: s.rows }, (_, r) => h('option', { value: rowLabel(r + 1) }, rowLabel(r + 1))));
  }

  // refreshPicker lists the chosen row's seats with their status; taken
  // ones cannot be chosen.
  function refreshPicker() {
    if (!seatSel) return;
    const s = venue.bySection.get(secSel.value);
    const r = rowSel.selectedIndex;
    const keep = seatSel.value;
    fill(seatSel, Array.from({ length: s.perRow }, (_, n) => {
      const i = s.base + r * s.perRow + n;
      const st = shownStatus(i);
      return h('option', { value: String(n + 1), disabled: st !== STATUS.available }, `${n + 1} — ${STATUS_NAMES[st]}`);
    }));
    const kept = keep && seatSel.querySelector(`option[value="${keep}"]`);
    if (kept && !kept.disabled) seatSel.value = keep;
    else {
      const first = [...seatSel.options].find((o) => !o.disabled);
      if (first) seatSel.value = first.value;
    }
  }
  refreshPicker();

  // --- best available ----------------------------------------------------------
  function areaSelect(idAttr) {
    return h('select', { id: idAttr },
      h('option', { value: '' }, 'Anywhere (best first)'),
      h('optgroup', { label: 'Price tier' }, venue.tiers.map((t) => h('option', { value: `tier:${t.name}` }, `${t.name} (${money(t.price)})`))),
      h('optgroup', { label: 'Section' }, ev.sections.map((s) => h('option', { value: `section:${s.name}` }, s.name))));
  }
  function quantitySelect(idAttr, max) {
    return h('select', { id: idAttr }, Array.from({ length: max }, (_, k) => h('option', { value: String(k + 1) }, String(k + 1))));
  }
  function areaOf(v) {
    const [kind, name] = v.split(/:(.*)/s);
    return kind === 'tier' ? { price_tier: name } : kind === 'section' ? { section: name } : {};
  }

  function bestAvailable() {
    const qty = quantitySelect('best-qty', limit);
    qty.value = String(Math.min(2, limit));
    const area = areaSelect('best-area');
    // Seats with needs (a wheelchair space, a companion seat, a restricted
    // view) are kept for those who ask: one box per kind the event has.
    const needs = FEATURES.filter((f) => (venue.featureCount?.[f] || 0) > 0)
      .map((f) => ({ f, box: h('input', { type: 'checkbox', id: `best-need-${f}`, value: f }) }));
    const btn = h('button', { type: 'button', id: 'best-go' }, queued ? 'Queue for the best seats' : 'Find and hold the best seats');
    btn.addEventListener('click', () => busy(btn, 'Looking…', () => {
      const features = needs.filter((n) => n.box.checked).map((n) => n.f);
      return doReserve({ event_id: id, best_available: { quantity: Number(qty.value), ...areaOf(area.value), ...(features.length ? { features } : {}) } }, Number(qty.value));
    }));
    return h('section', { class: 'card', 'aria-labelledby': 'best-h' },
      h('h2', { id: 'best-h' }, 'Best available'),
      h('p', { class: 'small muted' }, 'The best seats left side by side in one row: the front rows first, from the middle of the row outwards.'),
      h('div', { class: 'row' }, field('How many', qty), field('Where', area)),
      needs.length ? h('fieldset', { class: 'needs' }, h('legend', {}, 'Include seats with'),
        needs.map((n) => h('label', { for: n.box.id }, n.box, ' ', FEATURE_NAMES[n.f]))) : null,
      btn);
  }

  // --- resale ------------------------------------------------------------------
  function resaleSection() {
    resaleList = h('ul', { class: 'listings', 'aria-label': 'Resale listings' });
    return h('section', { class: 'card', 'aria-labelledby': 'resale-h', hidden: !ev.resale_enabled },
      h('h2', { id: 'resale-h' }, 'Resale from other fans'),
      h('p', { class: 'small muted' }, `Shown in pink on the map. ${ev.resale_cap_percent ? `Prices are capped at ${ev.resale_cap_percent}% of face value.` : ''}`),
      resaleList);
  }
  function drawResale() {
    const ls = [...listings.values()];
    fill(resaleList, ls.length ? ls.map((l) => h('li', {},
      h('span', {}, `${l.section} · Row ${l.row} · Seat ${l.number}`, h('br'), h('span', { class: 'small muted' }, `${money(l.price_cents)} (face ${money(l.face_value_cents)})`)),
      h('button', { type: 'button', class: 'secondary', 'aria-label': `Buy resale seat: ${seatName(l.seat_id)}, ${money(l.price_cents)}`, onclick: (e) => buyListing(l, e.currentTarget) }, 'Buy')))
      : h('li', { class: 'muted' }, 'No tickets on resale right now.'));
  }

  // --- waitlist ----------------------------------------------------------------
  function waitlistSection() {
    const qty = quantitySelect('wl-qty', Math.min(ev.ticket_limit, 10));
    const area = areaSelect('wl-area');
    const btn = h('button', { type: 'button', class: 'secondary', id: 'wl-join' }, 'Join the waitlist');
    const msg = h('div', { class: 'notice' });
    btn.addEventListener('click', () => busy(btn, 'Joining…', async () => {
      try {
        await api.joinWaitlist(id, { quantity: Number(qty.value), ...areaOf(area.value) }, api.newKey('waitlist'));
        navigate('/app/waitlist');
      } catch (e) {
        showError(msg, e);
      }
    }));
    return h('section', { class: 'card', id: 'waitlist', 'aria-labelledby': 'wl-h' },
      h('h2', { id: 'wl-h' }, 'Waitlist'),
      h('p', { class: 'small muted' }, 'Sold out, or nothing you like? Seats that come back (unpaid holds, cancellations) are offered to the waitlist first, in the order people joined.'),
      h('div', { class: 'row' }, field('How many', qty), field('Where', area)), btn, msg);
  }

  // --- legend ------------------------------------------------------------------
  function drawLegend() {
    const items = [];
    if (colourSel.value === 'tier') {
      for (const t of venue.tiers) items.push([map.tierColour.get(t.name), `${t.name} · ${money(t.price)}`]);
    } else {
      items.push([COLOURS.available, 'available']);
    }
    items.push([COLOURS.held, 'held'], [COLOURS.sold, 'sold'], [COLOURS.resale, 'resale'], [COLOURS.selected, 'your pick']);
    fill(legend, items.map(([c, text]) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = c;
      return h('li', {}, sw, text);
    }));
  }
  drawLegend();
}
