package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/proccpu"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/storetest"
)

// Benchmarks against the real server. Every commit waits for a WAL flush,
// so the figures are bounded by the disk's fsync rate (docs/benchmarks.md,
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

// BenchmarkCreateBookings is the queue drain's write: batches of
// drainBatch one-seat bookings, each with its idempotency record, written
// by one caller with CreateBookings (one transaction per batch). Compare
// its bookings/s with BenchmarkBatchedInsert's rows/s, the server's own
// ceiling for multi-row inserts, in the same run:
//
//	go test -run '^$' -bench 'CreateBookings|BatchedInsert' -benchtime 40000x ./postgres
func BenchmarkCreateBookings(b *testing.B) {
	s := benchStore(b)
	benchBookings(b, s, drainBatch, 0, func(ctx context.Context, nbs []boxoffice.NewBooking) {
		storetest.CreateAll(ctx, b, s, nbs)
	})
}

// BenchmarkWinnerRows writes what BenchmarkCreateBookings writes for its
// winners (the bookings, their seats, idempotency records and outbox
// rows: CreateBookings' second round trip) without its reads and checks,
// one transaction a batch: the floor of a winner's cost in this schema,
// between CreateBookings and the one-row BatchedInsert.
//
//	go test ./postgres -run '^$' -bench 'CreateBookings|WinnerRows|BatchedInsert' -benchtime 40000x
func BenchmarkWinnerRows(b *testing.B) {
	s := benchStore(b)
	benchBookings(b, s, drainBatch, 0, func(ctx context.Context, nbs []boxoffice.NewBooking) {
		batch, err := postgres.WinnerWrites(nbs)
		if err != nil {
			b.Fatal(err)
		}
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBatchFixedCost is BenchmarkCreateBookings in batches of 1
// to 128 (a direct reserve's group commit gathers about 25 under load) on
// a pool of one connection, reporting that connection's backend's CPU a
// booking when the server runs on this machine: a batch's fixed cost (a
// transaction, two round trips, a dozen statements, the commit's flush)
// against a booking's rows.
//
//	go test ./postgres -run '^$' -bench BatchFixedCost -benchtime 6400x
func BenchmarkBatchFixedCost(b *testing.B) {
	for _, size := range []int{1, 8, 32, 128} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			s := openStore(b, freshSchema(b)+"&pool_max_conns=1")
			var pid int
			if err := s.Pool().QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				b.Fatal(err)
			}
			benchBookings(b, s, size, pid, func(ctx context.Context, nbs []boxoffice.NewBooking) {
				storetest.CreateAll(ctx, b, s, nbs)
			})
		})
	}
}

// benchBookings writes b.N one-seat bookings, each with its idempotency
// record, size at a time with write. With pid (a backend of s's pool, the
// only one), it also reports that process's CPU a booking, if /proc has
// it.
func benchBookings(b *testing.B, s *postgres.Store, size, pid int, write func(context.Context, []boxoffice.NewBooking)) {
	e := createEvent(b, s, max(1, (b.N+999)/1000), 1000, boxoffice.MaxTicketLimit)
	seats := e.Seats()
	ctx := context.Background()
	before, cpuOK := proccpu.Of(pid)
	b.ResetTimer()
	for i := 0; i < b.N; i += size {
		nbs := make([]boxoffice.NewBooking, 0, size)
		for j := i; j < min(b.N, i+size); j++ {
			user := fmt.Sprintf("user-%d", j)
			rec := &boxoffice.IdempotencyRecord{UserID: user, Key: "k", RequestHash: "h", Outcome: boxoffice.OutcomeHeld,
				Body:      []byte(`{"booking_id":"123456789","held_until":"2030-06-01T12:10:00Z","payment_url":"/bookings/123456789/confirm"}`),
				CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
			nbs = append(nbs, boxoffice.NewBooking{Booking: booking(e, user, int64(j+1), seats[j].ID),
				TicketLimit: e.TicketLimit, Idempotency: rec})
		}
		write(ctx, nbs)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bookings/s")
	if after, ok := proccpu.Of(pid); cpuOK && ok {
		b.ReportMetric(float64((after-before).Microseconds())/float64(b.N), "pg-µs/booking")
	}
}

// drainBatch is a batch of the request log (kafka.RequestLogConfig.MaxBatch).
const drainBatch = 500

// BenchmarkBatchedInsert is the ceiling BenchmarkCreateBookings is measured
// against: rows of a bookings-shaped table (same columns and primary key,
// no other index) inserted drainBatch at a time by a multi-row INSERT, one
// transaction each.
func BenchmarkBatchedInsert(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE insert_ceiling (LIKE bookings INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE insert_ceiling ADD PRIMARY KEY (id)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += drainBatch {
		n := min(b.N, i+drainBatch) - i
		ids := make([]int64, n)
		for j := range ids {
			ids[j] = int64(i + j + 1)
		}
		if _, err := s.Pool().Exec(ctx, `
			INSERT INTO insert_ceiling (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
			SELECT x, 1, 'user-' || x, 'pending', x, 5000, $2::timestamptz, $2, $2 FROM unnest($1::bigint[]) x`, ids, t0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
