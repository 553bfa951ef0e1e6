// The seat map: every seat of the venue on one canvas, with zoom and pan
// (wheel, drag, pinch, buttons, keys) and a click to pick a seat.
//
// Why it stays smooth at 70,000 seats: the whole venue is kept in an
// offscreen bitmap with one pixel per seat, repainted only when statuses or
// the selection change (a loop over a Uint32Array, about a millisecond).
// Zoomed out, a frame is a single scaled drawImage of that bitmap. Zoomed in
// far enough that seats are big (DETAIL px and up), only the seats inside
// the viewport are drawn one by one, with gaps, row letters and numbers;
// their number is bounded by the screen, not by the venue.
//
// Two levels for the hand: below the pick pitch (PICK_FINE px per seat
// for a mouse, PICK_COARSE for a finger) the map is an overview of
// sections (each outlined in its tier colour, with its name, price and
// seats left) and a click zooms into the section under it; from the pick
// pitch up a click picks the seat under it (its whole cell, gaps included).
//
// Seat features (wheelchair spaces, companion seats, restricted views) are
// marked by shape, not by colour: a wheelchair mark or a "C" on the seat,
// a corner cut off a restricted-view seat, from GLYPHS px per seat; the
// overview's section cards count them, and describeSeat says them in
// words. setFilter dims the seats outside a filter (price, tier, feature)
// and makes them unpickable; filterSummary counts the seats that match.

import { STATUS, FEATURES, FEATURE_NAMES, seat as seatInfo, seatFeatures, sectionOf, hit, sectionAt } from './venue.js';
import { money, announce } from './ui.js';

// PALETTE is every colour the map draws, in one place (web/palette_test.go
// reads it from this file and checks it). On the background every seat
// state has at least 3:1 contrast and text 4.5:1; available seats (the
// tiers, and `available` when colouring by status) sit in one band of
// lightness and every other state in a band of its own, at least 10 L*
// away, so that no state is told apart by hue alone (and none vanishes in
// grayscale): picked ≈ 6, sold ≈ 22, resale ≈ 32, tiers 43–48, held ≈ 58.
// Tiers are Okabe–Ito hues (readable with the common colour-blindnesses)
// brought to the same lightness.
export const PALETTE = {
  background: '#F7F8FA',
  tiers: ['#0072B2', '#9A5B00', '#00805F', '#A8437F', '#6B52D9', '#7F7100', '#B85000', '#117733', '#237A85', '#4F62B5'],
  available: '#1E7D3E', // when colouring by status
  held: '#878D97',
  sold: '#30343C',
  resale: '#901456',
  selected: '#111418', // your picks (also ringed)
  stage: '#2B303A',
  stageText: '#FFFFFF',
  text: '#1A1D21', // section names on the background
  textSoft: '#4A5260', // row letters on the background
  onSeat: '#FFFFFF', // seat numbers on every seat but a held one
  onHeld: '#111418', // seat numbers on a held seat
  card: '#FFFFFF', // labels drawn over seats: names, row letters
  cardText: '#1A1D21',
  cardTextSoft: '#4A5260',
  cardLine: '#8C95A3',
  hover: '#000000',
  dimmed: '#D3D8DF', // seats outside the filter: faint, lighter than every state
  onDimmed: '#4A5260', // numbers and feature marks on a dimmed seat
};

// The names the pages use (legend, organiser's bars).
export const TIER_COLOURS = PALETTE.tiers;
export const COLOURS = {
  available: PALETTE.available,
  held: PALETTE.held,
  sold: PALETTE.sold,
  resale: PALETTE.resale,
  selected: PALETTE.selected,
  background: PALETTE.background,
  stage: PALETTE.stage,
};

const DETAIL = 7; // px per seat from which seats are drawn one by one
const ROWS = 12; // px per seat from which row letters are drawn
const NUMBERS = 22; // px per seat from which seat numbers are drawn
const GLYPHS = 10; // px per seat from which feature marks are drawn
const FEW = 200; // a filter that leaves at most this many seats marks them in the overview
// The pitch (px per seat) from which a click picks a seat. A mouse is
// precise; a finger wants about 44 px (the whole cell is the target, the
// drawn seat is smaller).
export const PICK_FINE = 12;
export const PICK_COARSE = 44;
const MAX_SCALE = 64;
const FONT = 'system-ui, sans-serif';

function rgba32(hex) {
  const v = parseInt(hex.slice(1), 16);
  const r = (v >> 16) & 255, g = (v >> 8) & 255, b = v & 255;
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0; // ImageData is RGBA in memory: little-endian ABGR
}

const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  if (ctx.roundRect) ctx.roundRect(x, y, w, h, r);
  else ctx.rect(x, y, w, h);
}

// GLYPH_TEXT is how a section card's counts read in the map's labels
// (for tests and tools); the card itself draws the marks.
const GLYPH_TEXT = { wheelchair: '♿', companion: 'C', restricted_view: 'RV' };

