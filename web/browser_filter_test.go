package web_test

// Seat features and the map's filters in a real browser: wheelchair
// spaces, companion seats and restricted views marked on the map (by
// shape, counted on the overview's cards, said in words in the tip);
// setFilter dims the seats outside it and a click on one picks nothing;
// the filter controls of filters.js (mounted from the test: the event
// page does not mount them yet) drive the map with the keyboard.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice"
)

// accessArena is the test arena with featured seats in the floor and in
// L103.
func accessArena() []boxoffice.Section {
	secs := arenaLayout()
	for i := range secs {
		switch secs[i].Name {
		case "Floor":
			secs[i].Features = map[string][]boxoffice.SeatFeature{
				"A-1":  {boxoffice.Wheelchair},
				"A-2":  {boxoffice.Companion},
				"A-3":  {boxoffice.Companion},
				"T-50": {boxoffice.RestrictedView},
			}
		case "L103":
			secs[i].Features = map[string][]boxoffice.SeatFeature{
				"A-1":  {boxoffice.Wheelchair},
				"A-2":  {boxoffice.Companion},
				"Y-40": {boxoffice.RestrictedView},
			}
		}
	}
	return secs
}

// featureTab opens the event page of an arena with featured seats, one of
// whose wheelchair spaces (L103-A-1) someone else holds.
func featureTab(t *testing.T) (*stack, *boxoffice.Event, *tab) {
	t.Helper()
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Access Night", Venue: "Boxoffice Arena", Sections: accessArena()})
	if code, out := s.call(t, "POST", "/bookings/reserve", s.Token(t, "carol", ""),
		map[string]any{"event_id": ev.ID.String(), "seat_ids": []string{"L103-A-1"}}, "carol-1"); code != 201 {
		t.Fatalf("carol's reserve: %d %v", code, out)
	}
	fan := newTab(t, browser, s, "fan", s.Token(t, "fan", ""))
	fan.open("/app/events/" + ev.ID.String())
	fan.waitMap()
	fan.waitJS(`boxoffice.seatmap.statuses[boxoffice.seatIndex('L103-A-1')] === 1`, "carol's hold on the map")
	fan.frame()
	return s, ev, fan
}

type filterSummary struct {
	Active                     bool
	Available, Matching, Seats int
}

func (tb *tab) filterSummary() filterSummary {
	tb.t.Helper()
	return evalIn[filterSummary](tb, `(() => { const s = boxoffice.seatmap.filterSummary();
		return {Active: s.active, Available: s.available, Matching: s.matching, Seats: s.seats}; })()`)
}

// assets is the page's asset prefix (/app/assets/<version>/), where its
// modules are.
const assetsJS = `document.querySelector('script[type=module]').src.replace(/js\/main\.js$/, '')`

