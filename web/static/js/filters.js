// The seat map's filters: a price range, price tiers and seat features
// (wheelchair spaces, companion seats, restricted views). A change calls
// map.setFilter, which dims the seats outside the filter and makes them
// unpickable; the count of available seats that match follows the map's
// repaints (statuses change while the buyer chooses).
//
//   const filters = mountFilters(box, map, venue);
//   scope.add(() => filters.destroy());
//
// Every control is a native input with a label: usable with the keyboard
// and read out by screen readers. Styles: filters.css.

import { FEATURES, FEATURE_NAMES } from './venue.js';
import { PALETTE, drawGlyph } from './seatmap.js';
import { h, fill, money, count, uid } from './ui.js';

// summarise reads what the controls offer (tiers with their prices, the
// price range, seats per feature) from the venue the map was built from
// (buildVenue), the event (its sections), or the layout document
// (GET /events/{id}/layout: its seats).
function summarise(layout, map) {
  const tiers = new Map(); // name → lowest price
  const featureCount = Object.fromEntries(FEATURES.map((f) => [f, 0]));
  const addTier = (name, price) => { if (!tiers.has(name) || price < tiers.get(name)) tiers.set(name, price); };
  const src = layout || map.venue;
  if (src.seatCount !== undefined && Array.isArray(src.tiers)) {
    for (const s of src.sections) addTier(s.tier, s.price);
    for (const f of FEATURES) featureCount[f] = (src.featureCount && src.featureCount[f]) || 0;
  } else if (Array.isArray(src.seats)) {
    for (const s of src.seats) {
      addTier(s.price_tier, s.price_cents);
      for (const f of s.features || []) if (f in featureCount) featureCount[f]++;
    }
  } else {
    for (const s of (Array.isArray(src) ? src : src.sections) || []) {
      addTier(s.price_tier, s.price_cents);
      for (const fs of Object.values(s.features || {})) for (const f of fs) if (f in featureCount) featureCount[f]++;
    }
  }
  const prices = [...tiers.values()];
  return {
    tiers: [...tiers].map(([name, price]) => ({ name, price })),
    min: prices.length ? Math.min(...prices) : 0,
    max: prices.length ? Math.max(...prices) : 0,
    featureCount,
  };
}

// The currency's sign, as money() writes it ("€").
function currencySign() {
  const s = money(0).replace(/[\d\s.,\u00a0\u202f]/g, '');
  return s || '¤';
}

// glyphIcon is a feature's mark as the map draws it, for the label.
function glyphIcon(f) {
  const css = 18, dpr = window.devicePixelRatio || 1;
  const c = h('canvas', { class: 'filter-glyph', width: Math.round(css * dpr), height: Math.round(css * dpr), 'aria-hidden': 'true' });
  c.style.width = c.style.height = `${css}px`;
  const ctx = c.getContext('2d');
  ctx.scale(dpr, dpr);
  drawGlyph(ctx, f, css / 2, css / 2, css - 2, PALETTE.cardText, PALETTE.card);
  return c;
}