// drawGlyph draws feature f's mark in a box of `size` px centred on (cx,
// cy): a wheelchair (the access symbol, simplified), a bold C for a
// companion seat, a seat with its top right corner cut off for a
// restricted view (cut in `bg`). The filters' legend uses it too.
export function drawGlyph(ctx, f, cx, cy, size, colour, bg = PALETTE.background) {
  const u = size;
  const X = (v) => cx + v * u, Y = (v) => cy + v * u;
  ctx.save();
  ctx.fillStyle = colour;
  ctx.strokeStyle = colour;
  ctx.lineCap = 'round';
  ctx.lineJoin = 'round';
  if (f === 'wheelchair') {
    ctx.lineWidth = Math.max(1, u * 0.11);
    ctx.beginPath();
    ctx.arc(X(-0.02), Y(-0.37), u * 0.1, 0, 2 * Math.PI);
    ctx.fill();
    ctx.beginPath();
    ctx.moveTo(X(-0.08), Y(-0.2)); // back
    ctx.lineTo(X(-0.08), Y(0.08)); // to the seat
    ctx.lineTo(X(0.2), Y(0.08)); // the seat
    ctx.lineTo(X(0.32), Y(0.4)); // the leg
    ctx.moveTo(X(-0.08), Y(-0.07));
    ctx.lineTo(X(0.16), Y(-0.07)); // the arm
    ctx.stroke();
    ctx.beginPath();
    ctx.arc(X(-0.1), Y(0.18), u * 0.26, 0.05 * Math.PI, 1.5 * Math.PI); // the wheel, open at the top right
    ctx.stroke();
  } else if (f === 'companion') {
    ctx.font = `800 ${Math.max(6, Math.round(u * 0.95))}px ${FONT}`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText('C', cx, cy + u * 0.04);
  } else if (f === 'restricted_view') {
    const h = u * 0.8, k = h * 0.45;
    ctx.fillRect(cx - h / 2, cy - h / 2, h, h);
    ctx.fillStyle = bg;
    notch(ctx, cx + h / 2, cy - h / 2, k);
  }
  ctx.restore();
}

// notch fills a right triangle of side k in the top right corner at (x, y).
function notch(ctx, x, y, k) {
  ctx.beginPath();
  ctx.moveTo(x - k, y);
  ctx.lineTo(x + 0.5, y - 0.5);
  ctx.lineTo(x, y + k);
  ctx.closePath();
  ctx.fill();
}

export class SeatMap {
  // opts: onSeat(index) for a click on a seat, describe(index) → extra
  // text for the hover tip, onHover(index, x, y), tip (the element of the
  // hover tip; by default the .map-tip next to the canvas, which the map
  // places so that it never covers the seat and stays inside the map),
  // interactive (default true), onFiltered(index) for a click on a seat
  // that the filter dims (nothing is picked).
  constructor(canvas, venue, opts = {}) {
    this.canvas = canvas;
    this.venue = venue;
    this.opts = opts;
    this.ctx = canvas.getContext('2d');
    this.statuses = new Uint8Array(venue.seatCount);
    this.selected = new Set();
    this.focus = -1; // a seat to ring (picked with the keyboard)
    this.hover = -1;
    this.hoverSection = null;
    this.pointer = null; // the mouse's last place on the canvas
    this.colourBy = 'tier';
    this.tierColour = new Map(venue.tiers.map((t, i) => [t.name, TIER_COLOURS[i % TIER_COLOURS.length]]));
    this.left = new Map(venue.sections.map((s) => [s, s.count])); // seats available per section
    this.match = new Map(venue.sections.map((s) => [s, s.count])); // of those, in the filter
    this.filter = null; // what setFilter was given, normalised; null: none
    this.outMask = null; // 1 for a seat outside the filter; null: no filter
    this.summary = { active: false, available: venue.seatCount, matching: venue.seatCount, seats: venue.seatCount };
    this.labels = []; // what the last frame wrote (for tests and tools)
    this.view = { s: 1, x: 0, y: 0 };
    this.fitted = false;
    this.cssW = 0;
    this.cssH = 0;

    this.cleanups = [];
    const mq = window.matchMedia ? window.matchMedia('(pointer: coarse)') : null;
    this.coarse = !!(mq && mq.matches);
    if (mq) {
      const onChange = () => { this.coarse = mq.matches; this.schedule(); };
      mq.addEventListener('change', onChange);
      this.cleanups.push(() => mq.removeEventListener('change', onChange));
    }

    this.bitmap = document.createElement('canvas');
    this.bitmap.width = venue.width;
    this.bitmap.height = venue.height;
    this.bctx = this.bitmap.getContext('2d');
    this.image = this.bctx.createImageData(venue.width, venue.height);
    this.pixels = new Uint32Array(this.image.data.buffer);
    this.paint();

    const ro = new ResizeObserver(() => this.resize());
    ro.observe(canvas);
    this.cleanups.push(() => ro.disconnect());
    if (opts.interactive !== false) this.listen();
    this.resize();
  }

  destroy() {
    for (const fn of this.cleanups.splice(0)) fn();
    if (this.raf) cancelAnimationFrame(this.raf);
  }

  // --- state -------------------------------------------------------------

  setStatuses(statuses) {
    this.statuses = statuses;
    this.paint();
  }

  // update sets statuses and the selection with one repaint.
  update(statuses, selected) {
    this.statuses = statuses;
    this.selected = new Set(selected);
    this.paint();
  }

  setSelected(indexes) {
    this.selected = new Set(indexes);
    this.paint();
  }

  setColourBy(mode) {
    this.colourBy = mode;
    this.paint();
  }

  // --- the filter ----------------------------------------------------------

