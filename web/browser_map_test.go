package web_test

// The seat map in a real browser: the overview of sections and its
// click-to-zoom, picking once seats are big enough to hit (with a mouse
// and with a finger on a phone-sized screen), the labels that stay in view
// when zoomed in, and the hover tip that never covers its seat.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice"
)

// mapState is what the map shows now.
type mapState struct {
	Scale, Pick float64
	CanPick     bool
	Picked      int
	Coarse      bool
}

func (tb *tab) mapState() mapState {
	tb.t.Helper()
	return evalIn[mapState](tb, `(() => { const m = boxoffice.seatmap;
		return {Scale: m.view.s, Pick: m.pickScale(), CanPick: m.canPick(), Picked: m.selected.size, Coarse: m.coarse}; })()`)
}

// frame waits for the map to have drawn what its state says (two
// animation frames).
func (tb *tab) frame() {
	tb.t.Helper()
	evalIn[bool](tb, `new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(() => ok(true))))`)
}

type pagePoint struct{ X, Y float64 }

// sectionMiddle is where the middle of a section is on the page, scrolled
// into view.
func (tb *tab) sectionMiddle(name string) pagePoint {
	tb.t.Helper()
	return evalIn[pagePoint](tb, fmt.Sprintf(`(() => { const m = boxoffice.seatmap;
		m.canvas.scrollIntoView({block: 'center'});
		const p = m.sectionPoint(%q); return {X: p.x, Y: p.y}; })()`, name))
}

// seatOnPage is where a seat's centre is on the page now (no zooming).
func (tb *tab) seatOnPage(seatID string) pagePoint {
	tb.t.Helper()
	return evalIn[pagePoint](tb, fmt.Sprintf(`(() => { const p = boxoffice.seatmap.seatPoint(boxoffice.seatIndex(%q)); return {X: p.x, Y: p.y}; })()`, seatID))
}

func arenaTab(t *testing.T) (*stack, *boxoffice.Event, func(string) *tab) {
	t.Helper()
	browser := newBrowser(t)
	s := newStack(t)
	ev := s.event(t, boxoffice.Event{Name: "Map Night", Venue: "Boxoffice Arena", Sections: arenaLayout()})
	sellSome(t, s, ev, 30, 10, 0)
	return s, ev, func(name string) *tab { return newTab(t, browser, s, name, s.Token(t, name, "")) }
}

// TestBrowserMapOverviewDesktop: zoomed out, the arena is an overview of
// sections; a click on one zooms into it and picks nothing; once zoomed in
// a click picks the seat under it; the section name and the row letters
// stay in view; the hover tip stays inside the map, off its seat.
func TestBrowserMapOverviewDesktop(t *testing.T) {
	_, ev, open := arenaTab(t)
	fan := open("fan")
	fan.open("/app/events/" + ev.ID.String())
	fan.waitMap()
	fan.frame()

	st := fan.mapState()
	if st.CanPick || st.Coarse {
		t.Fatalf("the whole arena at %.2f px per seat: picking is on (%+v), want the overview", st.Scale, st)
	}
	// The overview names the sections, with price and seats left.
	fan.waitJS(`boxoffice.seatmap.labels.some((l) => l.kind === 'card' && l.section === 'L103' && /120/.test(l.text) && /left/.test(l.text))`, "L103's card with its price and seats left")

	// A click on the floor zooms into it; nothing is picked.
	p := fan.sectionMiddle("Floor")
	fan.do("click the floor", chromedp.MouseClickXY(p.X, p.Y))
	fan.waitJS(fmt.Sprintf(`boxoffice.seatmap.view.s > %f`, st.Scale*2), "the map zoomed into the floor")
	if got := fan.mapState(); got.Picked != 0 {
		t.Fatalf("a click on the overview picked %d seats", got.Picked)
	}
	fan.waitText(".selection", "No seats picked")
	// Zoomed to the floor, seats are big enough for a mouse.
	for range 3 {
		if fan.mapState().CanPick {
			break
		}
		p := fan.sectionMiddle("Floor")
		fan.do("click the floor again", chromedp.MouseClickXY(p.X, p.Y))
		fan.frame()
	}
	if got := fan.mapState(); !got.CanPick || got.Picked != 0 {
		t.Fatalf("after zooming into the floor: %+v, want picking on and nothing picked", got)
	}
	// A click on a free seat picks that seat.
	seat := freeSeat(fan, "Floor")
	sp := fan.seatOnPage(seat)
	fan.do("click "+seat, chromedp.MouseClickXY(sp.X, sp.Y))
	fan.waitJS(`boxoffice.seatmap.selected.size === 1`, "one seat picked")
	if picked := evalIn[bool](fan, fmt.Sprintf(`boxoffice.seatmap.selected.has(boxoffice.seatIndex(%q))`, seat)); !picked {
		t.Fatalf("clicking %s picked another seat", seat)
	}

	// Zoomed in on the middle of the floor: the section's top and left
	// edge are out of view, its name and the row letters are not.
	evalIn[bool](fan, `(() => { const m = boxoffice.seatmap, i = boxoffice.seatIndex('Floor-K-25'), p = m.seatPoint(i), r = m.canvas.getBoundingClientRect();
		m.zoomAt(36 / m.view.s, p.x - r.left, p.y - r.top); m.showSeat(i, false); return true; })()`)
	fan.waitJS(`(() => { const m = boxoffice.seatmap, f = m.venue.bySection.get('Floor');
		return m.view.y + f.y * m.view.s < 0 && m.view.x + f.x * m.view.s < 0; })()`, "the floor's corner out of view")
	fan.waitJS(`(() => { const m = boxoffice.seatmap;
		return m.labels.some((l) => l.kind === 'section' && l.section === 'Floor' && l.sticky && l.y > 0 && l.y < m.cssH && l.x > 0 && l.x < m.cssW); })()`,
		"the floor's name stuck at the top of the map")
	fan.waitJS(`(() => { const m = boxoffice.seatmap, rows = m.labels.filter((l) => l.kind === 'row' && l.section === 'Floor');
		return rows.length >= 3 && rows.every((l) => l.sticky && l.x > 0 && l.x < 40 && l.y > 0 && l.y < m.cssH) && rows.some((l) => l.text === 'K'); })()`,
		"the floor's row letters stuck at the left edge")

	// The hover tip: in the middle, at the bottom right corner, at the top
	// left corner, it stays inside the map and off the seat and the row
	// above it.
	for _, where := range []struct{ name, fx, fy string }{
		{"middle", "0.5", "0.5"}, {"bottom right", "1", "1"}, {"top left", "0", "0"}, {"bottom left", "0", "1"}, {"top right", "1", "0"},
	} {
		hoverCorner(t, fan, "Floor-K-25", where.name, where.fx, where.fy)
	}
}

