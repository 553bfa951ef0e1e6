package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
)

// BenchmarkEventsGrow runs reserve, confirm and the seat map's rebuild
// reads for one event of 5,000 seats in a database of 1 event and of
// 2,000 (the others a tenth sold: bookings, their seats, tickets and
// payments), with the shows spread over 3 months (about what stays live
// when past months are archived) and over 24, in the same run, to show
// what the events around an event cost its hot statements and what the
// months of partitions do (issue 18). Run it with, for example:
//
//	go test ./postgres -run '^$' -bench EventsGrow -benchtime 1000x
//
// Setting up 2,000 events (10 million seats, a million of them sold)
// takes a minute or two each time; it is not part of the test suite.
func BenchmarkEventsGrow(b *testing.B) {
	for _, months := range []int{3, 24} {
		for _, n := range eventCounts {
			b.Run(fmt.Sprintf("months=%d/events=%d", months, n), func(b *testing.B) { eventsGrow(b, n, months) })
		}
	}
}

func eventsGrow(b *testing.B, n, months int) {
	s := newStore(b)
	hot := eventsAround(b, s, n, months)
	b.Run("Reserve", func(b *testing.B) { benchReserveOf(b, s, hot) })
	b.Run("Confirm", func(b *testing.B) { benchConfirmOf(b, s, hot) })
	b.Run("SeatMapRebuild", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := s.SoldSeats(ctx, hot.ID); err != nil {
				b.Fatal(err)
			}
			if _, err := s.EventListings(ctx, hot.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// eventsAround creates the partitions of the given months of shows (the
// legacy one besides: the lookups by id alone probe every one), n-1 events
// of 5,000 seats spread over them, a tenth of each sold by bulk SQL, then
// the event the benchmark runs on, and returns it.
func eventsAround(b *testing.B, s *postgres.Store, n, months int) *boxoffice.Event {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for i := range months {
		if err := s.EnsurePartition(ctx, boxoffice.ID(postgres.EventIDAt(showMonth(i)))); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]int64, 0, n-1)
	for i := range n - 1 {
		ids = append(ids, int64(createEventShowing(b, s, showMonth(i%months), 50, 100, 8).ID))
	}
	if len(ids) > 0 {
		// One booking per sold seat: the first ten seats of every row.
		for _, st := range []struct {
			q    string
			args []any
		}{{`
			INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
			SELECT 1000000000 + row_number() OVER (), event_id, 'bg-' || event_id || '-' || seat_id, 'confirmed', 1, 5000,
			       $2, $2, $2
			FROM seats WHERE event_id = ANY($1) AND split_part(seat_id, '-', 3)::int <= 10`, []any{ids, t0}}, {`
			INSERT INTO booking_seats (booking_id, position, event_id, seat_id)
			SELECT b.id, 0, b.event_id, split_part(b.user_id, '-', 3) || '-' || split_part(b.user_id, '-', 4) || '-' || split_part(b.user_id, '-', 5)
			FROM bookings b WHERE b.event_id = ANY($1)`, []any{ids}}, {`
			INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
			SELECT bs.booking_id + 1000000000, bs.event_id, bs.booking_id, bs.seat_id, 'bg', 'T' || bs.booking_id, 'valid', $2
			FROM booking_seats bs WHERE bs.event_id = ANY($1)`, []any{ids, t0}}, {`
			INSERT INTO payments (event_id, booking_id, auth_id, amount_cents, status, created_at)
			SELECT event_id, id, 'auth-' || id, 5000, 'captured', $2 FROM bookings WHERE event_id = ANY($1)`, []any{ids, t0}},
			{`VACUUM (ANALYZE)`, nil}, // no autovacuum of the bulk inserts during the benchmark
		} {
			if _, err := s.Pool().Exec(ctx, st.q, st.args...); err != nil {
				b.Fatalf("%s: %v", st.q, err)
			}
		}
	}
	b.Logf("%d events around the one measured, set up in %s", n-1, time.Since(start).Round(time.Second))
	return createEventShowing(b, s, showMonth(1), 50, 100, 8)
}

// showMonth is a show time in the i-th month from January 2031.
func showMonth(i int) time.Time { return time.Date(2031, time.Month(1+i), 15, 20, 0, 0, 0, time.UTC) }

// benchReserveOf books b.N bookings of two seats of e, each with its
// idempotency record, as a direct reserve does.
func benchReserveOf(b *testing.B, s *postgres.Store, e *boxoffice.Event) {
	ctx := context.Background()
	if b.N > 2500 {
		b.Fatalf("%d bookings of two seats do not fit 5,000 seats", b.N)
	}
	i := 0
	for b.Loop() {
		row, n := i/50+1, (i%50)*2+1
		bk := booking(e, fmt.Sprintf("fan-%d", i), 1, boxoffice.SeatID("A", boxoffice.RowLabel(row), n), boxoffice.SeatID("A", boxoffice.RowLabel(row), n+1))
		rec := &boxoffice.IdempotencyRecord{UserID: bk.UserID, Key: "k", RequestHash: "h", Outcome: boxoffice.OutcomeHeld,
			Body: []byte(`{}`), CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
		if err := s.CreateBooking(ctx, boxoffice.NewBooking{Booking: bk, TicketLimit: e.TicketLimit, Idempotency: rec}); err != nil {
			b.Fatal(err)
		}
		reserved[e.ID] = append(reserved[e.ID], bk)
		i++
	}
}

// reserved are the bookings benchReserveOf made, by event, for
// benchConfirmOf.
var reserved = map[boxoffice.ID][]*boxoffice.Booking{}

// benchConfirmOf confirms the bookings benchReserveOf made of e.
func benchConfirmOf(b *testing.B, s *postgres.Store, e *boxoffice.Event) {
	ctx := context.Background()
	todo := reserved[e.ID]
	i := 0
	for b.Loop() {
		if i == len(todo) {
			b.Fatalf("only %d bookings to confirm: run with -benchtime Nx", len(todo))
		}
		if _, err := s.ConfirmBooking(ctx, confirmation(todo[i])); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// eventCounts are the sizes of database BenchmarkEventsGrow compares.
var eventCounts = []int{1, 2000}