  // setFilter dims the seats outside the filter (still drawn, faint) and
  // makes them unpickable. f: {minPrice, maxPrice} in cents (inclusive),
  // tiers (names), features (a seat matches with any one of them); a field
  // that is absent, null or empty does not filter. setFilter(null) clears.
  setFilter(f) {
    const venue = this.venue;
    const num = (v) => (v === null || v === undefined || v === '' || !Number.isFinite(Number(v)) ? null : Number(v));
    let minPrice = num(f && f.minPrice), maxPrice = num(f && f.maxPrice);
    if (minPrice !== null && maxPrice !== null && minPrice > maxPrice) [minPrice, maxPrice] = [maxPrice, minPrice];
    const tiers = f && Array.isArray(f.tiers) && f.tiers.length ? [...f.tiers] : null;
    const features = f && Array.isArray(f.features) && f.features.length ? FEATURES.filter((x) => f.features.includes(x)) : null;
    const active = minPrice !== null || maxPrice !== null || !!tiers || !!features;
    this.filter = active ? { minPrice, maxPrice, tiers, features } : null;
    if (!active) {
      this.outMask = null;
    } else {
      const out = new Uint8Array(venue.seatCount);
      const inSection = new Set();
      for (const sec of venue.sections) {
        const ok = (minPrice === null || sec.price >= minPrice) && (maxPrice === null || sec.price <= maxPrice) && (!tiers || tiers.includes(sec.tier));
        if (ok) inSection.add(sec);
        if (!ok || features) out.fill(1, sec.base, sec.base + sec.count);
      }
      if (features) {
        for (const [i, fs] of venue.features) {
          if (fs.some((x) => features.includes(x)) && inSection.has(sectionOf(venue, i))) out[i] = 0;
        }
      }
      this.outMask = out;
    }
    if (this.hover >= 0) this.canvas.classList.toggle('over-seat', this.pickable(this.hover));
    this.paint();
    return this.filterSummary();
  }

  // inFilter tells whether seat i is inside the filter (always, without one).
  inFilter(i) {
    return !this.outMask || this.outMask[i] === 0;
  }

  // pickable tells whether a click on seat i does something: a seat
  // outside the filter does nothing, unless it is a pick (to give it back).
  pickable(i) {
    return i >= 0 && (this.inFilter(i) || this.selected.has(i));
  }

  // filterSummary counts, as of the last repaint: available seats in the
  // filter (matching), all available seats, all seats in the filter
  // whatever their status; active is false without a filter.
  filterSummary() {
    return { ...this.summary, filter: this.filter ? { ...this.filter } : null };
  }

  // featured lists the seats with features: [{index, id, features}].
  featured() {
    return [...this.venue.features].map(([i, features]) => ({ index: i, id: seatInfo(this.venue, i).id, features: [...features] }));
  }

  // colour is the fill of seat i as the map shows it.
  colour(i, sec) {
    if (this.selected.has(i)) return PALETTE.selected;
    if (this.outMask && this.outMask[i]) return PALETTE.dimmed;
    switch (this.statuses[i]) {
      case STATUS.held: return PALETTE.held;
      case STATUS.sold: return PALETTE.sold;
      case STATUS.resale: return PALETTE.resale;
    }
    return this.colourBy === 'status' ? PALETTE.available : this.tierColour.get(sec.tier);
  }

  // paint redraws the one-pixel-per-seat bitmap and counts the seats left
  // in each section.
  paint() {
    const W = this.venue.width, px = this.pixels, st = this.statuses, out = this.outMask;
    px.fill(0);
    const cache = new Map();
    const c32 = (hex) => { let v = cache.get(hex); if (v === undefined) { v = rgba32(hex); cache.set(hex, v); } return v; };
    let available = 0, matching = 0, seats = 0;
    const few = []; // the matching seats, while they are few enough to mark in the overview
    for (const sec of this.venue.sections) {
      let i = sec.base, left = 0, match = 0, inside = 0;
      for (let r = 0; r < sec.rows; r++) {
        let p = (sec.y + r) * W + sec.x;
        for (let c = 0; c < sec.perRow; c++, i++, p++) {
          px[p] = c32(this.colour(i, sec));
          const isIn = !out || out[i] === 0;
          if (isIn) inside++;
          if (st[i] === STATUS.available) {
            left++;
            if (isIn) {
              match++;
              if (out && few.length <= FEW) few.push(i);
            }
          }
        }
      }
      this.left.set(sec, left);
      this.match.set(sec, match);
      available += left;
      matching += match;
      seats += inside;
    }
    this.summary = { active: !!out, available, matching, seats };
    this.few = out && few.length <= FEW ? few : [];
    this.bctx.putImageData(this.image, 0, 0);
    this.schedule();
    // The filters' count follows the statuses too.
    this.canvas.dispatchEvent(new CustomEvent('seatmap:paint', { detail: this.filterSummary() }));
  }

  // --- view --------------------------------------------------------------

  resize() {
    const r = this.canvas.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return;
    const dpr = window.devicePixelRatio || 1;
    this.cssW = r.width;
    this.cssH = r.height;
    this.canvas.width = Math.round(r.width * dpr);
    this.canvas.height = Math.round(r.height * dpr);
    if (!this.fitted) this.fit();
    this.schedule();
  }

  fitScale() {
    return Math.min(this.cssW / this.venue.width, this.cssH / this.venue.height) * 0.96;
  }

  fit() {
    const s = this.fitScale();
    this.view = { s, x: (this.cssW - this.venue.width * s) / 2, y: (this.cssH - this.venue.height * s) / 2 };
    this.fitted = this.cssW > 0;
    this.changed();
  }

