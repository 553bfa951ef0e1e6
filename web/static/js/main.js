// The app's entry: signs in from a link's fragment, draws the header, and
// routes /app/... paths to pages. Each page module exports
// render(main, params, scope); the scope's timers, streams and listeners are
// stopped when the page is left.

import * as session from './session.js';
import { h, fill, Scope, friendly, duration, announce } from './ui.js';
import { transient } from './api.js';
import * as events from './pages/events.js';
import * as eventPage from './pages/event.js';
import * as checkout from './pages/checkout.js';
import * as queue from './pages/queue.js';
import * as tickets from './pages/tickets.js';
import * as waitlist from './pages/waitlist.js';
import * as organiser from './pages/organiser.js';
import * as signin from './pages/signin.js';

const routes = [
  [/^\/app\/?$/, events],
  [/^\/app\/events\/(\d+)$/, eventPage],
  [/^\/app\/checkout\/(\d+)$/, checkout],
  [/^\/app\/queue\/(\d+)$/, queue],
  [/^\/app\/tickets$/, tickets],
  [/^\/app\/waitlist$/, waitlist],
  [/^\/app\/organiser$/, organiser],
  [/^\/app\/organiser\/events\/(\d+)$/, organiser],
  [/^\/app\/signin$/, signin],
];

const main = document.getElementById('main');
let scope = new Scope();

// navigate shows the page at path (an /app/ URL), adding a history entry
// unless replace.
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  route();
}
window.boxoffice = { navigate }; // for tests and the console

async function route() {
  scope.dispose();
  scope = new Scope();
  const path = location.pathname;
  let page = null, params = [];
  for (const [re, mod] of routes) {
    const m = re.exec(path);
    if (m) { page = mod; params = m.slice(1); break; }
  }
  markNav(path);
  fill(main);
  if (!page) {
    document.title = 'Not found · boxoffice';
    fill(main, h('h1', {}, 'Page not found'), h('p', {}, h('a', { href: '/app/' }, 'See all events')));
    return;
  }
  const here = scope;
  try {
    await page.render(main, params, scope, navigate);
    if (retry.path === path && retry.attempt > 0) announce('Back online: the page is up to date.');
    retry = { path, attempt: 0 };
  } catch (e) {
    if (here !== scope || here.disposed) return; // the person moved on meanwhile
    if (!(e && e.status !== undefined)) console.error(e); // a bug, not an answer of the API
    failed(path, e, here);
  }
  // Move focus to the new page's heading, as a page load would, so that
  // keyboard and screen-reader users start at the top of the new content.
  const h1 = main.querySelector('h1');
  if (h1 && !main.contains(document.activeElement)) {
    h1.tabIndex = -1;
    h1.focus({ preventScroll: true });
  }
}

// A page that could not load tries again by itself, waiting longer each
// time (2 s, 4 s, 8 s, … up to a minute), and offers a Retry button.
const BACKOFF_MS = [2000, 4000, 8000, 15000, 30000, 60000];
let retry = { path: '', attempt: 0 };

function failed(path, e, here) {
  if (retry.path !== path) retry = { path, attempt: 0 };
  const status = e && e.status;
  const again = transient(e) || status === undefined;
  const title = status === 404 ? 'Not found' : status === 401 ? 'Please sign in' : again ? 'This page could not be loaded' : 'This page cannot be shown';
  document.title = `${title} · boxoffice`;
  const waitEl = h('p', { id: 'retry-wait', class: 'small muted' });
  const retryBtn = h('button', { type: 'button', id: 'retry' }, 'Retry now');
  retryBtn.addEventListener('click', () => { retry.attempt = 0; route(); });
  const text = status === 404 ? `${friendly(e)} It may have been removed, or the link is wrong.` : friendly(e);
  fill(main, h('div', { class: 'page-error', id: 'page-error' },
    h('h1', {}, title),
    h('div', { class: 'notice bad', role: 'alert', id: 'page-error-text' }, text),
    again ? waitEl : null,
    h('div', { class: 'row' },
      retryBtn,
      status === 401 ? h('a', { class: 'button secondary', href: '/app/signin' }, 'Sign in') : null,
      h('a', { class: 'button secondary', href: '/app/' }, 'See all events'))));
  if (!again) return;
  const delay = BACKOFF_MS[Math.min(retry.attempt, BACKOFF_MS.length - 1)];
  retry.attempt++;
  const at = Date.now() + delay;
  const show = () => {
    const sec = Math.max(0, Math.ceil((at - Date.now()) / 1000));
    fill(waitEl, sec >= 60 ? `Trying again by itself in ${duration(sec)}…` : `Trying again by itself in ${sec} second${sec === 1 ? '' : 's'}…`);
  };
  show();
  here.interval(show, 1000);
  here.timeout(() => { if (!here.disposed) route(); }, delay);
  // Back online: no need to wait for the timer.
  here.on(window, 'online', () => { if (!here.disposed) route(); });
}

function markNav(path) {
  for (const a of document.querySelectorAll('.top nav a')) {
    const href = a.getAttribute('href');
    const current = href === '/app/' ? path === '/app/' || path.startsWith('/app/events/') : path.startsWith(href);
    if (current) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
}

function drawWho() {
  const u = session.user();
  const who = document.getElementById('who');
  document.querySelector('[data-role="admin"]').hidden = !(u && u.admin);
  if (!u) {
    fill(who, h('a', { href: '/app/signin' }, 'Sign in'));
    return;
  }
  fill(who,
    h('span', {}, 'Signed in as ', h('strong', {}, u.id)),
    u.admin ? h('span', { class: 'badge' }, 'organiser') : null,
    h('a', { href: '/app/signin' }, 'Account'));
}

// Links inside the app change the page without reloading it.
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[href]');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/app')) return;
  if (url.pathname === location.pathname && url.hash) return; // an in-page anchor
  e.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', route);
window.addEventListener('boxoffice:session', drawWho);
// Another tab signed in or out.
window.addEventListener('storage', (e) => { if (e.key === 'boxoffice.token') { drawWho(); route(); } });

session.fromFragment();
drawWho();
route();