// freeSeat names an available seat in the middle rows of a section,
// away from its edges.
func freeSeat(tb *tab, section string) string {
	tb.t.Helper()
	return evalIn[string](tb, fmt.Sprintf(`(() => { const m = boxoffice.seatmap, s = m.venue.bySection.get(%q);
		for (let r = 2; r < s.rows - 1; r++) for (let c = 3; c < s.perRow - 3; c++) {
			const i = s.base + r * s.perRow + c;
			if (m.statuses[i] === 0 && !m.selected.has(i)) return s.name + '-' + String.fromCharCode(65 + r) + '-' + (c + 1);
		}
		return ''; })()`, section))
}

// hoverCorner moves the view so that the seat sits at (fx, fy) of the
// map (0 left/top, 1 right/bottom, a seat's width in), moves the mouse
// onto it, and checks the tip.
func hoverCorner(t *testing.T, tb *tab, seatID, name, fx, fy string) {
	t.Helper()
	p := evalIn[pagePoint](tb, fmt.Sprintf(`(() => { const m = boxoffice.seatmap, i = boxoffice.seatIndex(%q), st = m.seatPoint(i), r = m.canvas.getBoundingClientRect();
		const s = m.view.s, tx = s + (m.cssW - 2 * s) * %s, ty = s + (m.cssH - 2 * s) * %s;
		m.panBy(tx - (st.x - r.left), ty - (st.y - r.top));
		const q = m.seatPoint(i); return {X: q.x, Y: q.y}; })()`, seatID, fx, fy))
	tb.do("hover "+name, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p.X-20, p.Y-20), chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, p.X, p.Y))
	tb.waitJS(fmt.Sprintf(`(() => { const t = document.querySelector('.map-tip'); return t && !t.hidden && t.textContent.includes(%q); })()`, strings.ReplaceAll(seatText(seatID), "'", "")),
		"the tip for "+seatID+" ("+name+")")
	tb.frame()
	type rect struct{ L, T, R, B float64 }
	type check struct {
		Tip, Map, Seat rect
	}
	c := evalIn[check](tb, fmt.Sprintf(`(() => { const m = boxoffice.seatmap, i = boxoffice.seatIndex(%q), p = m.seatPoint(i), s = m.view.s;
		const t = document.querySelector('.map-tip').getBoundingClientRect(), r = m.canvas.getBoundingClientRect();
		return {Tip: {L: t.left, T: t.top, R: t.right, B: t.bottom}, Map: {L: r.left, T: r.top, R: r.right, B: r.bottom},
			Seat: {L: p.x - s / 2, T: p.y - 1.5 * s, R: p.x + s / 2, B: p.y + s / 2}}; })()`, seatID))
	const eps = 0.5
	if c.Tip.L < c.Map.L-eps || c.Tip.T < c.Map.T-eps || c.Tip.R > c.Map.R+eps || c.Tip.B > c.Map.B+eps {
		t.Errorf("%s: the tip %+v leaves the map %+v", name, c.Tip, c.Map)
	}
	// Seat is the seat and the row above it.
	if c.Tip.L < c.Seat.R && c.Tip.R > c.Seat.L && c.Tip.T < c.Seat.B && c.Tip.B > c.Seat.T {
		t.Errorf("%s: the tip %+v covers the seat or the row above it %+v", name, c.Tip, c.Seat)
	}
}