  // pickScale is the pitch (px per seat) from which a click picks a seat.
  pickScale() {
    return this.coarse ? PICK_COARSE : PICK_FINE;
  }

  // canPick tells whether a click now picks a seat (else it zooms).
  canPick() {
    return this.view.s >= this.pickScale() - 1e-9;
  }

  // zoomAt scales the view by f, keeping the map point under (cx, cy) still.
  zoomAt(f, cx = this.cssW / 2, cy = this.cssH / 2) {
    const v = this.view;
    const s = Math.min(MAX_SCALE, Math.max(this.fitScale() * 0.5, v.s * f));
    v.x = cx - ((cx - v.x) * s) / v.s;
    v.y = cy - ((cy - v.y) * s) / v.s;
    v.s = s;
    this.changed();
  }

  panBy(dx, dy) {
    this.view.x += dx;
    this.view.y += dy;
    this.changed();
  }

  // showSeat centres seat i at a scale where it can be clicked, and rings it.
  showSeat(i, ring = true) {
    const st = seatInfo(this.venue, i);
    const s = Math.min(MAX_SCALE, Math.max(this.view.s, 18, this.pickScale()));
    this.view = { s, x: this.cssW / 2 - (st.x + 0.5) * s, y: this.cssH / 2 - (st.y + 0.5) * s };
    if (ring) this.focus = i;
    this.changed();
  }

  // showSection zooms to fit section sec (with its name) in the view, at
  // most at pick scale plus a little when that already shows it whole.
  showSection(sec) {
    const s = this.sectionScale(sec);
    const cx = sec.x + sec.w / 2, cy = sec.y + sec.h / 2 - 1;
    this.view = { s, x: this.cssW / 2 - cx * s, y: this.cssH / 2 - cy * s };
    this.changed();
  }

  sectionScale(sec) {
    return Math.min(MAX_SCALE, this.cssW / (sec.w + 3), this.cssH / (sec.h + 6));
  }

  // zoomInto is a click below the pick pitch: on a section that does not
  // yet fill the view, zoom to it; on one that does, zoom in around the
  // click to the pick pitch, so that the next click picks what is under
  // the finger.
  zoomInto(cx, cy) {
    const v = this.view;
    const sec = sectionAt(this.venue, (cx - v.x) / v.s, (cy - v.y) / v.s, 2);
    if (!sec) return false;
    if (this.sectionScale(sec) > v.s * 1.25) this.showSection(sec);
    else this.zoomAt((this.pickScale() * 1.1) / v.s, cx, cy);
    return true;
  }

  // changed is called after every move of the view: the hover follows.
  changed() {
    if (this.pointer) this.hoverAt(this.pointer.x, this.pointer.y, true);
    this.schedule();
  }

  // seatPoint returns where seat i's centre is on the page (client
  // coordinates), for tests and for placing hints.
  seatPoint(i) {
    const st = seatInfo(this.venue, i);
    const r = this.canvas.getBoundingClientRect();
    return { x: r.left + this.view.x + (st.x + 0.5) * this.view.s, y: r.top + this.view.y + (st.y + 0.5) * this.view.s, size: this.view.s };
  }

  // sectionPoint returns where the middle of section `name` is on the page.
  sectionPoint(name) {
    const sec = this.venue.bySection.get(name);
    const r = this.canvas.getBoundingClientRect(), { s, x, y } = this.view;
    return { x: r.left + x + (sec.x + sec.w / 2) * s, y: r.top + y + (sec.y + sec.h / 2) * s, w: sec.w * s, h: sec.h * s };
  }

  seatAt(cx, cy) {
    const v = this.view;
    return hit(this.venue, (cx - v.x) / v.s, (cy - v.y) / v.s);
  }

  // --- drawing -----------------------------------------------------------

  schedule() {
    if (!this.raf) this.raf = requestAnimationFrame(() => { this.raf = 0; this.draw(); });
  }

  draw() {
    const ctx = this.ctx, dpr = window.devicePixelRatio || 1, { s, x, y } = this.view, venue = this.venue;
    this.labels = [];
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = PALETTE.background;
    ctx.fillRect(0, 0, this.cssW, this.cssH);

    const st = venue.stage;
    ctx.fillStyle = PALETTE.stage;
    ctx.fillRect(x + st.x * s, y + st.y * s, st.w * s, st.h * s);
    const stageFont = Math.min(28, st.h * s * 0.7);
    if (stageFont >= 8) {
      ctx.fillStyle = PALETTE.stageText;
      ctx.font = `700 ${stageFont}px ${FONT}`;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'middle';
      ctx.fillText('STAGE', x + (st.x + st.w / 2) * s, y + (st.y + st.h / 2) * s);
    }

    if (s < DETAIL) {
      // Downscaled, average the pixels; upscaled, keep seats crisp.
      ctx.imageSmoothingEnabled = s < 1;
      ctx.drawImage(this.bitmap, x, y, venue.width * s, venue.height * s);
      // A picked seat is a pixel or two here: mark it so it can be found.
      ctx.lineWidth = 2;
      ctx.strokeStyle = PALETTE.selected;
      for (const i of this.selected) {
        const p = seatInfo(venue, i);
        ctx.beginPath();
        ctx.arc(x + (p.x + 0.5) * s, y + (p.y + 0.5) * s, Math.max(5, s), 0, 2 * Math.PI);
        ctx.stroke();
      }
      // A filter that leaves a few seats: square marks, to find them.
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = PALETTE.text;
      const r = Math.max(4, s);
      for (const i of this.few || []) {
        const p = seatInfo(venue, i);
        ctx.strokeRect(x + (p.x + 0.5) * s - r, y + (p.y + 0.5) * s - r, 2 * r, 2 * r);
      }
    } else {
      this.drawSeats();
    }
    const overview = !this.canPick();
    if (overview) this.drawShapes();
    if (s >= ROWS) this.drawRows();
    this.drawNames(overview);
    for (const [i, colour] of [[this.hover, PALETTE.hover], [this.focus, PALETTE.selected]]) {
      if (i < 0 || s < 3) continue;
      const p = seatInfo(venue, i);
      ctx.lineWidth = i === this.focus ? 3 : 2;
      ctx.strokeStyle = colour;
      ctx.strokeRect(x + p.x * s - 1.5, y + p.y * s - 1.5, s + 3, s + 3);
    }
    this.placeTip();
  }

