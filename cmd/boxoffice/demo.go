package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/sale"
)

// demoLayout is an arena of 24,000 seats: a floor, a lower and an upper
// bowl, and boxes, in four price tiers.
func demoLayout() []boxoffice.Section {
	secs := []boxoffice.Section{{Name: "Floor", PriceTier: "floor", PriceCents: 25000, Rows: 20, SeatsPerRow: 50}}
	for i := 1; i <= 8; i++ {
		secs = append(secs, boxoffice.Section{Name: fmt.Sprintf("L%d", 100+i), PriceTier: "lower", PriceCents: 12000, Rows: 25, SeatsPerRow: 40})
	}
	for i := 1; i <= 12; i++ {
		secs = append(secs, boxoffice.Section{Name: fmt.Sprintf("U%d", 200+i), PriceTier: "upper", PriceCents: 6500, Rows: 30, SeatsPerRow: 40})
	}
	secs = append(secs,
		boxoffice.Section{Name: "BoxA", PriceTier: "vip", PriceCents: 60000, Rows: 10, SeatsPerRow: 30},
		boxoffice.Section{Name: "BoxB", PriceTier: "vip", PriceCents: 60000, Rows: 10, SeatsPerRow: 30})
	return secs
}

// ensureDemo creates the demo event the first time the store is empty and
// returns the newest event otherwise.
func ensureDemo(ctx context.Context, svc *sale.Service) (*boxoffice.Event, error) {
	es, err := svc.Events(ctx, boxoffice.EventFilter{Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(es) > 0 {
		return es[0], nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	e := &boxoffice.Event{
		Name: "Demo Night at the Arena", Venue: "Boxoffice Arena",
		StartsAt: now.Add(30 * 24 * time.Hour), SaleOpensAt: now.Add(-time.Minute),
		SaleMode: boxoffice.SaleDirect, TicketLimit: boxoffice.DefaultTicketLimit, Sections: demoLayout(),
	}
	return svc.CreateEvent(ctx, boxoffice.User{ID: "demo-admin", Role: boxoffice.RoleAdmin}, e)
}

func printWelcome(w io.Writer, base string, a *auth.Authenticator, demo *boxoffice.Event) {
	adminTok, _ := a.Issue("demo-admin", boxoffice.RoleAdmin, 7*24*time.Hour)
	custTok, _ := a.Issue("demo-customer", "", 7*24*time.Hour)
	fmt.Fprintf(w, "\nboxoffice is listening on %s\n", base)
	fmt.Fprintf(w, "  API description: %s/openapi.json\n", base)
	fmt.Fprintf(w, "  admin token    (demo-admin, 7 days):    %s\n", adminTok)
	fmt.Fprintf(w, "  customer token (demo-customer, 7 days): %s\n", custTok)
	if demo != nil {
		fmt.Fprintf(w, "  demo event %s: %q, %d seats, seat map at %s/events/%s/seats\n", demo.ID, demo.Name, demo.SeatCount(), base, demo.ID)
		fmt.Fprintf(w, "\nHold a seat:\n  curl -si -X POST %s/bookings/reserve -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-1' -d '{\"event_id\":\"%s\",\"seat_ids\":[\"Floor-A-1\"]}'\n",
			base, custTok, demo.ID)
	}
	fmt.Fprintln(w)
}
