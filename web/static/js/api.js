// The client of boxoffice's JSON API (httpapi/openapi.json). Every call
// returns the decoded body or throws a Problem (RFC 9457 problem+json, or a
// network failure with code 'network').

import { token } from './session.js';

export class Problem extends Error {
  constructor(status, body) {
    super((body && (body.detail || body.title)) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || (status === 0 ? 'network' : `http_${status}`);
    this.type = body && body.type;
    this.detail = (body && body.detail) || this.message;
    this.seats = (body && body.seats) || [];
    this.errors = (body && body.errors) || null; // field by field, when the API lists them
  }
}

// transient reports whether an error may go away by itself: no answer at
// all, a timeout, too many requests, or a server error. Pages retry these.
export function transient(err) {
  const s = err && err.status;
  return s === 0 || s === 408 || s === 425 || s === 429 || (s >= 500 && s < 600) || (err && err.name === 'TypeError');
}

// serverOffset is server time minus local time in ms, learnt from the Date
// header of each answer, so that hold countdowns run on the server's clock
// even when the device's clock is off.
let serverOffset = 0;
export const serverNow = () => Date.now() + serverOffset;

function learnClock(res) {
  const d = Date.parse(res.headers.get('Date') || '');
  // The header has whole seconds: only correct errors larger than that.
  if (!Number.isNaN(d) && Math.abs(d - Date.now() - serverOffset) > 1500) serverOffset = d - Date.now();
}

// request is one API call. opts: body (sent as JSON), auth (send the bearer
// token), key (an Idempotency-Key), headers, raw (return the Response).
export async function request(method, path, opts = {}) {
  const headers = { Accept: 'application/json', ...(opts.headers || {}) };
  if (opts.auth) {
    const t = token();
    if (!t) throw new Problem(401, { code: 'unauthorized', detail: 'Sign in first.' });
    headers.Authorization = `Bearer ${t}`;
  }
  if (opts.key) headers['Idempotency-Key'] = opts.key;
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res;
  try {
    // no-store: the page does its own revalidation (If-None-Match) where
    // it wants it, and sees 304s itself.
    res = await fetch(path, { method, headers, body, cache: 'no-store', signal: opts.signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new Problem(0, { detail: 'The box office cannot be reached. Check your connection and try again.' });
  }
  learnClock(res);
  if (opts.raw) return res;
  if (res.status === 204 || res.status === 304) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) throw new Problem(res.status, data);
  return data;
}

// newKey makes an idempotency key. crypto.randomUUID needs a secure
// context; getRandomValues does not, so the page works over plain HTTP on
// a LAN address too.
export function newKey(prefix = 'ui') {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return prefix + '-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// Events
export const listEvents = () => request('GET', '/events?limit=100');
export const getEvent = (id) => request('GET', `/events/${id}`);
export const createEvent = (body) => request('POST', '/events', { auth: true, body });
export const eventStats = (id) => request('GET', `/events/${id}/stats`, { auth: true });
export const eventListings = (id) => request('GET', `/events/${id}/listings`);

// availability fetches the compact seat view, revalidating with etag: it
// returns {etag, data} when it changed and null when it did not (304).
export async function availability(id, etag) {
  const res = await request('GET', `/events/${id}/availability`, { raw: true, headers: etag ? { 'If-None-Match': etag } : {} });
  if (res.status === 304) return null;
  if (!res.ok) throw new Problem(res.status, await res.json().catch(() => null));
  return { etag: res.headers.get('ETag'), data: await res.json() };
}

// Bookings
export const reserve = (body, key) => request('POST', '/bookings/reserve', { auth: true, body, key, raw: true });
export const getBooking = (id) => request('GET', `/bookings/${id}`, { auth: true });
export const confirm = (id, paymentToken, key) => request('POST', `/bookings/${id}/confirm`, { auth: true, body: { payment_token: paymentToken }, key });
export const release = (id) => request('DELETE', `/bookings/${id}`, { auth: true });
export const cancelBooking = (id, key) => request('POST', `/bookings/${id}/cancel`, { auth: true, body: {}, key });

// The queue
export const queueStatus = (id) => request('GET', `/queue/${id}`, { auth: true });
// EventSource sends no headers: the token goes in the query.
export const queueEventsURL = (id) => `/queue/${id}/events?access_token=${encodeURIComponent(token())}`;

// The waitlist
export const joinWaitlist = (eventId, body, key) => request('POST', `/events/${eventId}/waitlist`, { auth: true, body, key });
export const myWaitlist = () => request('GET', '/me/waitlist', { auth: true });
export const waitlistEntry = (id) => request('GET', `/waitlist/${id}`, { auth: true });
export const leaveWaitlist = (id) => request('DELETE', `/waitlist/${id}`, { auth: true });
export const waitlistEventsURL = (id) => `/waitlist/${id}/events?access_token=${encodeURIComponent(token())}`;

// Tickets and resale
export const myTickets = () => request('GET', '/me/tickets', { auth: true });
export const listTicket = (id, priceCents, key) => request('POST', `/tickets/${id}/listing`, { auth: true, body: { price_cents: priceCents }, key });
export const withdrawListing = (id) => request('DELETE', `/listings/${id}`, { auth: true });
export const myListings = () => request('GET', '/me/listings', { auth: true });
export const myPayouts = () => request('GET', '/me/payouts', { auth: true });

// ticketQR fetches a ticket's QR code (it needs the bearer token, so an
// <img src> cannot load it directly) and returns an object URL for an <img>.
export async function ticketQR(id) {
  const res = await request('GET', `/tickets/${id}/qr.svg`, { auth: true, raw: true, headers: { Accept: 'image/svg+xml' } });
  if (!res.ok) throw new Problem(res.status, await res.json().catch(() => null));
  return URL.createObjectURL(await res.blob());
}

// The test payment tokens of the built-in gateway (README, "Test payment
// tokens"), in the order the checkout offers them.
export const TEST_TOKENS = [
  { token: 'tok_visa', label: 'Visa ending 4242', does: 'Approves the payment.' },
  { token: 'tok_chargeDeclined', label: 'Declined card', does: 'The bank declines: nothing is charged and your seats stay held, so you can try another card.' },
  { token: 'tok_error', label: 'Gateway error', does: 'The payment service fails: nothing is charged or sold; try again.' },
  { token: 'tok_slow', label: 'Slow bank', does: 'Approves after a few seconds (the server\'s --slow-payment, 3 s by default).' },
];