// TestBrowserFilterFeaturesOnMap: the map knows the featured seats, counts
// them on the overview's cards, marks them zoomed in, and the tip of a
// wheelchair space says so in words.
func TestBrowserFilterFeaturesOnMap(t *testing.T) {
	_, _, fan := featureTab(t)

	type featured struct {
		ID       string
		Features []string
	}
	got := evalIn[[]featured](fan, `boxoffice.seatmap.featured().map((f) => ({ID: f.id, Features: f.features}))`)
	want := map[string]string{
		"Floor-A-1": "wheelchair", "Floor-A-2": "companion", "Floor-A-3": "companion", "Floor-T-50": "restricted_view",
		"L103-A-1": "wheelchair", "L103-A-2": "companion", "L103-Y-40": "restricted_view",
	}
	if len(got) != len(want) {
		t.Fatalf("the map has %d featured seats (%+v), want %d", len(got), got, len(want))
	}
	for _, f := range got {
		if w, ok := want[f.ID]; !ok || strings.Join(f.Features, ",") != w {
			t.Errorf("%s: features %v, want %q", f.ID, f.Features, w)
		}
	}

	// The overview: L103's card counts its wheelchair space and companion
	// seat.
	if evalIn[bool](fan, `boxoffice.seatmap.canPick()`) {
		t.Fatal("the whole arena is not an overview")
	}
	fan.waitJS(`boxoffice.seatmap.labels.some((l) => l.kind === 'card' && l.section === 'L103' && l.text.includes('1 ♿') && l.text.includes('1 C') && l.text.includes('1 RV'))`,
		"L103's card counting 1 ♿, 1 C and 1 RV")

	// Zoomed in: the wheelchair space wears its mark, the restricted view
	// its notch; a seat without features has neither.
	evalIn[bool](fan, `(() => { const m = boxoffice.seatmap; m.showSeat(boxoffice.seatIndex('Floor-A-2'), false); m.zoomAt(30 / m.view.s, m.cssW / 2, m.cssH / 2); return true; })()`)
	fan.frame()
	type mark struct {
		Seat    string
		Feature string
	}
	marks := evalIn[[]mark](fan, `(() => { const m = boxoffice.seatmap, ids = new Map(m.featured().map((f) => [f.index, f.id]));
		return m.labels.filter((l) => l.kind === 'mark').map((l) => ({Seat: ids.get(l.seat) || String(l.seat), Feature: l.feature})); })()`)
	for _, w := range []mark{{"Floor-A-1", "wheelchair"}, {"Floor-A-2", "companion"}, {"Floor-A-3", "companion"}} {
		if !slices.Contains(marks, w) {
			t.Errorf("zoomed in on the floor's row A, %s has no %s mark (marks drawn: %v)", w.Seat, w.Feature, marks)
		}
	}
	for _, m := range marks {
		if want[m.Seat] != m.Feature {
			t.Errorf("a %s mark drawn on %s", m.Feature, m.Seat)
		}
	}

	// The tip of the wheelchair space says it in words.
	fan.hoverSeat("Floor-A-1")
	fan.waitJS(`(() => { const t = document.querySelector('.map-tip'); return t && !t.hidden && t.textContent.includes('Floor · Row A · Seat 1') && t.textContent.includes('Wheelchair space'); })()`,
		"the tip of Floor-A-1 saying Wheelchair space")
	fan.hoverSeat("Floor-A-2")
	fan.waitJS(`(() => { const t = document.querySelector('.map-tip'); return t && !t.hidden && t.textContent.includes('Seat 2') && t.textContent.includes('Companion seat'); })()`,
		"the tip of Floor-A-2 saying Companion seat")
	fan.hoverSeat("Floor-A-5")
	fan.waitJS(`(() => { const t = document.querySelector('.map-tip'); return t && !t.hidden && t.textContent.includes('Seat 5'); })()`, "the tip of Floor-A-5")
	if tip := evalIn[string](fan, `document.querySelector('.map-tip').textContent`); strings.Contains(tip, "Wheelchair") || strings.Contains(tip, "Companion") {
		t.Errorf("the tip of a plain seat names a feature: %q", tip)
	}
}

// hoverSeat brings a seat into view at a pickable zoom and moves the mouse
// onto it.
func (tb *tab) hoverSeat(seatID string) {
	tb.t.Helper()
	p := evalIn[pagePoint](tb, fmt.Sprintf(`(() => { const m = boxoffice.seatmap, i = boxoffice.seatIndex(%q);
		const r = m.canvas.getBoundingClientRect(); let p = m.seatPoint(i);
		if (!m.canPick() || p.x < r.left + p.size || p.y < r.top + p.size || p.x > r.right - p.size || p.y > r.bottom - p.size) { m.showSeat(i, false); p = m.seatPoint(i); }
		return {X: p.x, Y: p.y}; })()`, seatID))
	tb.do("hover "+seatID, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p.X-30, p.Y-30), chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p.X, p.Y))
}

