package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
)

// Benchmarks against the real server. Every commit waits for a WAL flush,
// so the figures are bounded by the disk's fsync rate (DESIGN.md §7,
// ~1,550/s here) times what group commit gathers; concurrency is what
// raises them. Run with, for example:
//
//	go test -run '^$' -bench . -benchtime 3000x ./postgres

// benchParallelism × GOMAXPROCS goroutines share one pool of
// benchPoolConns connections.
const (
	benchParallelism = 8
	benchPoolConns   = 16
	seatsPerBooking  = 2
)

// benchStore opens a store on a fresh schema with a pool big enough for the
// benchmark's goroutines.
func benchStore(b *testing.B) *postgres.Store {
	b.Helper()
	u := freshSchema(b)
	return openStore(b, u+fmt.Sprintf("&pool_max_conns=%d", benchPoolConns))
}

// seatRun is seatsPerBooking adjacent seats of one event.
type seatRun struct {
	event *boxoffice.Event
	seats []string
}

// seatRuns creates events with enough seats for n bookings and returns one
// run of seats for each.
func seatRuns(b *testing.B, s *postgres.Store, n int) []seatRun {
	b.Helper()
	const perRow = 1000
	runs := make([]seatRun, 0, n)
	for len(runs) < n {
		left := (n - len(runs)) * seatsPerBooking
		rows := min(boxoffice.MaxSeatsPerEvent/perRow, (left+perRow-1)/perRow)
		e := createEvent(b, s, rows, perRow, boxoffice.MaxTicketLimit)
		for _, st := range e.Seats() {
			if len(runs) == n {
				break
			}
			if len(runs) == 0 || runs[len(runs)-1].event != e || len(runs[len(runs)-1].seats) == seatsPerBooking {
				runs = append(runs, seatRun{event: e})
			}
			r := &runs[len(runs)-1]
			r.seats = append(r.seats, st.ID)
		}
	}
	if last := runs[len(runs)-1]; len(last.seats) < seatsPerBooking {
		runs = runs[:len(runs)-1] // an odd seat left over at the end of an event
	}
	return runs
}

// BenchmarkCreateBooking writes pending bookings of two seats, each for its
// own user (the limit row is locked, but never contended).
func BenchmarkCreateBooking(b *testing.B) {
	s := benchStore(b)
	runs := seatRuns(b, s, b.N+1)
	var next atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			r := runs[i]
			bk := booking(r.event, fmt.Sprintf("user-%d", i), i+1, r.seats...)
			if err := s.CreateBooking(context.Background(), boxoffice.NewBooking{Booking: bk, TicketLimit: r.event.TicketLimit}); err != nil {
				b.Errorf("CreateBooking: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bookings/s")
}

// BenchmarkConfirmBooking confirms distinct pending bookings of two seats
// (written before the timer starts): lock, fencing check, two tickets, a
// payment, the booking update, in one transaction.
func BenchmarkConfirmBooking(b *testing.B) {
	s := benchStore(b)
	runs := seatRuns(b, s, b.N+1)
	confirms := make([]boxoffice.ConfirmBooking, b.N)
	ctx := context.Background()
	for i := range b.N {
		r := runs[i]
		bk := createBooking(b, s, r.event, fmt.Sprintf("user-%d", i), int64(i+1), r.seats...)
		confirms[i] = confirmation(bk)
	}
	var next atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c := confirms[next.Add(1)-1]
			if _, err := s.ConfirmBooking(ctx, c); err != nil {
				b.Errorf("ConfirmBooking: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "confirms/s")
}