  // visible reports a section's box on screen, or null when it is out of view.
  box(sec) {
    const { s, x, y } = this.view;
    const b = { left: x + sec.x * s, top: y + sec.y * s, w: sec.w * s, h: sec.h * s };
    b.right = b.left + b.w;
    b.bottom = b.top + b.h;
    if (b.left > this.cssW || b.top > this.cssH || b.right < 0 || b.bottom < 0) return null;
    return b;
  }

  // drawSeats draws the seats inside the viewport one by one.
  drawSeats() {
    const ctx = this.ctx, { s } = this.view, feats = this.venue.features;
    const gap = Math.max(1, s * 0.14), size = s - 2 * gap;
    const numbers = s >= NUMBERS, glyphs = s >= GLYPHS && feats.size > 0;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (const sec of this.venue.sections) {
      const b = this.box(sec);
      if (!b) continue;
      const { left, top } = b;
      const c0 = Math.max(0, Math.floor(-left / s)), c1 = Math.min(sec.perRow, Math.ceil((this.cssW - left) / s));
      const r0 = Math.max(0, Math.floor(-top / s)), r1 = Math.min(sec.rows, Math.ceil((this.cssH - top) / s));
      for (let r = r0; r < r1; r++) {
        let fill = '';
        for (let c = c0; c < c1; c++) {
          const i = sec.base + r * sec.perRow + c;
          const col = this.colour(i, sec);
          if (col !== fill) { ctx.fillStyle = col; fill = col; }
          ctx.fillRect(left + c * s + gap, top + r * s + gap, size, size);
        }
        // More than lightness: a pick is ringed, a resale seat has a
        // light inner frame.
        for (let c = c0; c < c1; c++) {
          const i = sec.base + r * sec.perRow + c;
          if (this.selected.has(i)) {
            ctx.lineWidth = Math.max(1.5, gap * 0.8);
            ctx.strokeStyle = PALETTE.selected;
            ctx.strokeRect(left + c * s + gap / 2, top + r * s + gap / 2, s - gap, s - gap);
          } else if (this.statuses[i] === STATUS.resale && s >= 10) {
            ctx.lineWidth = Math.max(1, s * 0.06);
            ctx.strokeStyle = PALETTE.onSeat;
            const k = gap + s * 0.12;
            ctx.strokeRect(left + c * s + k, top + r * s + k, s - 2 * k, s - 2 * k);
          }
        }
        // Features, by shape: a restricted view loses its top right
        // corner; a wheelchair space or a companion seat wears its mark
        // (instead of its number: the tip says it).
        let marked = null;
        if (glyphs) {
          for (let c = c0; c < c1; c++) {
            const i = sec.base + r * sec.perRow + c;
            const fs = feats.get(i);
            if (!fs) continue;
            const cx = left + (c + 0.5) * s, cy = top + (r + 0.5) * s;
            if (fs.includes('restricted_view')) {
              ctx.fillStyle = PALETTE.background;
              notch(ctx, left + c * s + gap + size, top + r * s + gap, size * 0.5);
              this.labels.push({ kind: 'mark', feature: 'restricted_view', seat: i, x: cx, y: cy });
            }
            const mark = fs.find((f) => f !== 'restricted_view');
            if (mark) {
              drawGlyph(ctx, mark, cx, cy, size * 0.78, this.ink(i));
              (marked ||= new Set()).add(i);
              this.labels.push({ kind: 'mark', feature: mark, seat: i, x: cx, y: cy });
            }
          }
        }
        if (numbers) {
          ctx.font = `600 ${Math.round(s * 0.38)}px ${FONT}`;
          ctx.textAlign = 'center';
          ctx.textBaseline = 'middle';
          for (let c = c0; c < c1; c++) {
            const i = sec.base + r * sec.perRow + c;
            if (marked && marked.has(i)) continue;
            ctx.fillStyle = this.ink(i);
            ctx.fillText(String(c + 1), left + (c + 0.5) * s, top + (r + 0.5) * s);
          }
        }
      }
    }
  }

  // ink is the colour of what is written on seat i (number, mark).
  ink(i) {
    if (this.selected.has(i)) return PALETTE.onSeat;
    if (this.outMask && this.outMask[i]) return PALETTE.onDimmed;
    return this.statuses[i] === STATUS.held ? PALETTE.onHeld : PALETTE.onSeat;
  }

