// The waiting room of a queued (flash) sale: the request's live position,
// estimated wait and progress over Server-Sent Events, then straight on to
// checkout when the seats are held, or a clear word and the waitlist when
// the request is turned down.

import * as api from '../api.js';
import { h, fill, count, roughly, duration, announce, showError, busy, field, words, seatNames } from '../ui.js';

const REASONS = {
  seat_taken: 'The seats you asked for went to people ahead of you in the queue.',
  limit_exceeded: 'You have reached the ticket limit for this event: you cannot buy more seats for it.',
  sale_not_open: 'The sale is over.',
  sold_out: 'Sold out: every seat of the kind you asked for is taken.',
  invalid: 'The request could not be served as asked.',
};
const ANNOUNCE_MS = 15000; // read the position out at most this often

export async function render(main, [id], scope, navigate) {
  document.title = 'Waiting room · boxoffice';
  const first = await api.queueStatus(id);
  const ev = await api.getEvent(first.event_id);
  const asked = JSON.parse(sessionStorage.getItem(`bo:queue:${id}`) || 'null');

  const heading = h('h2', { id: 'q-h' }, 'Your place in the queue');
  const big = h('div', { class: 'queue-big', id: 'queue-position' });
  const line = h('p', { id: 'queue-line' });
  const bar = h('progress', { id: 'queue-progress', max: 100, 'aria-label': 'Progress through the queue' });
  const wait = h('p', { id: 'queue-wait' });
  const live = h('div', { class: 'sr-only', 'aria-live': 'polite', id: 'queue-live' });
  const conn = h('p', { class: 'small muted', id: 'queue-conn' });
  const outcome = h('div', { id: 'queue-outcome' });
  const keepOpen = h('p', { class: 'small muted', id: 'queue-keep-open' }, 'Keep this page open: it moves on by itself when your turn comes. Leaving and coming back keeps your place.');
  fill(main,
    h('h1', {}, 'Waiting room'),
    h('p', { class: 'muted' }, `${ev.name} · ${ev.venue}`),
    h('section', { class: 'card', 'aria-labelledby': 'q-h' },
      heading,
      big, line, bar, wait, live, conn,
      keepOpen),
    askedFor(asked),
    outcome);

  let lastSaid = 0, lastStatus = '';
  let top = 0; // the largest "ahead" seen: the progress bar's full length

  let current = first;
  function show(t) {
    if (scope.disposed) return;
    current = t;
    if (t.status === 'held') {
      fill(big, '✓');
      fill(line, 'Your seats are held! Taking you to checkout…');
      bar.value = 100;
      announce('Your seats are held. Taking you to checkout.');
      sessionStorage.setItem(`bo:booking:${t.booking_id}`, JSON.stringify({ event_id: t.event_id }));
      navigate(`/app/checkout/${t.booking_id}`, { replace: true });
      return;
    }
    if (t.status === 'rejected') {
      rejected(t);
      return;
    }
    fill(heading, t.status === 'waiting' ? 'The sale opens in' : 'Your place in the queue');
    if (t.status === 'waiting') {
      const opens = Date.parse(t.sale_opens_at);
      const left = (opens - api.serverNow()) / 1000;
      fill(big, left > 0 ? duration(left) : '…');
      fill(line, left > 0 ? 'until the sale opens. Everyone in the waiting room before the opening gets a random place in the queue, so arriving early or late makes no difference.'
        : 'The sale is opening: places are being drawn…');
      bar.removeAttribute('value'); // indeterminate
      fill(wait);
    } else {
      top = Math.max(top, t.ahead);
      fill(big, `#${count(t.queue_position)}`);
      fill(line, t.ahead === 0 ? 'You are next.' : `${count(t.ahead)} ${t.ahead === 1 ? 'person is' : 'people are'} ahead of you.`);
      // How far the line has moved since this page first saw it; a sliver
      // at the start so that the bar reads as a bar.
      bar.value = top > 0 ? Math.max(3, Math.round(((top - t.ahead) / (top + 1)) * 100)) : 95;
      fill(wait, 'Estimated wait: ', h('strong', {}, roughly(t.estimated_wait_seconds)),
        seatsAtTurn(t));
    }
    const now = Date.now();
    if (t.status !== lastStatus || now - lastSaid > ANNOUNCE_MS) {
      lastSaid = now;
      live.textContent = t.status === 'waiting' ? 'In the waiting room; the sale has not opened yet.'
        : `Number ${t.queue_position} in the queue, ${t.ahead} ahead of you. Estimated wait ${roughly(t.estimated_wait_seconds)}.`;
    }
    lastStatus = t.status;
  }

  // How many seats of the kind asked for are left, and are likely to be at
  // this request's turn; a waitlist link when too few are.
  function seatsAtTurn(t) {
    if (t.seats_left == null || t.expected_seats_left_at_turn == null) return null;
    const p = h('p', { id: 'seats-at-turn' },
      `${count(t.seats_left)} ${t.seats_left === 1 ? 'seat' : 'seats'} of your kind left now; about ${count(t.expected_seats_left_at_turn)} expected at your turn.`);
    if (t.waitlist_url) {
      p.append(' ', h('a', { href: `/app/events/${t.event_id}#waitlist` }, 'Probably not enough: you can join the waitlist now.'));
    }
    return p;
  }

  function rejected(t) {
    fill(big, '—');
    bar.value = 0;
    fill(line, 'Your request could not be served. Your turn has passed, so there is nothing more to wait for.');
    fill(wait);
    fill(conn);
    // No more waiting: say what to do next instead of "keep this page open".
    fill(keepOpen, 'What next: join the waitlist below to be offered seats that come back, or go back to the seat map and pick other seats.');
    const msg = h('div', { class: 'notice' });
    const qty = h('select', { id: 'wl-qty' }, Array.from({ length: Math.min(ev.ticket_limit, 10) }, (_, k) => h('option', { value: String(k + 1) }, String(k + 1))));
    qty.value = String(Math.min((asked && asked.quantity) || 1, ev.ticket_limit, 10));
    const join = h('button', { type: 'button', id: 'join-waitlist' }, 'Join the waitlist');
    join.addEventListener('click', () => busy(join, 'Joining…', async () => {
      try {
        await api.joinWaitlist(t.event_id, { quantity: Number(qty.value) }, api.newKey('waitlist'));
        navigate('/app/waitlist');
      } catch (e) { showError(msg, e); }
    }));
    fill(outcome, h('section', { class: 'card', 'aria-labelledby': 'rej-h' },
      h('h2', { id: 'rej-h' }, 'No seats this time'),
      h('div', { class: 'notice bad', role: 'alert', id: 'queue-rejected' }, REASONS[t.reason] || (t.message ? words(t.message) : 'The request was turned down.')),
      t.reason === 'limit_exceeded'
        ? h('p', {}, 'You already hold or own as many tickets as this event allows each person. ', h('a', { href: '/app/tickets' }, 'See my tickets'), '.')
        : [
          h('h3', {}, 'Join the waitlist'),
          h('p', {}, 'You will be offered seats that come back (unpaid holds, cancellations), in the order people joined.'),
          h('div', { class: 'row' }, field('Seats wanted', qty), join),
          h('h3', {}, 'Or try other seats'),
          h('p', {}, 'Other seats may still be free: pick them on the seat map, or ask for the best available.'),
          h('p', {}, h('a', { class: 'button secondary', id: 'try-other-seats', href: `/app/events/${t.event_id}` }, 'Pick other seats')),
        ],
      msg));
    announce('Your request could not be served. You can join the waitlist.');
  }

  show(first);
  if (first.status === 'held' || first.status === 'rejected') return;

  // The live channel; the browser reconnects by itself (with
  // Last-Event-ID) if the stream drops. If it cannot be opened at all (a
  // proxy that refuses streams), fall back to polling.
  const es = new EventSource(api.queueEventsURL(id));
  scope.add(() => es.close());
  es.addEventListener('status', (e) => {
    fill(conn, 'Live');
    const t = JSON.parse(e.data);
    show(t);
    if (t.status === 'held' || t.status === 'rejected') es.close();
  });
  es.addEventListener('error', (e) => {
    if (e.data) { fill(conn, 'The queue is briefly unreachable; still trying. Your place is kept.'); return; } // the server's "error" event
    if (es.readyState === EventSource.CLOSED) {
      fill(conn, 'Live updates unavailable; checking every few seconds.');
      poll();
    } else {
      fill(conn, 'Reconnecting… your place is kept.');
    }
  });
  // The pre-queue countdown moves every second by itself.
  scope.interval(() => { if (current.status === 'waiting') show(current); }, 1000);

  let polling = false;
  function poll() {
    if (polling) return;
    polling = true;
    scope.interval(async () => {
      try { show(await api.queueStatus(id)); } catch (err) { fill(conn, api.transient(err) ? 'The queue cannot be reached right now; still trying. Your place is kept.' : `Could not check: ${words(err.detail || err.message)}`); }
    }, 3000);
  }
}

// askedFor recalls what this browser asked for (kept when the request was
// sent), or nothing when the page was opened elsewhere.
function askedFor(asked) {
  if (!asked || !asked.body) return null;
  const b = asked.body;
  let what;
  if (b.seat_ids) what = seatNames(b.seat_ids);
  else if (b.best_available) {
    const ba = b.best_available;
    what = `the best ${ba.quantity} seat${ba.quantity === 1 ? '' : 's'} side by side${ba.section ? ` in ${ba.section}` : ba.price_tier ? ` in tier ${ba.price_tier}` : ''}`;
  }
  return what ? h('section', { class: 'card', 'aria-labelledby': 'asked-h' }, h('h2', { id: 'asked-h' }, 'You asked for'), h('p', {}, what)) : null;
}
