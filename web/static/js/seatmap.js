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

import { STATUS, seat as seatInfo, hit } from './venue.js';
import { money } from './ui.js';

// Okabe–Ito colours (readable with the common colour-blindnesses) for
// price tiers; status colours are set apart by lightness too.
export const TIER_COLOURS = ['#0072B2', '#009E73', '#E69F00', '#56B4E9', '#D55E00', '#7B61FF', '#117733', '#AA9900', '#44AA99', '#0B3C8C'];
export const COLOURS = {
  available: '#2E9D4F', // when colouring by status
  held: '#C3C9D2',
  sold: '#5F6673',
  resale: '#C2185B',
  selected: '#111418',
  background: '#F7F8FA',
  stage: '#2B303A',
};

const DETAIL = 7; // px per seat from which seats are drawn one by one
const MAX_SCALE = 64;

function rgba32(hex) {
  const v = parseInt(hex.slice(1), 16);
  const r = (v >> 16) & 255, g = (v >> 8) & 255, b = v & 255;
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0; // ImageData is RGBA in memory: little-endian ABGR
}

export class SeatMap {
  // opts: onSeat(index) for a click on a seat, describe(index) → extra
  // text for the hover tip, interactive (default true).
  constructor(canvas, venue, opts = {}) {
    this.canvas = canvas;
    this.venue = venue;
    this.opts = opts;
    this.ctx = canvas.getContext('2d');
    this.statuses = new Uint8Array(venue.seatCount);
    this.selected = new Set();
    this.focus = -1; // a seat to ring (picked with the keyboard)
    this.hover = -1;
    this.colourBy = 'tier';
    this.tierColour = new Map(venue.tiers.map((t, i) => [t.name, TIER_COLOURS[i % TIER_COLOURS.length]]));
    this.view = { s: 1, x: 0, y: 0 };
    this.fitted = false;
    this.cssW = 0;
    this.cssH = 0;

    this.bitmap = document.createElement('canvas');
    this.bitmap.width = venue.width;
    this.bitmap.height = venue.height;
    this.bctx = this.bitmap.getContext('2d');
    this.image = this.bctx.createImageData(venue.width, venue.height);
    this.pixels = new Uint32Array(this.image.data.buffer);
    this.paint();

    this.cleanups = [];
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

  // colour is the fill of seat i as the map shows it.
  colour(i, sec) {
    if (this.selected.has(i)) return COLOURS.selected;
    switch (this.statuses[i]) {
      case STATUS.held: return COLOURS.held;
      case STATUS.sold: return COLOURS.sold;
      case STATUS.resale: return COLOURS.resale;
    }
    return this.colourBy === 'status' ? COLOURS.available : this.tierColour.get(sec.tier);
  }

  // paint redraws the one-pixel-per-seat bitmap.
  paint() {
    const W = this.venue.width, px = this.pixels;
    px.fill(0);
    const cache = new Map();
    const c32 = (hex) => { let v = cache.get(hex); if (v === undefined) { v = rgba32(hex); cache.set(hex, v); } return v; };
    for (const sec of this.venue.sections) {
      let i = sec.base;
      for (let r = 0; r < sec.rows; r++) {
        let p = (sec.y + r) * W + sec.x;
        for (let c = 0; c < sec.perRow; c++, i++, p++) px[p] = c32(this.colour(i, sec));
      }
    }
    this.bctx.putImageData(this.image, 0, 0);
    this.schedule();
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
    this.schedule();
  }

  // zoomAt scales the view by f, keeping the map point under (cx, cy) still.
  zoomAt(f, cx = this.cssW / 2, cy = this.cssH / 2) {
    const v = this.view;
    const s = Math.min(MAX_SCALE, Math.max(this.fitScale() * 0.5, v.s * f));
    v.x = cx - ((cx - v.x) * s) / v.s;
    v.y = cy - ((cy - v.y) * s) / v.s;
    v.s = s;
    this.schedule();
  }

  panBy(dx, dy) {
    this.view.x += dx;
    this.view.y += dy;
    this.schedule();
  }

  // showSeat centres seat i at a scale where it can be clicked, and rings it.
  showSeat(i, ring = true) {
    const st = seatInfo(this.venue, i);
    const s = Math.max(this.view.s, 18);
    this.view = { s, x: this.cssW / 2 - (st.x + 0.5) * s, y: this.cssH / 2 - (st.y + 0.5) * s };
    if (ring) this.focus = i;
    this.schedule();
  }

  // seatPoint returns where seat i's centre is on the page (client
  // coordinates), for tests and for placing hints.
  seatPoint(i) {
    const st = seatInfo(this.venue, i);
    const r = this.canvas.getBoundingClientRect();
    return { x: r.left + this.view.x + (st.x + 0.5) * this.view.s, y: r.top + this.view.y + (st.y + 0.5) * this.view.s, size: this.view.s };
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
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = COLOURS.background;
    ctx.fillRect(0, 0, this.cssW, this.cssH);

    const st = venue.stage;
    ctx.fillStyle = COLOURS.stage;
    ctx.fillRect(x + st.x * s, y + st.y * s, st.w * s, st.h * s);
    const stageFont = Math.min(28, st.h * s * 0.7);
    if (stageFont >= 8) {
      ctx.fillStyle = '#fff';
      ctx.font = `700 ${stageFont}px system-ui, sans-serif`;
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
      ctx.strokeStyle = COLOURS.selected;
      for (const i of this.selected) {
        const p = seatInfo(venue, i);
        ctx.beginPath();
        ctx.arc(x + (p.x + 0.5) * s, y + (p.y + 0.5) * s, Math.max(5, s), 0, 2 * Math.PI);
        ctx.stroke();
      }
    } else {
      this.drawSeats();
    }
    this.drawLabels();
    for (const [i, colour] of [[this.hover, '#000'], [this.focus, COLOURS.selected]]) {
      if (i < 0 || s < 3) continue;
      const p = seatInfo(venue, i);
      ctx.lineWidth = i === this.focus ? 3 : 2;
      ctx.strokeStyle = colour;
      ctx.strokeRect(x + p.x * s - 1.5, y + p.y * s - 1.5, s + 3, s + 3);
    }
  }

  // drawSeats draws the seats inside the viewport one by one.
  drawSeats() {
    const ctx = this.ctx, { s, x, y } = this.view;
    const gap = Math.max(1, s * 0.14), size = s - 2 * gap;
    const numbers = s >= 22, rows = s >= 12;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    for (const sec of this.venue.sections) {
      const left = x + sec.x * s, top = y + sec.y * s;
      if (left > this.cssW || top > this.cssH || left + sec.w * s < 0 || top + sec.h * s < 0) continue;
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
        if (numbers) {
          ctx.font = `600 ${Math.round(s * 0.38)}px system-ui, sans-serif`;
          for (let c = c0; c < c1; c++) {
            const i = sec.base + r * sec.perRow + c;
            const st = this.statuses[i];
            ctx.fillStyle = this.selected.has(i) || st === STATUS.sold || st === STATUS.resale ? '#fff' : '#111';
            ctx.fillText(String(c + 1), left + (c + 0.5) * s, top + (r + 0.5) * s);
          }
          fill = '';
        }
        if (rows) {
          ctx.fillStyle = '#4a5260';
          ctx.font = `600 ${Math.round(Math.min(14, s * 0.5))}px system-ui, sans-serif`;
          ctx.fillText(seatInfo(this.venue, sec.base + r * sec.perRow).row, left - s * 0.6, top + (r + 0.5) * s);
          fill = '';
        }
      }
    }
  }