  // drawShapes outlines each section in its tier colour: the overview,
  // where a click zooms into the section under it.
  drawShapes() {
    const ctx = this.ctx, { s } = this.view;
    const out = Math.max(2, s * 0.35);
    for (const sec of this.venue.sections) {
      const b = this.box(sec);
      if (!b) continue;
      const on = sec === this.hoverSection;
      ctx.lineWidth = on ? 4 : 2;
      ctx.strokeStyle = this.sectionOut(sec) ? PALETTE.cardLine : this.tierColour.get(sec.tier);
      roundRect(ctx, b.left - out, b.top - out, b.w + 2 * out, b.h + 2 * out, Math.min(8, out * 2));
      ctx.stroke();
    }
  }

  // sectionOut tells whether the filter leaves out every seat of sec.
  sectionOut(sec) {
    if (!this.outMask) return false;
    const m = this.outMask;
    for (let i = sec.base, end = sec.base + sec.count; i < end; i++) if (m[i] === 0) return false;
    return true;
  }

  // drawRows writes the row letters left of each row; when the section's
  // left edge is out of view they stick to the map's left edge, on a card.
  drawRows() {
    const ctx = this.ctx, { s } = this.view;
    const font = Math.round(Math.min(14, s * 0.5));
    ctx.font = `600 ${font}px ${FONT}`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (const sec of this.venue.sections) {
      const b = this.box(sec);
      if (!b) continue;
      const r0 = Math.max(0, Math.floor(-b.top / s)), r1 = Math.min(sec.rows, Math.ceil((this.cssH - b.top) / s));
      for (let r = r0; r < r1; r++) {
        const text = seatInfo(this.venue, sec.base + r * sec.perRow).row;
        const w = ctx.measureText(text).width + 8, h = font + 6;
        const cy = b.top + (r + 0.5) * s;
        let cx = b.left - s * 0.6;
        const sticky = cx - w / 2 < 2;
        if (sticky) cx = Math.min(2 + w / 2, b.right - w / 2);
        if (sticky) {
          ctx.fillStyle = PALETTE.card;
          ctx.strokeStyle = PALETTE.cardLine;
          ctx.lineWidth = 1;
          roundRect(ctx, cx - w / 2, cy - h / 2, w, h, 4);
          ctx.fill();
          ctx.stroke();
          ctx.fillStyle = PALETTE.cardText;
        } else {
          ctx.fillStyle = PALETTE.textSoft;
        }
        ctx.fillText(text, cx, cy);
        this.labels.push({ kind: 'row', section: sec.name, text, x: cx, y: cy, sticky });
      }
    }
  }

  // drawNames names the sections. In the overview, a small section gets a
  // card on it: name, price and seats left (as many lines as fit). Else
  // the name, price and seats left go on a tab above the block, which
  // sticks to the top of the map while the block is in view.
  drawNames(overview) {
    const ctx = this.ctx, { s, y } = this.view;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (const sec of this.venue.sections) {
      const b = this.box(sec);
      if (!b) continue;
      const left = this.left.get(sec), match = this.match.get(sec);
      let leftText = left === 0 ? 'Sold out' : `${left.toLocaleString()} left`;
      if (this.outMask && left > 0) leftText = match === 0 ? 'None match' : `${match.toLocaleString()} of ${left.toLocaleString()} match`;
      if (overview && b.w < this.cssW * 0.6 && b.h < this.cssH * 0.6) {
        const marks = FEATURES.filter((f) => sec.featureCount[f] > 0).map((f) => [f, sec.featureCount[f]]);
        this.drawCard(sec, b, [sec.name, money(sec.price), leftText], marks);
        continue;
      }
      // A tab: full text, else the name alone.
      ctx.font = `700 13px ${FONT}`;
      const visL = Math.max(b.left, 0), visR = Math.min(b.right, this.cssW);
      let text = `${sec.name} · ${money(sec.price)} · ${leftText}`;
      let w = ctx.measureText(text).width + 16;
      if (w > Math.max(visR - visL, b.w)) { text = sec.name; w = ctx.measureText(text).width + 16; }
      const h = 22;
      if (w > b.w + 4 * s && s * 3 < h) continue; // no room anywhere
      const cx = clamp(b.left + b.w / 2, visL + w / 2 + 2, visR - w / 2 - 2);
      const natural = y + (sec.y - 1.5) * s;
      const cy = clamp(natural, 2 + h / 2, b.bottom - h / 2);
      ctx.fillStyle = PALETTE.card;
      ctx.strokeStyle = this.tierColour.get(sec.tier);
      ctx.lineWidth = 2;
      roundRect(ctx, cx - w / 2, cy - h / 2, w, h, h / 2);
      ctx.fill();
      ctx.stroke();
      ctx.fillStyle = PALETTE.cardText;
      ctx.fillText(text, cx, cy);
      this.labels.push({ kind: 'section', section: sec.name, text, x: cx, y: cy, sticky: natural < cy - 0.5 });
    }
  }

