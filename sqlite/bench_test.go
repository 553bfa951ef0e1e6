package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sqlite"
	"github.com/boxoffice/boxoffice/storetest"
)

// Run with:
//
//	go test -run '^$' -bench . -benchtime 3s ./sqlite
//
// Each benchmark reports ops/s besides ns/op; with RunParallel ns/op is
// wall time divided by operations, so the two say the same thing.

var benchNow = time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)

// benchStore opens a store with one event of 200,000 seats.
func benchStore(b *testing.B) (*sqlite.Store, *boxoffice.Event, []boxoffice.Seat) {
	b.Helper()
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	e := &boxoffice.Event{
		ID: 1, Name: "Bench", StartsAt: benchNow.Add(24 * time.Hour), SaleOpensAt: benchNow.Add(-time.Hour),
		SaleMode: boxoffice.SaleQueued, TicketLimit: boxoffice.DefaultTicketLimit, CreatedAt: benchNow,
	}
	for i := range 4 {
		e.Sections = append(e.Sections, boxoffice.Section{
			Name: fmt.Sprint("S", i), PriceTier: "std", PriceCents: 5000, Rows: 200, SeatsPerRow: 250,
		})
	}
	if err := s.CreateEvent(b.Context(), e); err != nil {
		b.Fatal(err)
	}
	return s, e, e.Seats()
}

// booking returns the pending booking number i: two adjacent seats, its own
// user, an idempotency record, as the reserve path writes it.
func booking(e *boxoffice.Event, seats []boxoffice.Seat, i int64) boxoffice.NewBooking {
	j := int(i*2) % (len(seats) - 1)
	user := fmt.Sprint("user-", i)
	return boxoffice.NewBooking{
		Booking: &boxoffice.Booking{
			ID: boxoffice.ID(1_000_000 + i), EventID: e.ID, UserID: user,
			SeatIDs: []string{seats[j].ID, seats[j+1].ID}, Fence: i + 1, AmountCents: 10000,
			HeldUntil: benchNow.Add(10 * time.Minute), CreatedAt: benchNow, UpdatedAt: benchNow,
		},
		TicketLimit: boxoffice.DefaultTicketLimit,
		Idempotency: &boxoffice.IdempotencyRecord{
			UserID: user, Key: "reserve", RequestHash: "h", Outcome: boxoffice.OutcomeHeld, Body: []byte(`{"booking_id":"1"}`),
			CreatedAt: benchNow, ExpiresAt: benchNow.Add(24 * time.Hour),
		},
	}
}

