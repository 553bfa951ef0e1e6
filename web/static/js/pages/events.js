// The event list: every event, newest first, with its sale's state.

import * as api from '../api.js';
import { h, fill, when, count, money } from '../ui.js';

export async function render(main) {
  document.title = 'Events · boxoffice';
  const list = h('ul', { class: 'events', 'aria-label': 'Events' });
  fill(main, h('h1', {}, 'Events'), list);
  const { events } = await api.listEvents();
  if (events.length === 0) {
    fill(list, h('li', {}, h('p', { class: 'muted' }, 'No events yet. An organiser can create one on the Organiser page.')));
    return;
  }
  const now = api.serverNow();
  fill(list, events.map((e) => {
    const opens = Date.parse(e.sale_opens_at), starts = Date.parse(e.starts_at);
    const state = now >= starts ? h('span', { class: 'badge' }, 'Past')
      : now < opens ? h('span', { class: 'badge warn' }, `Sale opens ${when(e.sale_opens_at)}`)
        : h('span', { class: 'badge good' }, 'On sale');
    const from = Math.min(...e.sections.map((s) => s.price_cents));
    return h('li', {}, h('article', { class: 'card' },
      h('h2', {}, h('a', { href: `/app/events/${e.event_id}` }, e.name)),
      h('p', { class: 'muted' }, `${e.venue} · ${when(e.starts_at)}`),
      h('p', { class: 'row' }, state, e.sale_mode === 'queued' ? h('span', { class: 'badge' }, 'Flash sale: waiting room') : null),
      h('p', { class: 'grow small' }, `${count(e.seat_count)} seats in ${e.sections.length} section${e.sections.length === 1 ? '' : 's'}, from ${money(from)}`),
      h('p', {}, h('a', { class: 'button secondary', href: `/app/events/${e.event_id}`, 'aria-label': `Choose seats for ${e.name}` }, 'Choose seats'))));
  }));
}