  // drawCard writes lines (the first bold) on a card in the middle of a
  // section's box, dropping the middle lines that do not fit, then all.
  // marks ([feature, count]…) add a line counting the section's featured
  // seats, each count after its mark: "2 ♿".
  drawCard(sec, b, lines, marks = []) {
    const ctx = this.ctx;
    const fonts = [`700 13px ${FONT}`, `400 12px ${FONT}`];
    const ICON = 12, SEP = 9;
    const marksLine = marks.length ? { marks } : null;
    const width = (t, k) => {
      ctx.font = fonts[k ? 1 : 0];
      if (typeof t === 'string') return ctx.measureText(t).width;
      return t.marks.reduce((a, [, n]) => a + ctx.measureText(String(n)).width + 3 + ICON, 0) + SEP * (t.marks.length - 1);
    };
    const measure = (ls) => {
      let w = 0;
      ls.forEach((t, k) => { w = Math.max(w, width(t, k)); });
      return { w: w + 12, h: ls.length * 15 + 6 };
    };
    const tries = marksLine
      ? [[...lines, marksLine], [lines[0], lines[2], marksLine], [lines[0], lines[2]], [lines[0]]]
      : [lines, [lines[0], lines[2]], [lines[0]]];
    let ls = null, m = null;
    for (const t of tries) {
      m = measure(t);
      if (m.w <= b.w + 8 && m.h <= b.h + 8) { ls = t; break; }
    }
    if (!ls) return;
    const cx = b.left + b.w / 2, cy = b.top + b.h / 2;
    ctx.fillStyle = PALETTE.card;
    ctx.strokeStyle = this.tierColour.get(sec.tier);
    ctx.lineWidth = 2;
    roundRect(ctx, cx - m.w / 2, cy - m.h / 2, m.w, m.h, 5);
    ctx.fill();
    ctx.stroke();
    ls.forEach((t, k) => {
      ctx.font = fonts[k ? 1 : 0];
      ctx.fillStyle = k ? PALETTE.cardTextSoft : PALETTE.cardText;
      const ty = cy - m.h / 2 + 3 + 7.5 + k * 15;
      if (typeof t === 'string') { ctx.fillText(t, cx, ty); return; }
      // The marks line: "2 ♿  1 C", the marks drawn, not typed.
      let x = cx - width(t, k) / 2;
      ctx.textAlign = 'left';
      for (const [f, n] of t.marks) {
        ctx.font = fonts[1];
        ctx.fillStyle = PALETTE.cardText;
        ctx.fillText(String(n), x, ty);
        x += ctx.measureText(String(n)).width + 3;
        drawGlyph(ctx, f, x + ICON / 2, ty, ICON, PALETTE.cardText, PALETTE.card);
        x += ICON + SEP;
      }
      ctx.textAlign = 'center';
    });
    const text = ls.map((t) => (typeof t === 'string' ? t : t.marks.map(([f, n]) => `${n} ${GLYPH_TEXT[f]}`).join(' · '))).join('\n');
    this.labels.push({ kind: 'card', section: sec.name, text, x: cx, y: cy });
  }

  // --- the hover tip ---------------------------------------------------------

  tipElement() {
    if (this.opts.tip) return this.opts.tip;
    const p = this.canvas.parentElement;
    return p ? p.querySelector(':scope > .map-tip') : null;
  }

  // placeTip puts the tip below the hovered seat, or when there is no room
  // there above the row above it, or else beside it; always inside the
  // map, never over the seat.
  placeTip() {
    const tip = this.tipElement();
    if (!tip || tip.hidden || this.hover < 0) return;
    const wrap = tip.offsetParent;
    if (!wrap) return;
    const cr = this.canvas.getBoundingClientRect(), wr = wrap.getBoundingClientRect();
    const ox = cr.left - wr.left - wrap.clientLeft, oy = cr.top - wr.top - wrap.clientTop;
    tip.style.transform = 'none';
    tip.style.maxWidth = `${Math.max(80, this.cssW - 8)}px`;
    const tw = tip.offsetWidth, th = tip.offsetHeight;
    const { s, x, y } = this.view, p = seatInfo(this.venue, this.hover);
    const sx = x + p.x * s, sy = y + p.y * s, W = this.cssW, H = this.cssH, m = 4;
    const below = 14; // clear of the mouse pointer's arrow
    let left = clamp(sx + s / 2 - tw / 2, m, W - tw - m), top;
    if (sy + s + below + th <= H - m) top = sy + s + below;
    else if (sy - s - 6 - th >= m) top = sy - s - 6 - th;
    else {
      // Neither: beside the seat, on the roomier side.
      top = clamp(sy + s / 2 - th / 2, m, H - th - m);
      left = sx + s + 8 + tw <= W - m || sx < W / 2 ? sx + s + 8 : sx - 8 - tw;
      left = clamp(left, m, W - tw - m);
    }
    tip.style.left = `${ox + left}px`;
    tip.style.top = `${oy + top}px`;
  }

  // --- input -------------------------------------------------------------