// TestBrowserFilterDimsAndBlocks: setFilter dims the seats outside it
// (still drawn, in the dimmed colour), counts the available seats that
// match, and a click on a dimmed seat picks nothing while one on a seat
// inside the filter picks it.
func TestBrowserFilterDimsAndBlocks(t *testing.T) {
	_, _, fan := featureTab(t)
	dimmed := evalIn[string](fan, `import(`+assetsJS+` + 'js/seatmap.js').then((m) => m.PALETTE.dimmed)`)
	if dimmed == "" {
		t.Fatal("PALETTE.dimmed is missing")
	}

	if s := fan.filterSummary(); s.Active || s.Matching != s.Available || s.Seats != 24000 {
		t.Fatalf("without a filter: %+v", s)
	}
	// Wheelchair spaces: two, one of them held.
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter({features: ['wheelchair']}), true)`)
	if s := fan.filterSummary(); !s.Active || s.Matching != 1 || s.Seats != 2 {
		t.Fatalf("wheelchair spaces: %+v, want 1 available of 2 seats", s)
	}
	// So few that the overview marks them.
	if few := evalIn[[]int](fan, `boxoffice.seatmap.few`); len(few) != 1 || few[0] != evalIn[int](fan, `boxoffice.seatIndex('Floor-A-1')`) {
		t.Errorf("the overview marks seats %v, want Floor-A-1 alone", few)
	}
	// The others are dimmed but drawn, in the bitmap too.
	colour := func(id string) string {
		return evalIn[string](fan, fmt.Sprintf(`(() => { const m = boxoffice.seatmap, i = boxoffice.seatIndex(%q), v = m.venue;
			const sec = v.sections.find((s) => i >= s.base && i < s.base + s.count);
			const k = i - sec.base, x = sec.x + k %% sec.perRow, y = sec.y + Math.floor(k / sec.perRow);
			const d = m.bctx.getImageData(x, y, 1, 1).data;
			const hex = '#' + [d[0], d[1], d[2]].map((c) => c.toString(16).padStart(2, '0')).join('').toUpperCase();
			return m.colour(i, sec) + ' ' + hex; })()`, id))
	}
	if got := colour("Floor-B-7"); got != dimmed+" "+dimmed {
		t.Errorf("Floor-B-7, outside the filter: fill and bitmap %s, want %s", got, dimmed)
	}
	if got := colour("Floor-A-1"); strings.Contains(got, dimmed) {
		t.Errorf("Floor-A-1, a wheelchair space, is dimmed: %s", got)
	}

	// Prices: the floor (250.00) and the boxes (600.00) are out.
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter({minPrice: 6500, maxPrice: 12000}), true)`)
	want := 8*25*40 + 12*30*40 - 1 // the lower and upper tiers, less carol's hold
	if s := fan.filterSummary(); s.Matching != want {
		t.Errorf("from 65.00 to 120.00: %d available seats match, want %d", s.Matching, want)
	}
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter({tiers: ['vip']}), true)`)
	if s := fan.filterSummary(); s.Matching != 600 {
		t.Errorf("the vip tier: %d match, want 600", s.Matching)
	}
	// A tier and a feature: seats of that tier with that feature.
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter({tiers: ['floor'], features: ['companion', 'restricted_view']}), true)`)
	if s := fan.filterSummary(); s.Matching != 3 {
		t.Errorf("the floor's companion seats and restricted views: %d match, want 3", s.Matching)
	}

	// A click on a dimmed seat picks nothing; then one on a seat inside the
	// filter picks it (the clicks are handled in order: when the second
	// has picked, the first is done).
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter({features: ['wheelchair']}), true)`)
	fan.clickSeat("Floor-A-5")
	fan.frame()
	fan.clickSeat("Floor-A-1")
	fan.waitJS(`boxoffice.seatmap.selected.size > 0`, "a pick")
	if only := evalIn[bool](fan, `boxoffice.seatmap.selected.size === 1 && boxoffice.seatmap.selected.has(boxoffice.seatIndex('Floor-A-1'))`); !only {
		t.Fatal("want only Floor-A-1 picked: a click on the dimmed Floor-A-5 must pick nothing")
	}
	fan.waitText(".selection", "Row A · Seat 1")
	if txt := evalIn[string](fan, `document.querySelector('.selection').innerText`); strings.Contains(txt, "Seat 5") {
		t.Errorf("the dimmed seat was picked: %q", txt)
	}
	// The tip of a dimmed seat says why.
	fan.hoverSeat("Floor-A-5")
	fan.waitJS(`(() => { const t = document.querySelector('.map-tip'); return t && !t.hidden && t.textContent.includes('Seat 5') && t.textContent.includes('outside your filter'); })()`,
		"the tip of a dimmed seat")
	// The pick stays pickable (to give it back) under any filter.
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter({tiers: ['vip']}), true)`)
	fan.clickSeat("Floor-A-1")
	fan.waitJS(`boxoffice.seatmap.selected.size === 0`, "Floor-A-1 given back")

	// No filter: the seat is pickable again.
	evalIn[bool](fan, `(boxoffice.seatmap.setFilter(null), true)`)
	if s := fan.filterSummary(); s.Active || s.Matching != s.Available {
		t.Errorf("after clearing: %+v", s)
	}
	fan.clickSeat("Floor-A-5")
	fan.waitText(".selection", "Row A · Seat 5")
}