// seatText is how the tip names a seat: "Floor · Row K · Seat 25".
func seatText(id string) string {
	parts := strings.Split(id, "-")
	return fmt.Sprintf("%s · Row %s · Seat %s", parts[0], parts[1], parts[2])
}

// TestBrowserMapPhone: on a phone-sized touch screen, taps zoom in (into
// the section, then around the finger) until seats are about a finger
// wide, and pick nothing on the way; then a tap picks the seat under it.
func TestBrowserMapPhone(t *testing.T) {
	_, ev, open := arenaTab(t)
	fan := open("fan")
	fan.do("phone-sized touch screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
	fan.open("/app/events/" + ev.ID.String())
	fan.waitMap()
	fan.frame()
	st := fan.mapState()
	if !st.Coarse || st.Pick < 44 || st.CanPick {
		t.Fatalf("on a phone: %+v, want a coarse pointer, a pick pitch of 44 px or more, and the overview", st)
	}

	p := fan.sectionMiddle("Floor")
	fan.do("tap the floor", chromedp.TapXY(p.X, p.Y))
	fan.waitJS(fmt.Sprintf(`boxoffice.seatmap.view.s > %f`, st.Scale*2), "the map zoomed into the floor")
	target := freeSeat(fan, "Floor")
	for k := 0; !fan.mapState().CanPick; k++ {
		if k == 4 {
			t.Fatalf("four taps and still not zoomed in enough to pick: %+v", fan.mapState())
		}
		if got := fan.mapState(); got.Picked != 0 {
			t.Fatalf("a tap below the pick pitch picked %d seats (%+v)", got.Picked, got)
		}
		before := fan.mapState().Scale
		sp := fan.seatOnPage(target)
		fan.do("tap towards "+target, chromedp.TapXY(sp.X, sp.Y))
		fan.waitJS(fmt.Sprintf(`boxoffice.seatmap.view.s > %f`, before), "the map zoomed in")
	}
	got := fan.mapState()
	if got.Picked != 0 || got.Scale < 44 {
		t.Fatalf("zoomed in: %+v, want nothing picked and 44 px per seat or more", got)
	}
	fan.waitText(".selection", "No seats picked")
	// The target stayed under the finger; a tap picks it.
	sp := fan.seatOnPage(target)
	inView := evalIn[bool](fan, fmt.Sprintf(`(() => { const r = boxoffice.seatmap.canvas.getBoundingClientRect(); return %f > r.left && %f < r.right && %f > r.top && %f < r.bottom; })()`, sp.X, sp.X, sp.Y, sp.Y))
	if !inView {
		t.Fatalf("%s went out of view while zooming in", target)
	}
	fan.do("tap "+target, chromedp.TapXY(sp.X, sp.Y))
	fan.waitJS(fmt.Sprintf(`boxoffice.seatmap.selected.has(boxoffice.seatIndex(%q))`, target), target+" picked")
	fan.waitText(".selection", seatText(target))
	if n := fan.mapState().Picked; n != 1 {
		t.Fatalf("%d seats picked, want 1", n)
	}
	checkPage(t, fan, "event page on a phone, zoomed in")

	// Picking by name still works on a phone.
	fan.do("pick a seat by name",
		chromedp.SetValue(chromedp.CSS("#pick-section"), "L103"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#pick-section').dispatchEvent(new Event('change'))`),
	)
	fan.click("#pick-add")
	fan.waitText(".selection", "L103 · Row A")
	if got := fan.mapState(); !got.CanPick {
		t.Errorf("after picking by name the map shows the seat at %.1f px, below the pick pitch %.0f", got.Scale, got.Pick)
	}
}
