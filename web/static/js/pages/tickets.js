// My tickets: each valid ticket with its code as a QR code, and what can be
// done with it: list it for resale (or withdraw the listing), cancel its
// booking for a refund where the event allows; then my listings and payouts.

import * as api from '../api.js';
import * as session from '../session.js';
import { h, fill, when, money, showError, busy, field, announce, seatName, words } from '../ui.js';

const LISTING_STATUS = { active: 'on sale', sold: 'sold', withdrawn: 'withdrawn', cancelled: 'cancelled' };

// ticketCard renders one ticket: seat, code and QR (fetched with the token).
export function ticketCard(t, actions = null) {
  const img = h('img', { class: 'qr', alt: `QR code of ticket code ${t.code}`, width: 180, height: 180 });
  const qrErr = h('p', { class: 'small muted' });
  if (t.code) {
    api.ticketQR(t.ticket_id).then((url) => {
      img.addEventListener('load', () => URL.revokeObjectURL(url), { once: true });
      img.src = url;
    }).catch(() => { img.hidden = true; qrErr.textContent = 'The QR code could not be loaded: reload the page to try again. The code above works at the door too.'; });
  } else {
    img.hidden = true;
  }
  return h('article', { class: 'card ticket', 'data-ticket': t.ticket_id, 'data-seat': t.seat_id, 'aria-label': `Ticket ${t.section} row ${t.row} seat ${t.number}` },
    t.event_name ? h('p', { class: 'small muted' }, t.event_name, t.starts_at ? ` · ${when(t.starts_at)}` : '', t.venue ? ` · ${t.venue}` : '') : null,
    h('p', { class: 'seat' }, `${t.section} · Row ${t.row} · Seat ${t.number}`),
    img, qrErr,
    h('p', {}, 'Code ', h('span', { class: 'code' }, t.code || '—'),
      t.checked_in_at ? h('span', { class: 'badge good' }, ` checked in ${when(t.checked_in_at)}`) : null,
      t.status && t.status !== 'valid' ? h('span', { class: 'badge bad' }, ` ${words(t.void_reason || t.status).replace(/\.$/, '')}`) : null),
    actions);
}

