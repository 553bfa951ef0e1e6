package web_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
)

// arenaLayout is the demo's 24,000-seat arena (cmd/boxoffice/demo.go).
func arenaLayout() []boxoffice.Section {
	secs := []boxoffice.Section{{Name: "Floor", PriceTier: "floor", PriceCents: 25000, Rows: 20, SeatsPerRow: 50}}
	for i := 1; i <= 8; i++ {
		secs = append(secs, boxoffice.Section{Name: fmt.Sprintf("L%d", 100+i), PriceTier: "lower", PriceCents: 12000, Rows: 25, SeatsPerRow: 40})
	}
	for i := 1; i <= 12; i++ {
		secs = append(secs, boxoffice.Section{Name: fmt.Sprintf("U%d", 200+i), PriceTier: "upper", PriceCents: 6500, Rows: 30, SeatsPerRow: 40})
	}
	return append(secs,
		boxoffice.Section{Name: "BoxA", PriceTier: "vip", PriceCents: 60000, Rows: 10, SeatsPerRow: 30},
		boxoffice.Section{Name: "BoxB", PriceTier: "vip", PriceCents: 60000, Rows: 10, SeatsPerRow: 30})
}

// sellSome makes a sale in progress: groups of seats sold, some held, a
// few tickets on resale, spread over the arena by a fixed seed.
func sellSome(t *testing.T, s *stack, ev *boxoffice.Event, sold, held, resale int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	taken := map[string]bool{}
	group := func() []string {
		for {
			sec := ev.Sections[rng.IntN(len(ev.Sections))]
			row := boxoffice.RowLabel(1 + rng.IntN(sec.Rows))
			n := 2 + rng.IntN(5)
			first := 1 + rng.IntN(sec.SeatsPerRow-n)
			var ids []string
			for k := range n {
				id := boxoffice.SeatID(sec.Name, row, first+k)
				if taken[id] {
					ids = nil
					break
				}
				ids = append(ids, id)
			}
			if ids != nil {
				for _, id := range ids {
					taken[id] = true
				}
				return ids
			}
		}
	}
	listed := 0
	for i := range sold + held {
		u := boxoffice.User{ID: fmt.Sprintf("fan-%d", i)}
		r, err := s.Service.Reserve(ctx, u, sale.ReserveRequest{EventID: ev.ID, SeatIDs: group(), IdempotencyKey: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if i >= sold {
			continue // held, awaiting payment
		}
		c, err := s.Service.Confirm(ctx, u, sale.ConfirmRequest{BookingID: r.BookingID, PaymentToken: "tok_visa", IdempotencyKey: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if listed < resale {
			listed++
			tk := c.Tickets[0]
			if _, err := s.Service.ListTicket(ctx, u, sale.ListRequest{TicketID: tk.TicketID, PriceCents: 6000, IdempotencyKey: "l"}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkPage asserts what every page owes a phone and a keyboard: nothing
// wider than the screen, and a label for every control.
func checkPage(t *testing.T, tb *tab, what string) {
	t.Helper()
	if over := evalIn[int](tb, `document.documentElement.scrollWidth - window.innerWidth`); over > 0 {
		t.Errorf("%s: the page is %d px wider than the screen", what, over)
	}
	unlabelled := evalIn[[]string](tb, `[...document.querySelectorAll('main input, main select, main textarea')]
		.filter((e) => e.type !== 'hidden' && !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
		.map((e) => e.outerHTML.slice(0, 80))`)
	if len(unlabelled) > 0 {
		t.Errorf("%s: controls without a label: %s", what, strings.Join(unlabelled, "; "))
	}
}

// TestBrowserTour walks the pages a person sees on the demo arena (24,000
// seats, a sale in progress): the event list, the seat map zoomed out and
// in, the organiser's form and live sale, and a phone-sized screen. With
// -update-screenshots it writes docs/screenshots/.
func TestBrowserTour(t *testing.T) {
	browser := newBrowser(t)
	s := newStack(t)
	queued := s.event(t, boxoffice.Event{Name: "Flash Sale at the Arena", Venue: "Boxoffice Arena", SaleMode: boxoffice.SaleQueued, TicketLimit: 4, Sections: arenaLayout()})
	arena := s.event(t, boxoffice.Event{Name: "Demo Night at the Arena", Venue: "Boxoffice Arena", Sections: arenaLayout(),
		Refundable: true, RefundCutoffHours: 48, ResaleCapPercent: 100})
	sellSome(t, s, arena, 260, 60, 25)

	fan := newTab(t, browser, s, "fan", s.Token(t, "demo-customer", ""))
	fan.open("/app/")
	fan.waitText("main", "Demo Night at the Arena")
	checkPage(t, fan, "event list")
	fan.screenshot("event-list")

	fan.click(fmt.Sprintf(`a[href="/app/events/%s"]`, arena.ID))
	fan.waitMap()
	checkPage(t, fan, "event page")
	// The map drew the arena: the bitmap has a pixel per seat.
	if n := evalIn[int](fan, `boxoffice.seatmap.venue.seatCount`); n != 24000 {
		t.Errorf("the map has %d seats, want 24000", n)
	}
	fan.screenshot("seat-map")
	// Zoom in on a section with the buttons and the keyboard picker.
	fan.do("pick a seat by name",
		chromedp.SetValue(chromedp.CSS("#pick-section"), "L103"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#pick-section').dispatchEvent(new Event('change'))`),
	)
	fan.click("#pick-show")
	fan.click("#pick-add")
	fan.waitText(".selection", "L103 · Row A")
	fan.clickSeat("L103-A-2")
	fan.waitText(".total", "2 seats")
	fan.screenshot("seat-map-zoomed")

	// The organiser: the create form with its preview, then a sale live.
	org := newTab(t, browser, s, "organiser", s.Token(t, "demo-admin", boxoffice.RoleAdmin))
	org.open("/app/organiser")
	org.waitJS(`document.querySelector('#event-form')`, "the event form")
	checkPage(t, org, "organiser")
	org.screenshot("organiser-create")
	org.do("name the event", chromedp.SetValue(chromedp.CSS("#event-form input[type=text]"), "Browser Gala"))
	org.click("#create-event")
	org.waitJS(`/^\/app\/organiser\/events\/\d+$/.test(location.pathname)`, "the new event's sale page")
	org.waitText("#stats", "available")
	code, out := s.call(t, "GET", "/events", "", nil, "")
	if code != 200 || !strings.Contains(fmt.Sprint(out["events"]), "Browser Gala") {
		t.Errorf("the event created in the browser is not listed: %d %v", code, out)
	}

	// A flash sale with a queue draining: 40 people, two named seats each.
	// Named seats keep the outcome exact: best-available requests served in
	// one batch race for the same first blocks, and one that loses more
	// races than sale's bestAttempts allows is refused.
	for i := range 40 {
		u := fmt.Sprintf("queued-%d", i)
		row := boxoffice.RowLabel(1 + i/25)
		seats := []string{boxoffice.SeatID("Floor", row, 1+2*(i%25)), boxoffice.SeatID("Floor", row, 2+2*(i%25))}
		if code, out := s.call(t, "POST", "/bookings/reserve", s.Token(t, u, ""),
			map[string]any{"event_id": queued.ID.String(), "seat_ids": seats}, "q"); code != 202 {
			t.Fatalf("queueing: %d %v", code, out)
		}
	}
	org.open("/app/organiser/events/" + queued.ID.String())
	org.waitText("#stat-depth", "in the queue")
	s.StartWorkers(t, 1)
	org.waitJS(`document.querySelector('#stat-served .n') && document.querySelector('#stat-served .n').textContent === '40'`, "the queue served")
	org.waitJS(`document.querySelector('#stat-held .n') && document.querySelector('#stat-held .n').textContent === '80'`, "the held seats counted")
	org.screenshot("organiser-sale")

	// A phone: one column, the map still there.
	fan.do("phone-sized screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	fan.open(fmt.Sprintf("/app/events/%s", arena.ID))
	fan.waitMap()
	checkPage(t, fan, "event page on a phone")
	fan.capture("phone-event", false) // the first screen, as the phone shows it
	fan.open("/app/tickets")
	fan.waitJS(`document.querySelector('#tickets')`, "my tickets")
	checkPage(t, fan, "my tickets on a phone")
}
