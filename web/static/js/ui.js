// Small DOM and formatting helpers shared by the pages.

// h builds an element: h('button', {class: 'x', onclick: fn}, 'Text', child).
// Attributes named on* become listeners; true/false toggle boolean
// attributes; null and undefined are skipped. Children may be strings,
// nodes, arrays or null.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'class') {
      el.className = v;
    } else if (k === 'text') {
      el.textContent = v;
    } else if (k in el && typeof v !== 'string') {
      el[k] = v; // properties such as value, checked, disabled
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// clear empties an element and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// The API names no currency; prices are shown in this one.
const CURRENCY = 'EUR';
const moneyFmt = new Intl.NumberFormat(undefined, { style: 'currency', currency: CURRENCY });
export const money = (cents) => moneyFmt.format((cents || 0) / 100);

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const timeFmt = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
export const when = (iso) => (iso ? dateFmt.format(new Date(iso)) : '');
export const clock = (d) => timeFmt.format(d);
export const count = (n) => new Intl.NumberFormat().format(n || 0);

// duration renders seconds as "1:05" or "1:02:03".
export function duration(seconds) {
  seconds = Math.max(0, Math.round(seconds));
  const s = seconds % 60, m = Math.floor(seconds / 60) % 60, hr = Math.floor(seconds / 3600);
  const two = (n) => String(n).padStart(2, '0');
  return hr > 0 ? `${hr}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}

// roughly renders a wait for people: "about 3 minutes", "under a minute".
export function roughly(seconds) {
  if (seconds === null || seconds === undefined) return 'being estimated';
  if (seconds < 60) return 'under a minute';
  const min = Math.round(seconds / 60);
  if (min < 60) return `about ${min} minute${min === 1 ? '' : 's'}`;
  const hr = Math.round(min / 6) / 10;
  return `about ${hr} hours`;
}

// announce says something to screen readers through the page's polite
// live region.
export function announce(text) {
  const el = document.getElementById('announcer');
  if (!el) return;
  // Re-setting the same text is not announced again; clear it first.
  el.textContent = '';
  setTimeout(() => { el.textContent = text; }, 50);
}

// notice renders a message box; kind is '', 'good', 'bad' or 'warn'. Error
// boxes are role=alert so that they are read out at once.
export function notice(kind, ...children) {
  return h('div', { class: `notice ${kind}`, role: kind === 'bad' ? 'alert' : 'status' }, ...children);
}

// showError puts the text of an API problem (or any error) into box.
export function showError(box, err, prefix = '') {
  const text = (err && (err.detail || err.message)) || String(err);
  fill(box, prefix ? `${prefix}: ${text}` : text);
  box.className = 'notice bad';
  box.setAttribute('role', 'alert');
}

// field wraps a labelled control: field('Quantity', input, 'hint').
export function field(label, control, hint) {
  if (!control.id) control.id = uid('f');
  const hintEl = hint ? h('span', { class: 'hint', id: control.id + '-hint' }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: control.id }, label, hintEl ? ' ' : null, hintEl), control);
}

let uidSeq = 0;
export function uid(prefix) { return `${prefix}-${++uidSeq}`; }

// busy disables a button while fn runs and puts its label back after.
export async function busy(button, label, fn) {
  const old = button.textContent;
  button.disabled = true;
  button.replaceChildren(h('span', { class: 'spinner', 'aria-hidden': 'true' }), ' ', label);
  try {
    return await fn();
  } finally {
    button.disabled = false;
    button.textContent = old;
  }
}

// Timers a page starts are stopped when the page goes: each page gets a
// Scope and calls scope.dispose() through the router.
export class Scope {
  constructor() { this.fns = []; this.disposed = false; }
  interval(fn, ms) { const id = setInterval(fn, ms); this.fns.push(() => clearInterval(id)); return id; }
  timeout(fn, ms) { const id = setTimeout(fn, ms); this.fns.push(() => clearTimeout(id)); return id; }
  on(target, type, fn, opts) { target.addEventListener(type, fn, opts); this.fns.push(() => target.removeEventListener(type, fn, opts)); }
  add(fn) { this.fns.push(fn); }
  dispose() { this.disposed = true; for (const fn of this.fns.splice(0)) { try { fn(); } catch { /* keep going */ } } }
}
