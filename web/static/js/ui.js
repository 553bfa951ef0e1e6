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
const shortTimeFmt = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
export const clockShort = (d) => shortTimeFmt.format(d);
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

// showError puts the text of an API problem (or any error) into box, in
// the buyer's words (see friendly).
export function showError(box, err, prefix = '') {
  const text = typeof err === 'string' ? err : friendly(err);
  fill(box, prefix ? `${prefix}: ${text}` : text);
  box.className = 'notice bad';
  box.setAttribute('role', 'alert');
}

// --- seats in words ------------------------------------------------------------

// parseSeatId splits a seat id ("Floor-C-10") into {section, row, number},
// or returns null.
export function parseSeatId(id) {
  const m = /^([A-Za-z0-9_]+)-([A-Z]+)-(\d+)$/.exec(id || '');
  return m ? { section: m[1], row: m[2], number: Number(m[3]) } : null;
}

// seatName says a seat id the way a person would: "Section Floor, row C,
// seat 10".
export function seatName(id) {
  const p = parseSeatId(id);
  return p ? `Section ${p.section}, row ${p.row}, seat ${p.number}` : String(id);
}

// shortSeat is the compact name for tight spaces: "Floor C10".
export function shortSeat(id) {
  const p = parseSeatId(id);
  return p ? `${p.section} ${p.row}${p.number}` : String(id);
}

// seatNames says a list of seat ids: seats of one row are grouped
// ("Section Floor, row C, seats 10 and 11"), rows are separated by "; ".
export function seatNames(ids) {
  const groups = [];
  for (const id of ids || []) {
    const p = parseSeatId(id);
    if (!p) { groups.push({ raw: String(id) }); continue; }
    const g = groups.find((x) => x.section === p.section && x.row === p.row);
    if (g) g.numbers.push(p.number);
    else groups.push({ section: p.section, row: p.row, numbers: [p.number] });
  }
  return groups.map((g) => {
    if (g.raw) return g.raw;
    const n = g.numbers.sort((a, b) => a - b);
    const list = n.length === 1 ? `seat ${n[0]}` : `seats ${n.slice(0, -1).join(', ')} and ${n[n.length - 1]}`;
    return `Section ${g.section}, row ${g.row}, ${list}`;
  }).join('; ');
}

// --- problems in words ---------------------------------------------------------

// What the API's field names mean to a person.
const FIELD_WORDS = {
  name: 'the name', venue: 'the venue', starts_at: 'the show\'s start', sale_opens_at: 'the sale\'s opening',
  sale_mode: 'the sale mode', ticket_limit: 'the ticket limit per person', refund_cutoff_hours: 'the refund deadline (hours before the show)',
  resale_cap_percent: 'the resale price cap', resale_enabled: 'fan-to-fan resale', sections: 'the sections',
  price_cents: 'the price', price_tier: 'the price tier', rows: 'the number of rows', seats_per_row: 'the number of seats per row',
  payment_token: 'the card', quantity: 'the number of seats', seat_ids: 'the seats', listing_id: 'the resale listing',
  best_available: 'best available', section: 'the section', event_id: 'the event', code: 'the code', limit: 'the limit',
};
const fieldWord = (f) => FIELD_WORDS[f] || f.replace(/_/g, ' ');
const cap1 = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const stop = (s) => (/[.!?]$/.test(s) ? s : `${s}.`);

// Whole messages that read better rewritten than word by word.
const REWRITES = [
  [/^sale_opens_at must be before starts_at$/, () => 'The sale must open before the show starts.'],
  [/^(\w+) is required$/, (m) => `Please fill in ${fieldWord(m[1])}.`],
  [/^(\w+) must be an RFC 3339 time.*$/, (m) => `${cap1(fieldWord(m[1]))} is not a valid date and time.`],
  [/^price_cents must be between (\d+) and (\d+)$/, (m) => `The price must be between ${money(Number(m[1]))} and ${money(Number(m[2]))}.`],
  [/^sections\[(\d+)\]\.price_cents must be between (\d+) and (\d+)$/, (m) => `Section ${Number(m[1]) + 1}: the price must be between ${money(Number(m[2]))} and ${money(Number(m[3]))}.`],
  [/^sections\[(\d+)\]\.(\w+) (.*)$/, (m) => `Section ${Number(m[1]) + 1}: ${fieldWord(m[2])} ${m[3]}`],
  [/^(\w+) must be (.*)$/, (m) => (FIELD_WORDS[m[1]] ? `${cap1(fieldWord(m[1]))} must be ${m[2]}` : null)],
  [/^the request body .*|^malformed JSON.*|^unknown field .*|^field .* must be .*|^invalid JSON.*/, () => 'The form could not be sent as it is. Check the values and try again.'],
  [/idempotency key/i, () => 'That request is already being handled. Wait a moment and try again.'],
];

