// My waitlist entries, live: each waiting or offered entry listens on its
// Server-Sent Events stream, so an offer (seats held for me) shows up at
// once, with a button to pay for it or to decline it.

import * as api from '../api.js';
import * as session from '../session.js';
import { h, fill, when, clock, money, count, announce, showError, busy, seatNames } from '../ui.js';

const LABEL = {
  waiting: ['In line', 'warn'],
  offered: ['Seats offered to you', 'good'],
  fulfilled: ['Done: paid', 'good'],
  lapsed: ['Offer lapsed', 'bad'],
  left: ['Left', ''],
};

export async function render(main, _params, scope, navigate) {
  document.title = 'Waitlist · boxoffice';
  if (!session.token()) {
    fill(main, h('h1', {}, 'Waitlist'), h('p', {}, h('a', { href: '/app/signin' }, 'Sign in'), ' to see your waitlist.'));
    return;
  }
  const list = h('ul', { class: 'tickets', id: 'waitlist' });
  fill(main, h('h1', {}, 'Waitlist'),
    h('p', { class: 'muted' }, 'When seats come back, the waitlist gets them first, in the order people joined. An offer holds the seats for you for a while: pay for them, or decline so the next person gets them. Join from an event\'s page.'),
    list);
  const { entries } = await api.myWaitlist();
  if (!entries.length) {
    fill(list, h('li', { class: 'muted' }, 'You are not on any waitlist. ', h('a', { href: '/app/' }, 'See events'), '.'));
    return;
  }
  const names = new Map();
  for (const e of entries) {
    if (!names.has(e.event_id)) names.set(e.event_id, (await api.getEvent(e.event_id)).name);
  }
  fill(list, entries.map((e) => {
    const li = h('li', {});
    draw(li, e);
    if (e.status === 'waiting' || e.status === 'offered') follow(li, e);
    return li;
  }));

  function follow(li, e) {
    const es = new EventSource(api.waitlistEventsURL(e.entry_id));
    scope.add(() => es.close());
    es.addEventListener('status', (m) => {
      const next = JSON.parse(m.data);
      if (next.status === 'offered' && e.status !== 'offered') announce(`Seats offered to you for ${names.get(next.event_id)}. Pay before ${clock(new Date(next.offer.held_until))}.`);
      e = next;
      draw(li, e);
    });
  }

  function draw(li, e) {
    const [label, kind] = LABEL[e.status] || [e.status, ''];
    const err = h('div', { class: 'notice' });
    const parts = [
      h('p', { class: 'seat' }, h('a', { href: `/app/events/${e.event_id}` }, names.get(e.event_id))),
      h('p', {}, h('span', { class: `badge ${kind}` }, label)),
      h('p', { class: 'small' }, `${e.quantity} seat${e.quantity === 1 ? '' : 's'}`,
        e.section ? ` in section ${e.section}` : e.price_tier ? ` in price tier ${e.price_tier}` : ' anywhere',
        ` · joined ${when(e.joined_at)}`),
    ];
    if (e.status === 'waiting') parts.push(h('p', {}, e.ahead ? `${count(e.ahead)} ahead of you.` : 'You are first in line.'));
    if (e.status === 'offered' && e.offer) {
      const o = e.offer;
      const decline = h('button', { type: 'button', class: 'danger' }, 'Decline');
      decline.addEventListener('click', () => busy(decline, 'Declining…', async () => {
        try { await api.release(o.booking_id); } catch (x) { showError(err, x); }
      }));
      const n = o.seat_ids.length;
      parts.push(h('div', { class: 'notice good offer', 'data-seats': o.seat_ids.join(' ') },
        h('p', {}, h('strong', { class: 'offer-seats' }, seatNames(o.seat_ids)), ` · ${n} seat${n === 1 ? '' : 's'} · ${money(o.amount_cents)}`),
        h('p', {}, `Held for you until ${clock(new Date(o.held_until))}. Pay before then, or decline so the next person gets them.`)),
      h('div', { class: 'row' }, h('a', { class: 'button', href: `/app/checkout/${o.booking_id}` }, 'Pay for these seats'), decline));
    }
    if (e.status === 'waiting' || e.status === 'offered') {
      const leave = h('button', { type: 'button', class: 'secondary' }, 'Leave the waitlist');
      leave.addEventListener('click', () => busy(leave, 'Leaving…', async () => {
        try {
          await api.leaveWaitlist(e.entry_id);
          navigate('/app/waitlist', { replace: true });
        } catch (x) { showError(err, x); }
      }));
      parts.push(leave);
    }
    parts.push(err);
    fill(li, h('article', { class: 'card ticket', 'data-entry': e.entry_id }, parts));
  }
}