export async function render(main, _params, scope) {
  document.title = 'My tickets · boxoffice';
  if (!session.token()) {
    fill(main, h('h1', {}, 'My tickets'), h('p', {}, h('a', { href: '/app/signin' }, 'Sign in'), ' to see your tickets.'));
    return;
  }
  const msg = h('div', { class: 'notice', id: 'tickets-msg' });
  const listEl = h('div', { id: 'tickets' });
  const listingsEl = h('div');
  const payoutsEl = h('div');
  fill(main, h('h1', {}, 'My tickets'), msg, listEl,
    h('h2', {}, 'My resale listings'), listingsEl, h('h2', {}, 'Payouts'), payoutsEl);

  const events = new Map(); // event id → event, for face values and caps
  const eventOf = async (id) => {
    if (!events.has(id)) events.set(id, await api.getEvent(id));
    return events.get(id);
  };

  async function load() {
    const [{ tickets }, { listings }, { payouts }] = await Promise.all([api.myTickets(), api.myListings(), api.myPayouts()]);
    if (scope.disposed) return;
    const byEvent = new Map();
    for (const t of tickets) {
      if (!byEvent.has(t.event_id)) byEvent.set(t.event_id, []);
      byEvent.get(t.event_id).push(t);
    }
    const groups = [];
    for (const [eid, ts] of byEvent) {
      const ev = await eventOf(eid);
      groups.push(h('section', { 'aria-labelledby': `ev-${eid}` },
        h('h2', { id: `ev-${eid}` }, h('a', { href: `/app/events/${eid}` }, ts[0].event_name), h('span', { class: 'small muted' }, ` · ${ts[0].venue} · ${when(ts[0].starts_at)}`)),
        h('ul', { class: 'tickets' }, ts.map((t) => h('li', {}, ticketCard({ ...t, event_name: '' }, actions(t, ev)))))));
    }
    fill(listEl, groups.length ? groups : h('p', { class: 'muted' }, 'No tickets yet. ', h('a', { href: '/app/' }, 'Find an event'), '.'));
    fill(listingsEl, listings.length ? h('table', {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Seat'), h('th', { scope: 'col' }, 'Price'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Listed'))),
      h('tbody', {}, listings.map((l) => h('tr', { 'data-listing-seat': l.seat_id }, h('td', {}, seatName(l.seat_id)), h('td', {}, money(l.price_cents)), h('td', {}, LISTING_STATUS[l.status] || l.status), h('td', {}, when(l.created_at))))))
      : h('p', { class: 'muted' }, 'None.'));
    fill(payoutsEl, payouts.length ? h('ul', {}, payouts.map((p) => {
      const l = listings.find((x) => x.listing_id === p.listing_id);
      return h('li', {}, `${money(p.amount_cents)} for ${l ? seatName(l.seat_id) : 'a resold ticket'}, ${when(p.created_at)}${p.status ? ` (${p.status})` : ''}`);
    }))
      : h('p', { class: 'muted' }, 'Nothing owed to you yet. When a ticket you listed sells, the payout shows here.'));
  }

  // actions are what the owner may do with a ticket now.
  function actions(t, ev) {
    const box = h('div', { class: 'stack' });
    const err = h('div', { class: 'notice' });
    if (t.listing_id) {
      const btn = h('button', { type: 'button', class: 'secondary' }, 'Withdraw from resale');
      btn.addEventListener('click', () => busy(btn, 'Withdrawing…', async () => {
        try {
          await api.withdrawListing(t.listing_id);
          announce('Listing withdrawn.');
          await load();
        } catch (e) { showError(err, e); }
      }));
      box.append(h('p', {}, h('span', { class: 'badge warn' }, 'Listed for resale')), btn);
    } else if (ev.resale_enabled && !t.checked_in_at) {
      const sec = ev.sections.find((s) => s.name === t.section);
      const face = sec ? sec.price_cents : 0;
      const cap = ev.resale_cap_percent ? Math.floor((face * ev.resale_cap_percent) / 100) : 0;
      const price = h('input', { type: 'number', min: '1', step: '0.01', inputmode: 'decimal', value: (face / 100).toFixed(2), required: true });
      const btn = h('button', { type: 'submit', class: 'secondary' }, 'List for resale');
      const form = h('form', { class: 'inline-form' },
        field('Resale price', price, cap ? `at most ${money(cap)}` : `face value ${money(face)}`), btn);
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        return busy(btn, 'Listing…', async () => {
          try {
            await api.listTicket(t.ticket_id, Math.round(Number(price.value) * 100), api.newKey('list'));
            announce('Ticket listed for resale.');
            await load();
          } catch (e2) { showError(err, e2); }
        });
      });
      box.append(form);
    }
    if (t.refundable && !t.listing_id && !t.checked_in_at) {
      // Two steps rather than window.confirm: the second button says
      // exactly what happens, and works the same for every input method.
      const ask = h('button', { type: 'button', class: 'danger' }, 'Cancel for a refund');
      const yes = h('button', { type: 'button', class: 'danger', hidden: true }, 'Yes, cancel the booking');
      const no = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Keep it');
      const warn = h('p', { class: 'small', hidden: true }, 'This cancels the whole booking: every ticket bought with it stops working, and you get the money back.');
      const toggle = (asking) => { ask.hidden = asking; yes.hidden = no.hidden = warn.hidden = !asking; (asking ? yes : ask).focus(); };
      ask.addEventListener('click', () => toggle(true));
      no.addEventListener('click', () => toggle(false));
      yes.addEventListener('click', () => busy(yes, 'Cancelling…', async () => {
        try {
          const c = await api.cancelBooking(t.booking_id, api.newKey('cancel'));
          fill(msg, `Booking cancelled: ${money(c.refund_cents)} ${c.refund_status === 'refunded' ? 'refunded' : 'to be refunded shortly'}.`);
          msg.className = 'notice good';
          await load();
        } catch (e) { showError(err, e); }
      }));
      box.append(h('div', { class: 'row' }, ask, warn, yes, no));
    }
    box.append(err);
    return box;
  }

  await load();
}