  // drawLabels names the sections: above the block when there is room,
  // on it otherwise (with a halo), or not at all when the block is tiny.
  drawLabels() {
    const ctx = this.ctx, { s, x, y } = this.view;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    const font = Math.max(11, Math.min(18, s * 1.6));
    ctx.font = `700 ${font}px system-ui, sans-serif`;
    for (const sec of this.venue.sections) {
      const cx = x + (sec.x + sec.w / 2) * s;
      const text = sec.name;
      const tw = ctx.measureText(text).width;
      if (tw + 6 > sec.w * s && s * 3 < font) continue;
      if (s * 3 >= font) {
        ctx.fillStyle = '#1a1d21';
        ctx.fillText(text, cx, y + (sec.y - 1.5) * s);
      } else {
        const cy = y + (sec.y + sec.h / 2) * s;
        ctx.lineWidth = 3;
        ctx.strokeStyle = 'rgba(255,255,255,0.9)';
        ctx.strokeText(text, cx, cy);
        ctx.fillStyle = '#1a1d21';
        ctx.fillText(text, cx, cy);
      }
    }
  }

  // --- input -------------------------------------------------------------

  listen() {
    const c = this.canvas;
    const on = (type, fn, opts) => { c.addEventListener(type, fn, opts); this.cleanups.push(() => c.removeEventListener(type, fn, opts)); };
    const local = (e) => { const r = c.getBoundingClientRect(); return { x: e.clientX - r.left, y: e.clientY - r.top }; };
    const pointers = new Map();
    let moved = 0, pinch = null;

    on('pointerdown', (e) => {
      c.setPointerCapture(e.pointerId);
      pointers.set(e.pointerId, local(e));
      if (pointers.size === 1) moved = 0;
      if (pointers.size === 2) {
        const [a, b] = [...pointers.values()];
        pinch = { d: Math.hypot(a.x - b.x, a.y - b.y), mx: (a.x + b.x) / 2, my: (a.y + b.y) / 2 };
        moved = Infinity; // a pinch is never a click
      }
    });
    on('pointermove', (e) => {
      const p = local(e);
      if (pointers.size === 0) return this.hoverAt(p.x, p.y);
      const prev = pointers.get(e.pointerId);
      if (!prev) return;
      pointers.set(e.pointerId, p);
      if (pointers.size === 1) {
        moved += Math.abs(p.x - prev.x) + Math.abs(p.y - prev.y);
        if (moved > 4) {
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
        if (e.type === 'pointerup' && moved <= 4) {
          const p = local(e);
          const i = this.seatAt(p.x, p.y);
          if (i >= 0 && this.opts.onSeat) this.opts.onSeat(i);
        }
      }
    };
    on('pointerup', up);
    on('pointercancel', up);
    on('pointerleave', () => { if (pointers.size === 0) this.hoverAt(-1, -1); });
    on('wheel', (e) => {
      e.preventDefault(); // the page must not scroll while the map zooms
      const p = local(e);
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

  hoverAt(cx, cy) {
    const i = cx < 0 ? -1 : this.seatAt(cx, cy);
    if (i === this.hover) return;
    this.hover = i;
    this.canvas.classList.toggle('over-seat', i >= 0);
    if (this.opts.onHover) this.opts.onHover(i, cx, cy);
    this.schedule();
  }
}

// describeSeat is the one-line text of a seat for tips and lists.
export function describeSeat(venue, i, status) {
  const s = seatInfo(venue, i);
  return `${s.section} · Row ${s.row} · Seat ${s.number} — ${s.tier}, ${money(s.price)}${status ? ` — ${status}` : ''}`;
}