  listen() {
    const c = this.canvas;
    const on = (type, fn, opts) => { c.addEventListener(type, fn, opts); this.cleanups.push(() => c.removeEventListener(type, fn, opts)); };
    const local = (e) => { const r = c.getBoundingClientRect(); return { x: e.clientX - r.left, y: e.clientY - r.top }; };
    const pointers = new Map();
    let moved = 0, pinch = null, slop = 4;

    on('pointerdown', (e) => {
      c.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, local(e));
      // A finger is less precise than a mouse: its taps pick from the
      // coarse pitch up, and it may wobble a little more.
      const coarse = e.pointerType === 'touch' || !!(window.matchMedia && window.matchMedia('(pointer: coarse)').matches);
      if (coarse !== this.coarse) { this.coarse = coarse; this.schedule(); }
      if (e.pointerType === 'touch') this.pointer = null;
      if (pointers.size === 1) { moved = 0; slop = e.pointerType === 'touch' ? 10 : 4; }
      if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        pinch = { d: Math.hypot(a.x - b.x, a.y - b.y), mx: (a.x + b.x) / 2, my: (a.y + b.y) / 2 };
        moved = Infinity; // a pinch is never a click
      }
    });
    on('pointermove', (e) => {
      const p = local(e);
      if (pointers.size === 0) {
        if (e.pointerType !== 'touch') this.pointer = p;
        return this.hoverAt(p.x, p.y);
      }
      const prev = pointers.get(e.pointerId);
      if (!prev) return;
      pointers.set(e.pointerId, p);
      if (pointers.size === 1) {
        moved += Math.abs(p.x - prev.x) + Math.abs(p.y - prev.y);
        if (moved > slop) {
          c.classList.add('dragging');
          this.panBy(p.x - prev.x, p.y - prev.y);
        }
      } else if (pointers.size === 2 && pinch) {
        const [a, b] = [...pointers.values()];
        const d = Math.hypot(a.x - b.x, a.y - b.y), mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
        this.panBy(mx - pinch.mx, my - pinch.my);
        if (pinch.d > 0) this.zoomAt(d / pinch.d, mx, my);
        pinch = { d, mx, my };
      }
    });
    const up = (e) => {
      if (!pointers.has(e.pointerId)) return;
      pointers.delete(e.pointerId);
      if (pointers.size < 2) pinch = null;
      if (pointers.size === 0) {
        c.classList.remove('dragging');
        if (e.type === 'pointerup' && moved <= slop) this.clickAt(local(e));
      }
    };
    on('pointerup', up);
    on('pointercancel', up);
    on('pointerleave', () => { if (pointers.size === 0) { this.pointer = null; this.hoverAt(-1, -1); } });
    on('wheel', (e) => {
      e.preventDefault(); // the page must not scroll while the map zooms
      const p = local(e);
      this.pointer = p;
      const unit = e.deltaMode === 1 ? 0.05 : 0.0022;
      this.zoomAt(Math.exp(-e.deltaY * unit), p.x, p.y);
    }, { passive: false });
    on('keydown', (e) => {
      const step = 80;
      const keys = {
        ArrowLeft: () => this.panBy(step, 0), ArrowRight: () => this.panBy(-step, 0),
        ArrowUp: () => this.panBy(0, step), ArrowDown: () => this.panBy(0, -step),
        '+': () => this.zoomAt(1.5), '=': () => this.zoomAt(1.5), '-': () => this.zoomAt(1 / 1.5), '0': () => this.fit(),
      };
      if (keys[e.key]) { e.preventDefault(); keys[e.key](); }
    });
  }

  // clickAt is a click or tap at canvas point p: it picks the seat under
  // it once seats are big enough to hit, and zooms in before that.
  clickAt(p) {
    if (!this.canPick()) {
      this.zoomInto(p.x, p.y);
      return;
    }
    const i = this.seatAt(p.x, p.y);
    if (i < 0) return;
    if (!this.pickable(i)) {
      // Dimmed by the filter: nothing is picked.
      const st = seatInfo(this.venue, i);
      announce(`${st.section} row ${st.row} seat ${st.number} is outside your filter.`);
      if (this.opts.onFiltered) this.opts.onFiltered(i);
      return;
    }
    if (this.opts.onSeat) this.opts.onSeat(i);
  }

  hoverAt(cx, cy, force = false) {
    const v = this.view, pick = this.canPick();
    const i = cx < 0 || !pick ? -1 : this.seatAt(cx, cy);
    const sec = cx < 0 || pick ? null : sectionAt(this.venue, (cx - v.x) / v.s, (cy - v.y) / v.s, 2);
    if (sec !== this.hoverSection) {
      this.hoverSection = sec;
      this.canvas.classList.toggle('over-section', !!sec);
      this.schedule();
    }
    if (i === this.hover) {
      if (force && i >= 0) this.schedule(); // the tip follows the seat
      return;
    }
    this.hover = i;
    this.canvas.classList.toggle('over-seat', this.pickable(i));
    if (this.opts.onHover) this.opts.onHover(i, cx, cy);
    // A dimmed seat's tip says why a click does nothing.
    const tip = i >= 0 && !this.pickable(i) ? this.tipElement() : null;
    if (tip && !tip.hidden && !tip.textContent.includes(OUTSIDE)) tip.append(` — ${OUTSIDE}`);
    this.placeTip();
    this.schedule();
  }
}

const OUTSIDE = 'outside your filter';

// describeSeat is the one-line text of a seat for tips and lists, its
// features in words: "Stalls · Row A · Seat 1 — A, €85.00 — Wheelchair
// space — available".
export function describeSeat(venue, i, status) {
  const s = seatInfo(venue, i);
  const fs = s.features.map((f) => FEATURE_NAMES[f]).join(', ');
  return `${s.section} · Row ${s.row} · Seat ${s.number} — ${s.tier}, ${money(s.price)}${fs ? ` — ${fs}` : ''}${status ? ` — ${status}` : ''}`;
}

// featureText says seat i's features in words ("" for none).
export function featureText(venue, i) {
  return seatFeatures(venue, i).map((f) => FEATURE_NAMES[f]).join(', ');
}
