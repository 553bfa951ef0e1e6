// The signed-in user: a bearer token (an HS256 JWT the server issued) kept
// in localStorage. The page never checks the signature, which it cannot:
// it reads the claims only to show who is signed in, and the server
// decides on every request.

const KEY = 'boxoffice.token';

// claims decodes a JWT's payload, or returns null for anything else.
export function claims(token) {
  try {
    const part = token.split('.')[1];
    const b64 = part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '=');
    const json = new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    const c = JSON.parse(json);
    return typeof c === 'object' && c && typeof c.sub === 'string' ? c : null;
  } catch {
    return null;
  }
}

// token returns the stored token, or '' when there is none or it has
// expired (an expired token would make the server refuse even public
// reads).
export function token() {
  const t = localStorage.getItem(KEY) || '';
  const c = t && claims(t);
  if (!c) return '';
  if (c.exp && c.exp * 1000 < Date.now()) {
    localStorage.removeItem(KEY);
    return '';
  }
  return t;
}

// user is {id, role, admin, expires} for the stored token, or null.
export function user() {
  const t = token();
  if (!t) return null;
  const c = claims(t);
  return { id: c.sub, role: c.role || 'customer', admin: c.role === 'admin', expires: c.exp ? new Date(c.exp * 1000) : null };
}

// signIn stores a token after a sanity check; it returns an error text or ''.
export function signIn(raw) {
  const t = (raw || '').trim().replace(/^Bearer\s+/i, '');
  const c = claims(t);
  if (!c) return 'That does not look like a boxoffice token (a JWT: three parts separated by dots).';
  if (c.exp && c.exp * 1000 < Date.now()) return 'That token has expired. Ask for a new one.';
  localStorage.setItem(KEY, t);
  window.dispatchEvent(new Event('boxoffice:session'));
  return '';
}

export function signOut() {
  localStorage.removeItem(KEY);
  window.dispatchEvent(new Event('boxoffice:session'));
}

// fromFragment signs in with a link's "#token=..." and takes the token out
// of the address bar and the history, so it is not bookmarked or shared by
// accident. It returns true when it signed in.
export function fromFragment() {
  const m = /^#(?:.*&)?token=([^&]+)/.exec(location.hash);
  if (!m) return false;
  const err = signIn(decodeURIComponent(m[1]));
  history.replaceState(history.state, '', location.pathname + location.search);
  return !err;
}
