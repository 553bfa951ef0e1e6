package postgres_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// TestBytesPerSoldSeat measures what one sold seat costs on disk: an event
// of 10,000 seats sold out in bookings of two, each booked with its
// idempotency record and confirmed (tickets, payment, outbox events), then
// VACUUM ANALYZE; every table and index of the schema, divided by the
// seats. docs/scaleout.md quotes it against the seed's ~200 bytes per seat
// record. The bound it asserts is loose: it catches a table or index that
// grows per seat by accident, not a few bytes.
func TestBytesPerSoldSeat(t *testing.T) {
	if testing.Short() {
		t.Skip("sells 10,000 seats")
	}
	s := newStore(t)
	ctx := context.Background()
	const rows, perRow, perBooking = 100, 100, 2
	e := createEvent(t, s, rows, perRow, 100) // every fan books once
	var all []*boxoffice.Booking
	var nbs []boxoffice.NewBooking
	flush := func() {
		errs, err := s.CreateBookings(ctx, nbs)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		nbs = nbs[:0]
	}
	for r := 1; r <= rows; r++ {
		for n := 1; n <= perRow; n += perBooking {
			seats := make([]string, 0, perBooking)
			for k := range perBooking {
				seats = append(seats, boxoffice.SeatID("A", boxoffice.RowLabel(r), n+k))
			}
			b := booking(e, fmt.Sprintf("fan-%d-%d", r, n), 1, seats...)
			rec := &boxoffice.IdempotencyRecord{UserID: b.UserID, Key: "reserve-" + b.ID.String(),
				RequestHash: strings.Repeat("h", 64), Outcome: boxoffice.OutcomeHeld,
				Body:      []byte(`{"booking_id":"` + b.ID.String() + `","held_until":"2030-06-01T12:10:00Z","payment_url":"/bookings/` + b.ID.String() + `/confirm"}`),
				CreatedAt: b.CreatedAt, ExpiresAt: b.CreatedAt.Add(24 * 3600e9)}
			nbs = append(nbs, boxoffice.NewBooking{Booking: b, TicketLimit: e.TicketLimit, Idempotency: rec})
			all = append(all, b)
			if len(nbs) == 500 {
				flush()
			}
		}
	}
	flush()
	for _, b := range all {
		if _, err := s.ConfirmBooking(ctx, confirmation(b)); err != nil {
			t.Fatal(err)
		}
	}
	pool := s.Pool()
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		t.Fatal(err)
	}
	r, err := pool.Query(ctx, `
		SELECT c.relname, pg_total_relation_size(c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for r.Next() {
		var name string
		var size int64
		if err := r.Scan(&name, &size); err != nil {
			t.Fatal(err)
		}
		sizes[name] = size
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	// The tables that grow with the event's seats and bookings; the rest
	// (events, sections, migrations, node leases...) are per event or
	// fixed.
	var names []string
	var total int64
	for name, size := range sizes {
		switch name {
		case "events", "sections", "schema_migrations", "node_leases", "event_draws":
			continue
		}
		if size > 8192*4 { // tables that stayed empty weigh a few pages
			names = append(names, name)
			total += size
		}
	}
	sort.Slice(names, func(i, j int) bool { return sizes[names[i]] > sizes[names[j]] })
	seats := int64(rows * perRow)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "  %-22s %6.0f bytes/seat\n", name, float64(sizes[name])/float64(seats))
	}
	t.Logf("one sold seat on disk: %.0f bytes (tables and their indexes, %d seats, bookings of %d)\n%s",
		float64(total)/float64(seats), seats, perBooking, b.String())
	if per := total / seats; per > 4000 {
		t.Errorf("a sold seat takes %d bytes on disk: a table or index grows per seat by accident?", per)
	}
}
