package postgres_test

// PostgreSQL-specific tests: what storetest cannot see from one process
// (several pools on one database, migrations racing, the constraint
// itself, the retry loop).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
)

func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens, the connection is refused.
	_, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if got := boxoffice.ErrorCode(err); got != boxoffice.EUNAVAILABLE {
		t.Fatalf("Open(unreachable) = %v (code %q), want %s", err, got, boxoffice.EUNAVAILABLE)
	}
}

// TestMigrateConcurrentOpen starts four "processes" on one empty schema at
// once: the advisory lock lets exactly one apply each migration.
func TestMigrateConcurrentOpen(t *testing.T) {
	u := freshSchema(t)
	const n = 4
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = postgres.Open(context.Background(), u)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}

	ctx := context.Background()
	pool := stores[0].Pool()
	var applied, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied != distinct || applied == 0 {
		t.Fatalf("schema_migrations has %d rows, %d versions; want each version once", applied, distinct)
	}
	// Migrating an up-to-date schema changes nothing.
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	var again int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != applied {
		t.Errorf("after a second Migrate: %d migrations recorded, want %d", again, applied)
	}
	// Every store works on the migrated schema.
	e := createEvent(t, stores[1], 1, 4, 4)
	if _, err := stores[3].Event(ctx, e.ID); err != nil {
		t.Errorf("Event from another store: %v", err)
	}
}