// TestBrowserFilterControls: filters.js's controls, mounted on the event
// page from the test, are labelled, offer the event's tiers and features,
// and drive the map from the keyboard; the count follows.
func TestBrowserFilterControls(t *testing.T) {
	_, _, fan := featureTab(t)
	evalIn[bool](fan, `(async () => {
		const base = `+assetsJS+`;
		const link = document.createElement('link');
		link.rel = 'stylesheet'; link.href = base + 'filters.css';
		document.head.append(link);
		const { mountFilters } = await import(base + 'js/filters.js');
		const box = document.createElement('section');
		box.className = 'card'; box.id = 'test-filters';
		document.querySelector('main').prepend(box);
		window.testFilters = mountFilters(box, boxoffice.seatmap, boxoffice.venue);
		return true; })()`)
	fan.waitText("#test-filters", "Filter seats")
	checkPage(t, fan, "event page with the filters")

	type controls struct {
		Tiers, Features []string
		Min, Max        string
		Summary         string
	}
	c := evalIn[controls](fan, `(() => { const f = document.querySelector('#test-filters');
		const text = (sel) => [...f.querySelectorAll(sel)].map((i) => i.labels[0].textContent.trim());
		return {Tiers: text('[data-tier]'), Features: text('[data-feature]'),
			Min: f.querySelector('.filter-min').value, Max: f.querySelector('.filter-max').value,
			Summary: f.querySelector('.filter-summary').textContent}; })()`)
	if len(c.Tiers) != 4 || !strings.HasPrefix(c.Tiers[0], "floor · ") {
		t.Errorf("tier checkboxes %q, want floor, lower, upper, vip", c.Tiers)
	}
	if strings.Join(c.Features, "|") != "Wheelchair space (2)|Companion seat (3)|Restricted view (2)" {
		t.Errorf("feature checkboxes %q", c.Features)
	}
	if c.Min != "65" || c.Max != "600" {
		t.Errorf("price range %s to %s, want 65 to 600", c.Min, c.Max)
	}
	if !strings.Contains(c.Summary, "23,999") && !strings.Contains(c.Summary, "23999") {
		t.Errorf("summary %q, want the 23,999 available seats", c.Summary)
	}

	// With the keyboard: tab to "Wheelchair space", space ticks it.
	fan.do("focus the wheelchair box", chromedp.Focus(chromedp.CSS(`#test-filters [data-feature="wheelchair"]`)))
	fan.do("tick it", chromedp.KeyEvent(" "))
	fan.waitJS(`(() => { const f = boxoffice.seatmap.filterSummary(); return f.active && f.matching === 1 && f.filter.features.join() === 'wheelchair'; })()`, "the map filtered to wheelchair spaces")
	fan.waitText("#test-filters .filter-summary", "1 of 23,999")
	fan.do("untick it", chromedp.KeyEvent(" "))
	fan.waitJS(`!boxoffice.seatmap.filterSummary().active`, "no filter")

	// Typing a price range.
	fan.do("type the highest price",
		chromedp.Focus(chromedp.CSS(`#test-filters .filter-max`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#test-filters .filter-max').select()`),
		chromedp.KeyEvent("120"))
	fan.waitJS(`(() => { const f = boxoffice.seatmap.filterSummary().filter; return f && f.maxPrice === 12000 && f.minPrice === null; })()`, "the map filtered to 120 and under")
	if s := fan.filterSummary(); s.Matching != 8*25*40+12*30*40-1 {
		t.Errorf("120 and under: %d match", s.Matching)
	}
	// A tier ticked as well, by clicking its label.
	fan.click(`#test-filters label[for="` + evalIn[string](fan, `document.querySelector('#test-filters [data-tier="upper"]').id`) + `"]`)
	fan.waitJS(`(() => { const f = boxoffice.seatmap.filterSummary(); return f.filter && f.filter.tiers.join() === 'upper' && f.matching === 12 * 30 * 40; })()`, "upper seats of 120 and under")

	// Clear.
	fan.click(`#test-filters .filter-clear`)
	fan.waitJS(`!boxoffice.seatmap.filterSummary().active && document.querySelector('#test-filters .filter-max').value === '600'`, "the filters cleared")

	// An event without features offers no feature boxes.
	hidden := evalIn[bool](fan, `(() => { const box = document.createElement('div'); document.querySelector('main').append(box);
		return import(`+assetsJS+` + 'js/filters.js').then(({ mountFilters }) => {
			const h = mountFilters(box, boxoffice.seatmap, {sections: [{name: 'X', price_tier: 'A', price_cents: 1000, rows: 1, seats_per_row: 2}]});
			const out = h.element.querySelector('.filter-features').hidden && h.element.querySelectorAll('[data-feature]').length === 0;
			h.destroy(); boxoffice.seatmap.setFilter(null); return out; }); })()`)
	if !hidden {
		t.Error("filters for an event without featured seats show feature boxes")
	}
	evalIn[bool](fan, `(window.testFilters.destroy(), true)`)
}
