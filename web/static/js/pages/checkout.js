// Checkout: the held seats, a countdown to the end of the hold, payment with
// the test gateway's tokens, and the confirmation with the tickets.

import * as api from '../api.js';
import { buildVenue, indexOf, seat } from '../venue.js';
import { h, fill, when, money, duration, announce, showError, busy, clockShort } from '../ui.js';
import { ticketCard } from './tickets.js';

// The countdown is read out at these many seconds left (and when it ends);
// a live region ticking every second would drown everything else.
const MILESTONES = [300, 120, 60, 30, 10];

export async function render(main, [id], scope, navigate) {
  document.title = 'Checkout · boxoffice';
  const b = await api.getBooking(id);
  const ev = await api.getEvent(b.event_id);
  const venue = buildVenue(ev.sections);

  if (b.status === 'confirmed') {
    renderConfirmation(main, ev, venue, b.confirmation_code, b.amount_cents, b.tickets || [], scope);
    return;
  }
  if (b.status !== 'pending') {
    const why = {
      released: 'You gave these seats back.',
      expired: 'The hold on these seats ran out before payment, so they went back on sale.',
      failed: 'This booking failed.',
      cancelled: 'This booking was cancelled.',
    }[b.status] || `This booking is ${b.status}.`;
    fill(main, h('h1', {}, 'Checkout'), h('div', { class: 'notice warn', role: 'alert' }, why),
      h('p', {}, h('a', { class: 'button', href: `/app/events/${b.event_id}` }, 'Pick seats again')));
    return;
  }

  const until = Date.parse(b.held_until);
  const timer = h('div', { class: 'countdown', id: 'countdown', role: 'timer', 'aria-live': 'off' });
  const timerSay = h('p', { class: 'sr-only', 'aria-live': 'assertive' });
  const err = h('div', { class: 'notice', id: 'pay-error' });
  const payBtn = h('button', { type: 'submit', id: 'pay' }, `Pay ${money(b.amount_cents)}`);
  const releaseBtn = h('button', { type: 'button', class: 'danger', id: 'release' }, 'Give the seats back');
  // The hold's countdown sits right above Pay (and, on a phone, stays on
  // screen with it), so nobody pays blind to the clock.
  const holdPay = h('div', { class: 'hold-pay', id: 'hold-pay' },
    h('div', { class: 'hold' },
      h('span', { id: 'hold-h' }, h('strong', {}, 'Held for you')), timer,
      h('span', { class: 'small muted' }, `Pay by ${clockShort(new Date(until))} or the seats go back on sale.`)),
    timerSay,
    h('div', { class: 'row' }, payBtn), err);
  timer.setAttribute('aria-describedby', 'hold-h');
  const form = h('form', { class: 'card tokens', id: 'pay-form' },
    h('fieldset', {},
      h('legend', {}, 'Test card'),
      h('p', { class: 'small muted' }, 'This box office uses the built-in test gateway: no real money moves. Each test card behaves differently.'),
      api.TEST_TOKENS.map((t, k) => h('label', {},
        h('input', { type: 'radio', name: 'token', value: t.token, checked: k === 0, 'aria-describedby': `does-${t.token}` }),
        h('span', {}, h('strong', {}, `${t.label} `, h('code', { class: 'small' }, t.token)), h('span', { id: `does-${t.token}`, class: 'small' }, t.does))))),
    holdPay,
    h('div', { class: 'row give-back' }, releaseBtn));

  const seats = b.seat_ids.map((sid) => seat(venue, indexOf(venue, sid)));
  fill(main, h('div', { class: 'checkout' },
    h('h1', {}, 'Checkout'),
    h('p', { class: 'muted' }, `${ev.name} · ${ev.venue} · ${when(ev.starts_at)}`),
    h('section', { class: 'card', 'aria-labelledby': 'seats-h' },
      h('h2', { id: 'seats-h' }, b.listing_id ? 'Your resale seat' : b.waitlist_entry_id ? 'Seats offered to you from the waitlist' : 'Your seats'),
      h('ul', { class: 'selection' }, seats.map((s) => h('li', {}, `${s.section} · Row ${s.row} · Seat ${s.number}`, h('span', { class: 'small muted' }, b.listing_id ? 'resale' : `tier ${s.tier} · ${money(s.price)}`)))),
      h('p', { class: 'total' }, `Total ${money(b.amount_cents)}`)),
    form));

  let expired = false;
  const said = new Set();
  function tick() {
    const left = (until - api.serverNow()) / 1000;
    timer.textContent = duration(Math.max(0, left));
    timer.classList.toggle('low', left < 60);
    timer.setAttribute('aria-label', `Time left to pay: ${duration(Math.max(0, left))}`);
    for (const m of MILESTONES) {
      if (left <= m && left > m - 5 && !said.has(m)) {
        said.add(m);
        timerSay.textContent = m >= 60 ? `${m / 60} minute${m === 60 ? '' : 's'} left to pay.` : `${m} seconds left to pay.`;
      }
    }
    if (left <= 0 && !expired) {
      expired = true;
      payBtn.disabled = true;
      timerSay.textContent = 'Your hold has run out.';
      fill(err, 'The hold ran out and the seats went back on sale. ', h('a', { href: `/app/events/${b.event_id}` }, 'Pick seats again'), '.');
      err.className = 'notice bad';
    }
  }
  tick();
  scope.interval(tick, 250);

  // A new key per attempt; kept only when an attempt got no answer at
  // all, so that pressing Pay again cannot charge twice.
  let key = null;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (expired) return;
    const tok = form.querySelector('input[name="token"]:checked').value;
    key = key || api.newKey('pay');
    return busy(payBtn, tok === 'tok_slow' ? 'Waiting for the bank…' : 'Paying…', async () => {
      fill(err);
      err.className = 'notice';
      try {
        const c = await api.confirm(id, tok, key);
        key = null;
        announce('Payment approved. Your tickets are ready.');
        renderConfirmation(main, ev, venue, c.confirmation_code, c.amount_cents ?? b.amount_cents, c.tickets, scope);
      } catch (p) {
        if (p.status !== 0) key = null;
        const text = {
          payment_declined: 'Your card was declined. Nothing was charged and your seats are still held: try another card.',
          payment_failed: 'The payment service failed. Nothing was charged; your seats are still held. Try again.',
          hold_lost: 'Your hold ran out or was lost before the payment went through. Nothing was charged.',
        }[p.code];
        showError(err, text || p);
        if (p.code === 'hold_lost') {
          expired = true;
          payBtn.disabled = true;
          err.append(' ', h('a', { href: `/app/events/${b.event_id}` }, 'Pick seats again'), '.');
        }
      }
    });
  });

  releaseBtn.addEventListener('click', () => busy(releaseBtn, 'Giving back…', async () => {
    try {
      await api.release(id);
      announce('Seats given back.');
      navigate(`/app/events/${b.event_id}`, { replace: true });
    } catch (p) {
      showError(err, p);
    }
  }));
}

// renderConfirmation shows the tickets of a paid booking.
function renderConfirmation(main, ev, venue, code, amount, tickets, scope) {
  document.title = 'Your tickets · boxoffice';
  scope.dispose(); // stop the countdown
  fill(main,
    h('h1', {}, 'You\'re going!'),
    h('div', { class: 'notice good', role: 'status' },
      h('p', {}, 'Confirmation code ', h('span', { class: 'code code-big', id: 'confirmation-code' }, code)),
      h('p', {}, `${ev.name} · ${ev.venue} · ${when(ev.starts_at)}${amount ? ` · paid ${money(amount)}` : ''}`)),
    h('h2', {}, `Your ticket${tickets.length === 1 ? '' : 's'}`),
    h('ul', { class: 'tickets', id: 'confirmed-tickets' }, tickets.map((t) => {
      const s = seat(venue, indexOf(venue, t.seat_id));
      return h('li', {}, ticketCard({ ...t, section: s.section, row: s.row, number: s.number, price_tier: s.tier, event_name: ev.name }));
    })),
    h('p', {}, h('a', { class: 'button', href: '/app/tickets' }, 'All my tickets'), ' ', h('a', { class: 'button secondary', href: `/app/events/${ev.event_id}` }, 'Back to the event')));
}