// By problem code, when the code says more than the detail.
const CODE_WORDS = {
  network: 'The box office cannot be reached. Check your connection and try again.',
  internal: 'Something went wrong on our side. Please try again in a moment.',
  unavailable: 'The box office is very busy right now. Please try again in a moment.',
  rate_limited: 'Too many tries in a short time. Wait a few seconds and try again.',
  unauthorized: 'Your sign-in is missing or has expired. Please sign in again.',
  forbidden: 'Your account is not allowed to do that.',
  too_large: 'That is too much to send at once.',
  idempotency_mismatch: 'That request is already being handled. Wait a moment and try again.',
  idempotency_in_flight: 'That request is already being handled. Wait a moment and try again.',
  idempotency_key_missing: 'That request is already being handled. Wait a moment and try again.',
};

// friendly renders an API problem (or any error, or a server message) in
// a buyer's words: prices in money, seats by section, row and number,
// dates formatted, no API field names.
export function friendly(err) {
  if (err === null || err === undefined) return '';
  if (typeof err === 'string') return words(err);
  const code = err.code || '';
  if (CODE_WORDS[code]) return CODE_WORDS[code];
  if (/^http_5\d\d$/.test(code)) return CODE_WORDS.internal;
  // A problem that lists its errors (field by field) says each.
  const list = problemErrors(err);
  if (list.length) return list.map((e) => e.text).join(' ');
  const text = err.detail || err.message || String(err);
  return words(text);
}

// problemErrors returns a problem's field errors as [{field, text}]:
// from an "errors" member (an array of {field|name|pointer, detail|message}
// or strings, or an object of field → message) when the API sends one,
// else from the detail, whose first word names the field.
export function problemErrors(err) {
  const out = [];
  const raw = err && err.errors;
  const push = (field, msg) => {
    field = String(field || '').replace(/^#?\/?/, '').replace(/\//g, '.');
    const text = words(field && msg && !String(msg).startsWith(field) ? `${field} ${msg}` : String(msg || ''));
    out.push({ field: field || fieldOf(String(msg || '')), text });
  };
  if (Array.isArray(raw)) {
    for (const e of raw) {
      if (typeof e === 'string') push('', e);
      else if (e) push(e.field || e.name || e.pointer || e.location, e.detail || e.message || e.title);
    }
  } else if (raw && typeof raw === 'object') {
    for (const [f, m] of Object.entries(raw)) push(f, Array.isArray(m) ? m.join(', ') : m);
  }
  return out;
}

// fieldOf returns the API field a message starts with ("sale_opens_at must
// be…" → "sale_opens_at", "sections[1].rows …" → "sections[1].rows"), or ''.
export function fieldOf(text) {
  const m = /^(sections\[\d+\]\.\w+|\w+)\b/.exec(text || '');
  if (!m) return '';
  const f = m[1];
  return f.startsWith('sections[') || FIELD_WORDS[f] ? f : '';
}

const ISO_RE = /\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)\b/g;
const SEAT_RE = /\b([A-Za-z0-9_]+-[A-Z]{1,3}-\d+)\b/g;

// words rewrites one server message for people.
export function words(text) {
  text = String(text || '').trim();
  if (!text) return '';
  for (const [re, fn] of REWRITES) {
    const m = re.exec(text);
    if (m) {
      const out = fn(m);
      if (out) { text = out; break; }
    }
  }
  text = text
    .replace(/\b(\d+) cents\b/g, (_, n) => money(Number(n)))
    .replace(ISO_RE, (iso) => when(iso))
    .replace(SEAT_RE, (id) => (parseSeatId(id) ? seatName(id) : id))
    .replace(/\b(sections\[(\d+)\]\.)?([a-z]+(?:_[a-z]+)+)\b/g, (all, sec, i, f) => (FIELD_WORDS[f] ? (sec ? `section ${Number(i) + 1}'s ` : '') + fieldWord(f).replace(/^the /, '') : all));
  return stop(cap1(text));
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