// TestOneValidTicketPerSeat writes tickets with raw SQL, past every check in
// Go: the database alone refuses a second valid ticket for a seat.
func TestOneValidTicketPerSeat(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	e := createEvent(t, s, 1, 4, 4)
	b1 := createBooking(t, s, e, "u1", 1, seat(1))
	b2 := createBooking(t, s, e, "u2", 2, seat(1))

	insert := func(id int64, booking *boxoffice.Booking, status string) error {
		_, err := s.Pool().Exec(ctx, `
			INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			id, int64(e.ID), int64(booking.ID), seat(1), booking.UserID, fmt.Sprintf("code-%d", id), status, t0)
		return err
	}
	if err := insert(1, b1, "valid"); err != nil {
		t.Fatalf("first valid ticket: %v", err)
	}
	err := insert(2, b2, "valid")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || !strings.HasPrefix(pe.ConstraintName, "tickets_one_valid_per_seat_") {
		t.Fatalf("second valid ticket for one seat: err = %v, want 23505 on tickets_one_valid_per_seat", err)
	}
	// A void ticket does not count: the seat can be resold.
	if err := insert(3, b2, "void"); err != nil {
		t.Errorf("void ticket beside a valid one: %v", err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE tickets SET status = 'void' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := insert(4, b2, "valid"); err != nil {
		t.Errorf("valid ticket once the first is void: %v", err)
	}
	sold, err := s.SoldSeats(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{seat(1)}, sold); diff != "" {
		t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
	}
}

// TestTicketLimitAcrossProcesses sends one user's requests through several
// pools at once, as several API processes would: the row lock on
// (event, user) lets exactly TicketLimit seats through.
func TestTicketLimitAcrossProcesses(t *testing.T) {
	u := freshSchema(t)
	stores := []*postgres.Store{openStore(t, u), openStore(t, u), openStore(t, u)}
	const limit, requests = 4, 24
	e := createEvent(t, stores[0], 1, requests, limit)

	var ok, limited atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range requests {
		wg.Go(func() {
			<-start
			b := booking(e, "greedy", int64(i+1), seat(i+1))
			err := stores[i%len(stores)].CreateBooking(context.Background(), boxoffice.NewBooking{Booking: b, TicketLimit: limit})
			switch boxoffice.ErrorCode(err) {
			case "":
				ok.Add(1)
			case boxoffice.ELIMIT:
				limited.Add(1)
			default:
				t.Errorf("CreateBooking: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != limit || limited.Load() != requests-limit {
		t.Errorf("%d bookings written, %d refused with ELIMIT; want %d and %d", ok.Load(), limited.Load(), limit, requests-limit)
	}
	var seats int
	if err := stores[0].Pool().QueryRow(context.Background(), `
		SELECT count(*) FROM booking_seats s JOIN bookings b ON b.id = s.booking_id
		WHERE b.event_id = $1 AND b.user_id = 'greedy'`, int64(e.ID)).Scan(&seats); err != nil {
		t.Fatal(err)
	}
	if seats != limit {
		t.Errorf("the user holds %d seats, want %d", seats, limit)
	}
}

// TestConfirmRaceAcrossProcesses confirms, at the same moment and through
// two pools, two bookings that both claim the same seats under the same
// fence: a lock layer that lost its state (a failover) and granted a seat
// twice. Each pair lists the shared seats in opposite orders, so a naive
// insert order would deadlock. The unique index lets exactly one win.
func TestConfirmRaceAcrossProcesses(t *testing.T) {
	u := freshSchema(t)
	s1, s2 := openStore(t, u), openStore(t, u)
	const pairs = 20
	e := createEvent(t, s1, 1, 2*pairs, 8)
	ctx := context.Background()

	for p := range pairs {
		x, y := seat(2*p+1), seat(2*p+2)
		b1 := createBooking(t, s1, e, fmt.Sprintf("a%d", p), 7, x, y)
		b2 := createBooking(t, s2, e, fmt.Sprintf("b%d", p), 7, y, x)
		c1, c2 := confirmation(b1), confirmation(b2)

		var err1, err2 error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() { <-start; _, err1 = s1.ConfirmBooking(ctx, c1) })
		wg.Go(func() { <-start; _, err2 = s2.ConfirmBooking(ctx, c2) })
		close(start)
		wg.Wait()

		winners := 0
		for _, err := range []error{err1, err2} {
			switch boxoffice.ErrorCode(err) {
			case "":
				winners++
			case boxoffice.ESEATTAKEN:
				if got := boxoffice.ErrorSeats(err); len(got) != 2 {
					t.Errorf("pair %d: ESEATTAKEN names %v, want both seats", p, got)
				}
			default:
				t.Errorf("pair %d: ConfirmBooking: %v", p, err)
			}
		}
		if winners != 1 {
			t.Errorf("pair %d: %d confirms succeeded (%v, %v), want exactly 1", p, winners, err1, err2)
		}
		// The loser wrote nothing: no payment, still pending.
		loser := b2
		if err1 != nil {
			loser = b1
		}
		got, err := s1.Booking(ctx, loser.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != boxoffice.BookingPending || len(got.Tickets) != 0 {
			t.Errorf("pair %d: the losing booking is %s with %d tickets, want pending with none", p, got.Status, len(got.Tickets))
		}
	}
	sold, err := s1.SoldSeats(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sold) != 2*pairs || len(slices.Compact(slices.Sorted(slices.Values(sold)))) != 2*pairs {
		t.Errorf("SoldSeats = %d seats (%d distinct), want each of %d once", len(sold), len(slices.Compact(slices.Sorted(slices.Values(sold)))), 2*pairs)
	}
	var payments int
	if err := s1.Pool().QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&payments); err != nil {
		t.Fatal(err)
	}
	if payments != pairs {
		t.Errorf("%d payments recorded, want %d (one per winner)", payments, pairs)
	}
}

// TestFenceAcrossProcesses: a booking whose seat a newer live hold claims
// is refused with EHOLDLOST, even when the newer booking was written by
// another process.
func TestFenceAcrossProcesses(t *testing.T) {
	u := freshSchema(t)
	s1, s2 := openStore(t, u), openStore(t, u)
	e := createEvent(t, s1, 1, 4, 8)
	ctx := context.Background()
	old := createBooking(t, s1, e, "old", 1, seat(1), seat(2))
	newer := createBooking(t, s2, e, "new", 2, seat(2))

	_, err := s1.ConfirmBooking(ctx, confirmation(old))
	if boxoffice.ErrorCode(err) != boxoffice.EHOLDLOST {
		t.Fatalf("confirm of the older hold = %v, want %s", err, boxoffice.EHOLDLOST)
	}
	if diff := cmp.Diff([]string{seat(2)}, boxoffice.ErrorSeats(err)); diff != "" {
		t.Errorf("EHOLDLOST seats mismatch (-want +got):\n%s", diff)
	}
	if _, err := s2.ConfirmBooking(ctx, confirmation(newer)); err != nil {
		t.Errorf("confirm of the newer hold: %v", err)
	}
}

// TestTimesMillisecondsUTC: timestamptz keeps microseconds, the port keeps
// milliseconds (as SQLite does); times come back truncated, in UTC.
func TestTimesMillisecondsUTC(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	e := createEvent(t, s, 1, 2, 2)
	paris := time.FixedZone("CEST", 2*60*60)
	b := booking(e, "u", 1, seat(1))
	b.HeldUntil = time.Date(2030, 6, 1, 14, 10, 0, 123_456_789, paris)
	if err := s.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 2}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Booking(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2030, 6, 1, 12, 10, 0, 123_000_000, time.UTC)
	if got.HeldUntil != want { // == on purpose: same instant, same location
		t.Errorf("HeldUntil = %v, want %v", got.HeldUntil, want)
	}
}

// TestCreateEventMaxSeats writes the largest layout the domain allows
// (through COPY) and checks every seat row is there.
func TestCreateEventMaxSeats(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 200,000 seats")
	}
	s := newStore(t)
	e := createEvent(t, s, 200, boxoffice.MaxSeatsPerEvent/200, 8)
	var n, last int
	if err := s.Pool().QueryRow(context.Background(),
		`SELECT count(*), max(position) FROM seats WHERE event_id = $1`, int64(e.ID)).Scan(&n, &last); err != nil {
		t.Fatal(err)
	}
	if n != boxoffice.MaxSeatsPerEvent || last != n-1 {
		t.Errorf("%d seats written, last position %d; want %d seats", n, last, boxoffice.MaxSeatsPerEvent)
	}
}

func TestTransactRetries(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	serialization := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}

	t.Run("GivesUpAfterMaxAttempts", func(t *testing.T) {
		calls := 0
		err := s.Transact(ctx, func(pgx.Tx) error { calls++; return serialization })
		if calls != postgres.MaxAttempts {
			t.Errorf("fn ran %d times, want %d", calls, postgres.MaxAttempts)
		}
		if boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE || !errors.Is(err, serialization) {
			t.Errorf("err = %v, want EUNAVAILABLE wrapping the 40001", err)
		}
	})
	t.Run("SucceedsOnRetry", func(t *testing.T) {
		calls := 0
		err := s.Transact(ctx, func(pgx.Tx) error {
			calls++
			if calls < 3 {
				return &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Errorf("err = %v after %d calls, want nil after 3", err, calls)
		}
	})
	t.Run("DomainErrorNotRetried", func(t *testing.T) {
		calls := 0
		want := boxoffice.Errorf(boxoffice.ELIMIT, "too many")
		err := s.Transact(ctx, func(pgx.Tx) error { calls++; return want })
		if calls != 1 || err != want {
			t.Errorf("err = %v after %d calls, want the domain error after 1", err, calls)
		}
	})
	t.Run("BackoffBounded", func(t *testing.T) {
		for retry := 1; retry < postgres.MaxAttempts; retry++ {
			for range 100 {
				if d := postgres.Backoff(retry); d < 0 || d > 100*time.Millisecond {
					t.Fatalf("backoff(%d) = %v, want within [0, 100ms]", retry, d)
				}
			}
		}
	})
}

// TestTransactDeadlockRetried makes two transactions lock two rows in
// opposite orders: the server aborts one with 40P01 and transact runs it
// again, so both succeed.
func TestTransactDeadlockRetried(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE counters (k int PRIMARY KEY, n int NOT NULL); INSERT INTO counters VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	locked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var once [2]sync.Once
	lockBoth := func(me int, first, second int) func(pgx.Tx) error {
		return func(tx pgx.Tx) error {
			attempts.Add(1)
			if _, err := tx.Exec(ctx, `UPDATE counters SET n = n + 1 WHERE k = $1`, first); err != nil {
				return err
			}
			once[me].Do(func() {
				close(locked[me])
				<-locked[1-me]
			})
			_, err := tx.Exec(ctx, `UPDATE counters SET n = n + 1 WHERE k = $1`, second)
			return err
		}
	}
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = s.Transact(ctx, lockBoth(0, 1, 2)) })
	wg.Go(func() { errs[1] = s.Transact(ctx, lockBoth(1, 2, 1)) })
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("transaction %d: %v", i, err)
		}
	}
	if got := attempts.Load(); got != 3 {
		t.Errorf("%d attempts, want 3 (one deadlock victim run again)", got)
	}
	var total int
	if err := s.Pool().QueryRow(ctx, `SELECT sum(n) FROM counters`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 4 {
		t.Errorf("counters sum to %d, want 4: each transaction committed once", total)
	}
}

func TestTranslate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"UniqueViolation", &pgconn.PgError{Code: "23505"}, boxoffice.ECONFLICT},
		{"ForeignKeyViolation", &pgconn.PgError{Code: "23503"}, boxoffice.ENOTFOUND},
		{"CheckViolation", &pgconn.PgError{Code: "23514"}, boxoffice.EINVALID},
		{"DataException", &pgconn.PgError{Code: "22P02"}, boxoffice.EINVALID},
		{"SerializationFailure", &pgconn.PgError{Code: "40001"}, boxoffice.EUNAVAILABLE},
		{"Deadlock", &pgconn.PgError{Code: "40P01"}, boxoffice.EUNAVAILABLE},
		{"ConnectionFailure", &pgconn.PgError{Code: "08006"}, boxoffice.EUNAVAILABLE},
		{"AdminShutdown", &pgconn.PgError{Code: "57P01"}, boxoffice.EUNAVAILABLE},
		{"TooManyConnections", &pgconn.PgError{Code: "53300"}, boxoffice.EUNAVAILABLE},
		{"SyntaxError", &pgconn.PgError{Code: "42601"}, boxoffice.EINTERNAL},
		{"NoRows", pgx.ErrNoRows, boxoffice.ENOTFOUND},
		{"Wrapped", fmt.Errorf("insert: %w", &pgconn.PgError{Code: "23505"}), boxoffice.ECONFLICT},
		{"DomainErrorKept", boxoffice.Errorf(boxoffice.ELIMIT, "x"), boxoffice.ELIMIT},
		{"Other", errors.New("boom"), boxoffice.EINTERNAL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boxoffice.ErrorCode(postgres.Translate(tt.err)); got != tt.want {
				t.Errorf("translate(%v) code = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	if err := postgres.Translate(context.Canceled); err != context.Canceled {
		t.Errorf("translate(context.Canceled) = %v, want it unchanged", err)
	}
}