func BenchmarkCreateBooking(b *testing.B) {
	s, e, seats := benchStore(b)
	ctx := b.Context()
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.CreateBooking(ctx, booking(e, seats, next.Add(1))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkConfirmBooking(b *testing.B) {
	s, e, seats := benchStore(b)
	ctx := b.Context()
	// One pending booking per operation, on seats of its own: the
	// benchmark measures confirms, never a seat-taken refusal.
	if b.N > len(seats)/2 {
		b.Fatalf("b.N = %d needs more than %d seats; lower -benchtime", b.N, len(seats))
	}
	for i := range int64(b.N) {
		if err := s.CreateBooking(ctx, booking(e, seats, i)); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			nb := booking(e, seats, i).Booking
			c := boxoffice.ConfirmBooking{
				BookingID: nb.ID, Fence: nb.Fence, Now: benchNow.Add(time.Minute), Code: fmt.Sprint("CONF-", i),
				Payment: boxoffice.Payment{BookingID: nb.ID, AuthID: fmt.Sprint("auth-", i), AmountCents: nb.AmountCents},
			}
			for k, seat := range nb.SeatIDs {
				c.Tickets = append(c.Tickets, boxoffice.Ticket{ID: boxoffice.ID(10_000_000 + 2*i + int64(k)), SeatID: seat, Code: fmt.Sprint("T-", i, "-", k)})
			}
			if _, err := s.ConfirmBooking(ctx, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// freshAdmissions is n admissions of fresh users to event ev, ids numbered
// from next. The users' ids come in no order, as real subjects do, so that
// each lands in its own place of the indexes keyed by user.
func freshAdmissions(ev boxoffice.ID, seats []boxoffice.Seat, next *atomic.Int64, n int, preQueue bool) []boxoffice.Admission {
	as := make([]boxoffice.Admission, n)
	for i := range as {
		k := next.Add(1)
		user := uint32(k * 2654435761) // Knuth's multiplicative hash: one user per k
		as[i] = boxoffice.Admission{MaxLive: 1, PreQueue: preQueue, Request: &boxoffice.QueuedRequest{
			ID: boxoffice.ID(1_000_000 + k), EventID: ev, UserID: fmt.Sprint("user-", user), IdempotencyKey: "k",
			RequestHash: "h", SeatIDs: []string{seats[int(k)%len(seats)].ID}, EnqueuedAt: benchNow,
		}}
	}
	return as
}

// BenchmarkAdmitMany admits batches of 64 fresh users' requests to one
// opened queue, as the embedded front door's admitters do: the
// statements of one batch on the store's writer, without HTTP.
func BenchmarkAdmitMany(b *testing.B) {
	s, e, seats := benchStore(b)
	q := s.Queue()
	const batch = 64
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		out, err := q.AdmitMany(b.Context(), freshAdmissions(e.ID, seats, &next, batch, false))
		if err != nil {
			b.Fatal(err)
		}
		if out[0].Err != nil {
			b.Fatal(out[0].Err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}

// BenchmarkOpenDraw opens a waiting room of 30,000 requests while the
// burst at the opening keeps admitting (batches of 16 fresh users to the
// opened event, one after another): ms/open is the mean time of Open,
// burst-wait-ms the longest an admission batch of the burst waited,
// which the draw's longest hold of the writer sets.
func BenchmarkOpenDraw(b *testing.B) {
	s, e, seats := benchStore(b)
	q := s.Queue()
	const waiting, batch = 30_000, 256
	var next atomic.Int64
	var opening, longest time.Duration
	for range b.N {
		ev := *e
		ev.ID = boxoffice.ID(next.Add(1) + 1_000)
		if err := s.CreateEvent(b.Context(), &ev); err != nil {
			b.Fatal(err)
		}
		for n := 0; n < waiting; n += batch {
			if _, err := q.AdmitMany(b.Context(), freshAdmissions(ev.ID, seats, &next, batch, true)); err != nil {
				b.Fatal(err)
			}
		}
		done := make(chan struct{})
		burst := make(chan time.Duration)
		go func() {
			var worst time.Duration
			defer func() { burst <- worst }()
			for {
				select {
				case <-done:
					return
				default:
				}
				t := time.Now()
				if _, err := q.AdmitMany(b.Context(), freshAdmissions(ev.ID, seats, &next, 16, false)); err != nil {
					b.Error(err)
					return
				}
				worst = max(worst, time.Since(t))
			}
		}()
		start := time.Now()
		opened, err := q.Open(b.Context(), ev.ID, func(ids []boxoffice.ID) []boxoffice.ID { return ids })
		opening += time.Since(start)
		close(done)
		longest = max(longest, <-burst)
		if err != nil || len(opened) < waiting {
			b.Fatalf("Open: %d, %v", len(opened), err)
		}
	}
	b.ReportMetric(float64(opening.Milliseconds())/float64(b.N), "ms/open")
	b.ReportMetric(float64(longest.Microseconds())/1000, "burst-wait-ms")
}

// BenchmarkCreateBookings writes batches of 64 bookings as the drain does
// (CreateBookings, one transaction a batch); ns/op is per booking.
func BenchmarkCreateBookings(b *testing.B) {
	s, e, seats := benchStore(b)
	ctx := b.Context()
	const batch = 64
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		nbs := make([]boxoffice.NewBooking, min(batch, b.N-i))
		for j := range nbs {
			nbs[j] = booking(e, seats, int64(i+j+1))
		}
		storetest.CreateAll(ctx, b, s, nbs)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bookings/s")
}
