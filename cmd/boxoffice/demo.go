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

// ensureDemo creates the demo events the first time the store is empty: a
// direct sale, and a flash sale through the queue whose waiting room is open
// and whose sale opens two minutes later. Otherwise it returns the newest of
// each kind (queued nil when there is none).
func ensureDemo(ctx context.Context, svc *sale.Service) (direct, queued *boxoffice.Event, err error) {
	es, err := svc.Events(ctx, boxoffice.EventFilter{Limit: 20})
	if err != nil {
		return nil, nil, err
	}
	if len(es) > 0 {
		for _, e := range es {
			switch {
			case e.SaleMode == boxoffice.SaleDirect && direct == nil:
				direct = e
			case e.SaleMode == boxoffice.SaleQueued && queued == nil:
				queued = e
			}
		}
		if direct == nil {
			direct = es[0]
		}
		return direct, queued, nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	admin := boxoffice.User{ID: "demo-admin", Role: boxoffice.RoleAdmin}
	// The queued one first, so that the direct one is the newest event.
	queued, err = svc.CreateEvent(ctx, admin, &boxoffice.Event{
		Name: "Flash Sale at the Arena", Venue: "Boxoffice Arena",
		StartsAt: now.Add(31 * 24 * time.Hour), SaleOpensAt: now.Add(2 * time.Minute),
		SaleMode: boxoffice.SaleQueued, TicketLimit: 4, Sections: demoLayout(),
	})
	if err != nil {
		return nil, nil, err
	}
	direct, err = svc.CreateEvent(ctx, admin, &boxoffice.Event{
		Name: "Demo Night at the Arena", Venue: "Boxoffice Arena",
		StartsAt: now.Add(30 * 24 * time.Hour), SaleOpensAt: now.Add(-time.Minute),
		SaleMode: boxoffice.SaleDirect, TicketLimit: boxoffice.DefaultTicketLimit, Sections: demoLayout(),
		// Refundable until two days before, resale up to face value: the
		// demo shows the whole life of a ticket.
		Refundable: true, RefundCutoffHours: 48, ResaleCapPercent: 100,
	})
	return direct, queued, err
}

func printWelcome(w io.Writer, base string, a *auth.Authenticator, demo, queued *boxoffice.Event, tokens bool) {
	adminTok, custTok := "$ADMIN_TOKEN", "$TOKEN"
	fmt.Fprintf(w, "\nboxoffice is listening on %s\n", base)
	fmt.Fprintf(w, "  API description: %s/openapi.json\n", base)
	if tokens {
		adminTok, _ = a.Issue("demo-admin", boxoffice.RoleAdmin, 7*24*time.Hour)
		custTok, _ = a.Issue("demo-customer", "", 7*24*time.Hour)
		fmt.Fprintf(w, "  admin token    (demo-admin, 7 days):    %s\n", adminTok)
		fmt.Fprintf(w, "  customer token (demo-customer, 7 days): %s\n", custTok)
	} else {
		// A production server's output goes to logs: a token there would be
		// a credential for whoever reads them.
		fmt.Fprintf(w, "  no tokens printed (a shared store or a public address): make them with\n")
		fmt.Fprintf(w, "  boxoffice token --sub NAME [--role admin] (with the same BOXOFFICE_AUTH_SECRET)\n")
	}
	if demo != nil {
		fmt.Fprintf(w, "  demo event %s: %q, %d seats, seat map at %s/events/%s/seats\n", demo.ID, demo.Name, demo.SeatCount(), base, demo.ID)
		fmt.Fprintf(w, "\nHold a seat:\n  curl -si -X POST %s/bookings/reserve -H \"Authorization: Bearer %s\" -H 'Content-Type: application/json' -H 'Idempotency-Key: demo-1' -d '{\"event_id\":\"%s\",\"seat_ids\":[\"Floor-A-1\"]}'\n",
			base, custTok, demo.ID)
	}
	if queued != nil {
		fmt.Fprintf(w, "\nFlash sale (queued) %s: %q, sale opens %s; a reserve answers 202 with a queue position:\n  curl -s -X POST %s/bookings/reserve -H \"Authorization: Bearer %s\" -H 'Content-Type: application/json' -H 'Idempotency-Key: flash-1' -d '{\"event_id\":\"%s\",\"seat_ids\":[\"Floor-A-1\"]}'\n",
			queued.ID, queued.Name, queued.SaleOpensAt.UTC().Format(time.RFC3339), base, custTok, queued.ID)
	}
	if !tokens {
		fmt.Fprintf(w, "\nIn a browser: %s/app/ (sign in with a token)\n\n", base)
		return
	}
	// The token rides in the fragment, which browsers never send to a
	// server: the page reads it, keeps it and takes it out of the address.
	fmt.Fprintf(w, "\nIn a browser (each link signs in):\n")
	fmt.Fprintf(w, "  the box office, as the customer: %s/app/#token=%s\n", base, custTok)
	fmt.Fprintf(w, "  the organiser's page, as admin:  %s/app/organiser#token=%s\n", base, adminTok)
	fmt.Fprintln(w)
}
