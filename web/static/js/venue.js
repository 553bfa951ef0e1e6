// The venue's geometry, computed from the event's sections: where each seat
// sits on the map, and which seat is at a point. The seat order is the
// server's layout order (event.go Seats, GET /events/{id}/layout): section
// by section as the organiser listed them, row by row (A, B, …, Z, AA, …),
// seats numbered from 1. The compact availability view indexes into that
// order, so the page never needs the (large) layout document itself.
//
// Map units: one seat is one unit square. Sections are blocks packed in
// shelves under the stage, in their listed order.

export const STATUS = { available: 0, held: 1, sold: 2, resale: 3 };
export const STATUS_NAMES = ['available', 'held', 'sold', 'resale'];
const LETTER = { a: 0, h: 1, s: 2, r: 3 };

// FEATURES are the seat features the server knows (event.go SeatFeatures),
// in the order the map and the filters list them; FEATURE_NAMES says each
// in words.
export const FEATURES = ['wheelchair', 'companion', 'restricted_view'];
export const FEATURE_NAMES = { wheelchair: 'Wheelchair space', companion: 'Companion seat', restricted_view: 'Restricted view' };

const GAP = 4; // units between sections
const LABEL = 3; // units above a section for its name
const STAGE_H = 5;

// rowLabel turns a 1-based row index into its label: 1 → A, 27 → AA.
export function rowLabel(r) {
  let s = '';
  while (r > 0) {
    r--;
    s = String.fromCharCode(65 + (r % 26)) + s;
    r = Math.floor(r / 26);
  }
  return s;
}

// rowIndex is rowLabel's inverse (A → 1); 0 for a bad label.
export function rowIndex(label) {
  let r = 0;
  for (const ch of label) {
    const c = ch.charCodeAt(0) - 64;
    if (c < 1 || c > 26) return 0;
    r = r * 26 + c;
  }
  return r;
}

// buildVenue lays out sections ({name, price_tier, price_cents, rows,
// seats_per_row, features}) and returns the geometry. features, as the
// event's sections give them ({"A-1": ["wheelchair"]}), become
// venue.features (seat index → its features, only the seats that have
// some), each section's featureCount and the venue's (feature → seats).
export function buildVenue(sections) {
  const secs = [];
  const features = new Map();
  const featureCount = Object.fromEntries(FEATURES.map((f) => [f, 0]));
  let base = 0;
  for (const s of sections) {
    const sec = {
      name: s.name, tier: s.price_tier, price: s.price_cents, rows: s.rows, perRow: s.seats_per_row,
      base, count: s.rows * s.seats_per_row, x: 0, y: 0, w: s.seats_per_row, h: s.rows,
      featureCount: Object.fromEntries(FEATURES.map((f) => [f, 0])),
    };
    for (const [where, fs] of Object.entries(s.features || {})) {
      const m = /^([A-Z]+)-(\d+)$/.exec(where);
      const r = m ? rowIndex(m[1]) : 0, n = m ? Number(m[2]) : 0;
      if (r < 1 || r > sec.rows || n < 1 || n > sec.perRow || !Array.isArray(fs)) continue;
      const known = FEATURES.filter((f) => fs.includes(f));
      if (!known.length) continue;
      features.set(base + (r - 1) * sec.perRow + (n - 1), known);
      for (const f of known) { sec.featureCount[f]++; featureCount[f]++; }
    }
    secs.push(sec);
    base += sec.count;
  }
  // Shelf packing: rows of blocks no wider than about 1.6 times the side of
  // a square of the same area, so that the map fits a wide screen.
  const area = secs.reduce((a, s) => a + (s.w + GAP) * (s.h + GAP + LABEL), 0);
  const widest = secs.reduce((a, s) => Math.max(a, s.w), 0);
  const maxW = Math.max(widest, Math.ceil(Math.sqrt(area) * 1.6));
  const shelves = [];
  let cur = null;
  for (const s of secs) {
    if (!cur || cur.w + GAP + s.w > maxW) {
      cur = { items: [], w: -GAP, h: 0 };
      shelves.push(cur);
    }
    cur.items.push(s);
    cur.w += GAP + s.w;
    cur.h = Math.max(cur.h, s.h);
  }
  const width = Math.max(maxW, ...shelves.map((sh) => sh.w), 10);
  let y = STAGE_H + GAP;
  for (const sh of shelves) {
    let x = Math.floor((width - sh.w) / 2); // centre each shelf under the stage
    for (const s of sh.items) {
      s.x = x;
      s.y = y + LABEL;
      x += s.w + GAP;
    }
    y += LABEL + sh.h + GAP;
  }
  const tiers = [];
  for (const s of secs) if (!tiers.some((t) => t.name === s.tier)) tiers.push({ name: s.tier, price: s.price });
  const stageW = Math.min(width, Math.max(20, Math.round(width * 0.4)));
  return {
    sections: secs, seatCount: base, width, height: y, tiers, features, featureCount,
    stage: { x: Math.floor((width - stageW) / 2), y: 0, w: stageW, h: STAGE_H },
    bySection: new Map(secs.map((s) => [s.name, s])),
  };
}

