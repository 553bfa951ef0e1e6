// Sign-in for the demo: paste a bearer token. A real deployment would send
// people through its identity provider instead; the API only needs the
// token that comes back.

import * as session from '../session.js';
import { h, fill, when, field, announce } from '../ui.js';

export async function render(main, _params, _scope, navigate) {
  document.title = 'Sign in · boxoffice';
  const u = session.user();
  const area = h('textarea', { id: 'token', autocomplete: 'off', spellcheck: false, required: true });
  const err = h('div', { class: 'notice', id: 'signin-error' });
  const form = h('form', { class: 'card' },
    field('Token', area, 'a bearer token (JWT), as printed by boxoffice serve or boxoffice token --sub NAME'),
    h('button', { type: 'submit' }, 'Sign in'), err);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const bad = session.signIn(area.value);
    if (bad) {
      fill(err, bad);
      err.className = 'notice bad';
      err.setAttribute('role', 'alert');
      area.focus();
      return;
    }
    announce(`Signed in as ${session.user().id}.`);
    navigate('/app/');
  });
  fill(main,
    h('h1', {}, u ? 'Your account' : 'Sign in'),
    u ? h('div', { class: 'card' },
      h('dl', { class: 'kv' },
        h('dt', {}, 'Signed in as'), h('dd', { id: 'signed-in-as' }, u.id),
        h('dt', {}, 'Role'), h('dd', {}, u.admin ? 'organiser (admin)' : u.role),
        u.expires ? [h('dt', {}, 'Token expires'), h('dd', {}, when(u.expires.toISOString()))] : null),
      h('button', { type: 'button', class: 'secondary', onclick: () => { session.signOut(); announce('Signed out.'); navigate('/app/signin', { replace: true }); } }, 'Sign out'))
      : null,
    h('h2', {}, u ? 'Use another token' : 'Paste your token'),
    h('p', { class: 'muted' }, 'When it starts, ', h('code', {}, 'boxoffice serve'), ' prints links that sign you in as the demo customer or the demo organiser; open one of those, or paste a token here. The token stays in this browser only.'),
    form);
}
