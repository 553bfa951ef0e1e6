// The app's entry: signs in from a link's fragment, draws the header, and
// routes /app/... paths to pages. Each page module exports
// render(main, params, scope); the scope's timers, streams and listeners are
// stopped when the page is left.

import * as session from './session.js';
import { h, fill, Scope } from './ui.js';
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
  try {
    await page.render(main, params, scope, navigate);
  } catch (e) {
    console.error(e);
    fill(main, h('h1', {}, 'Something went wrong'), h('div', { class: 'notice bad', role: 'alert' }, e.detail || e.message || String(e)));
  }
  // Move focus to the new page's heading, as a page load would, so that
  // keyboard and screen-reader users start at the top of the new content.
  const h1 = main.querySelector('h1');
  if (h1 && !main.contains(document.activeElement)) {
    h1.tabIndex = -1;
    h1.focus({ preventScroll: true });
  }
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