// sectionOf returns the section holding seat index i.
export function sectionOf(venue, i) {
  // Binary search over the bases: 200 sections at most, but called per seat.
  const secs = venue.sections;
  let lo = 0, hi = secs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (secs[mid].base <= i) lo = mid; else hi = mid - 1;
  }
  return secs[lo];
}

// seat describes seat index i: {index, id, section, row, number, tier,
// price, features, x, y} (x, y: its unit square's top-left corner;
// features: [] for none).
export function seat(venue, i) {
  const s = sectionOf(venue, i);
  const k = i - s.base;
  const r = Math.floor(k / s.perRow), n = (k % s.perRow) + 1;
  const row = rowLabel(r + 1);
  return {
    index: i, id: `${s.name}-${row}-${n}`, section: s.name, row, number: n, tier: s.tier, price: s.price,
    features: seatFeatures(venue, i), x: s.x + n - 1, y: s.y + r,
  };
}

const NONE = Object.freeze([]);

// seatFeatures returns seat i's features (FEATURES values), [] for none.
export function seatFeatures(venue, i) {
  return (venue.features && venue.features.get(i)) || NONE;
}

// indexOf returns the index of a seat id, or -1.
export function indexOf(venue, id) {
  const m = /^(.+)-([A-Z]+)-(\d+)$/.exec(id || '');
  if (!m) return -1;
  const s = venue.bySection.get(m[1]);
  const r = rowIndex(m[2]), n = Number(m[3]);
  if (!s || r < 1 || r > s.rows || n < 1 || n > s.perRow) return -1;
  return s.base + (r - 1) * s.perRow + (n - 1);
}

// hit returns the seat index at map point (ux, uy), or -1.
export function hit(venue, ux, uy) {
  for (const s of venue.sections) {
    if (ux >= s.x && ux < s.x + s.w && uy >= s.y && uy < s.y + s.h) {
      return s.base + Math.floor(uy - s.y) * s.perRow + Math.floor(ux - s.x);
    }
  }
  return -1;
}

// sectionAt returns the section at map point (ux, uy), or null: its block
// of seats, widened by pad units around (at most half the gap between
// blocks, so that neighbours never overlap) and by the name's band above.
// A tap at the overview lands on a section even where seats are a pixel.
export function sectionAt(venue, ux, uy, pad = 0) {
  const p = Math.min(Math.max(0, pad), GAP / 2);
  for (const s of venue.sections) {
    if (ux >= s.x - p && ux < s.x + s.w + p && uy >= s.y - LABEL - p / 2 && uy < s.y + s.h + p / 2) return s;
  }
  return null;
}

// decodeRuns expands the availability view's runs ("120a2h5s…") into one
// status code per seat (STATUS values). It throws on a malformed string or
// one that does not cover exactly n seats.
export function decodeRuns(runs, n) {
  const out = new Uint8Array(n);
  let at = 0, num = 0;
  for (let i = 0; i < runs.length; i++) {
    const c = runs.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      num = num * 10 + (c - 48);
      continue;
    }
    const code = LETTER[runs[i]];
    if (code === undefined || at + num > n) throw new Error('bad availability runs');
    out.fill(code, at, at + num);
    at += num;
    num = 0;
  }
  if (at !== n) throw new Error(`availability covers ${at} seats, the layout has ${n}`);
  return out;
}