// mountFilters renders the filters into container and wires them to map
// (a SeatMap). layout: what the map was built from (the venue of
// buildVenue; the event or the layout document also do); by default the
// map's venue. It returns {element, values(), set(values), reset(),
// destroy()}.
export function mountFilters(container, map, layout) {
  const info = summarise(layout, map);
  const sign = currencySign();
  const whole = info.tiers.every((t) => t.price % 100 === 0);
  const step = whole ? '1' : '0.01';
  const toMoney = (cents) => (whole ? String(cents / 100) : (cents / 100).toFixed(2));

  const headingId = uid('filters-h');
  const minIn = h('input', { type: 'number', id: uid('filter-min'), class: 'filter-min', inputmode: 'decimal', min: toMoney(info.min), max: toMoney(info.max), step, value: toMoney(info.min) });
  const maxIn = h('input', { type: 'number', id: uid('filter-max'), class: 'filter-max', inputmode: 'decimal', min: toMoney(info.min), max: toMoney(info.max), step, value: toMoney(info.max) });
  const rangeNote = h('p', { class: 'filter-note small', id: uid('filter-note') });
  minIn.setAttribute('aria-describedby', rangeNote.id);
  maxIn.setAttribute('aria-describedby', rangeNote.id);
  const priceSet = h('fieldset', { class: 'filter-price', hidden: info.min === info.max },
    h('legend', {}, 'Price per seat'),
    h('div', { class: 'filter-range' },
      h('div', { class: 'filter-field' }, h('label', { for: minIn.id }, `From (${sign})`), minIn),
      h('div', { class: 'filter-field' }, h('label', { for: maxIn.id }, `To (${sign})`), maxIn)),
    rangeNote);

  const tierBoxes = info.tiers.map((t) => {
    const box = h('input', { type: 'checkbox', id: uid('filter-tier'), value: t.name, 'data-tier': t.name });
    const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.background = map.tierColour.get(t.name) || PALETTE.cardLine;
    return { box, el: h('div', { class: 'filter-check' }, box, h('label', { for: box.id }, sw, `${t.name} · ${money(t.price)}`)) };
  });
  const tierSet = h('fieldset', { class: 'filter-tiers', hidden: info.tiers.length < 2 },
    h('legend', {}, 'Price tiers'),
    h('p', { class: 'small muted' }, 'None ticked: every tier.'),
    tierBoxes.map((t) => t.el));

  const offered = FEATURES.filter((f) => info.featureCount[f] > 0);
  const featureBoxes = offered.map((f) => {
    const box = h('input', { type: 'checkbox', id: uid('filter-feature'), value: f, 'data-feature': f });
    const n = info.featureCount[f];
    return { box, el: h('div', { class: 'filter-check' }, box, h('label', { for: box.id }, glyphIcon(f), FEATURE_NAMES[f], h('span', { class: 'muted' }, ` (${count(n)})`))) };
  });
  const featureSet = h('fieldset', { class: 'filter-features', hidden: offered.length === 0 },
    h('legend', {}, 'Seat needs'),
    h('p', { class: 'small muted' }, 'Tick one or more: only seats with one of them are shown.'),
    featureBoxes.map((t) => t.el));

  const summary = h('p', { class: 'filter-summary', role: 'status', 'aria-live': 'polite' });
  const clear = h('button', { type: 'button', class: 'secondary filter-clear' }, 'Clear filters');
  const form = h('form', { class: 'filters', 'aria-labelledby': headingId, novalidate: true },
    h('h2', { id: headingId }, 'Filter seats'),
    priceSet, tierSet, featureSet,
    h('div', { class: 'filter-foot' }, summary, clear));

  // cents reads a price input: null when empty or not a number.
  const cents = (input) => {
    const v = input.value.trim();
    if (v === '' || !Number.isFinite(Number(v))) return null;
    return Math.round(Number(v) * 100);
  };

  function values() {
    const minPrice = cents(minIn), maxPrice = cents(maxIn);
    return {
      // The full range is no filter.
      minPrice: minPrice !== null && minPrice > info.min ? minPrice : null,
      maxPrice: maxPrice !== null && maxPrice < info.max ? maxPrice : null,
      tiers: tierBoxes.filter((t) => t.box.checked).map((t) => t.box.value),
      features: featureBoxes.filter((t) => t.box.checked).map((t) => t.box.value),
    };
  }

  function apply() {
    const v = values();
    const lo = cents(minIn), hi = cents(maxIn);
    const swapped = lo !== null && hi !== null && lo > hi;
    for (const input of [minIn, maxIn]) {
      if (swapped) input.setAttribute('aria-invalid', 'true');
      else input.removeAttribute('aria-invalid');
    }
    fill(rangeNote, swapped
      ? `“From” is above “To”: showing ${money(hi)} to ${money(lo)}.`
      : `Prices here run from ${money(info.min)} to ${money(info.max)}.`);
    map.setFilter(v); // repaints, and so updates the summary
    return v;
  }

  let said = '';
  function drawSummary(s) {
    const text = !s.active
      ? `${count(s.available)} available seat${s.available === 1 ? '' : 's'}, no filter.`
      : s.matching === 0
        ? 'No available seat matches. Widen the filter.'
        : `${count(s.matching)} of ${count(s.available)} available seat${s.available === 1 ? '' : 's'} match.`;
    if (text !== said) { summary.textContent = text; said = text; } // an unchanged count is not read out again
    clear.disabled = !s.active;
  }

  function set(v = {}) {
    minIn.value = v.minPrice !== null && v.minPrice !== undefined ? toMoney(v.minPrice) : toMoney(info.min);
    maxIn.value = v.maxPrice !== null && v.maxPrice !== undefined ? toMoney(v.maxPrice) : toMoney(info.max);
    for (const t of tierBoxes) t.box.checked = !!(v.tiers && v.tiers.includes(t.box.value));
    for (const t of featureBoxes) t.box.checked = !!(v.features && v.features.includes(t.box.value));
    return apply();
  }
  const reset = () => set({});

  const onPaint = (e) => drawSummary(e.detail);
  map.canvas.addEventListener('seatmap:paint', onPaint);
  form.addEventListener('input', apply);
  form.addEventListener('change', apply);
  form.addEventListener('submit', (e) => { e.preventDefault(); apply(); });
  clear.addEventListener('click', () => { reset(); minIn.focus(); });

  container.append(form);
  apply();
  drawSummary(map.filterSummary());

  return {
    element: form, values, set, reset,
    destroy() {
      map.canvas.removeEventListener('seatmap:paint', onPaint);
      form.remove();
    },
  };
}
