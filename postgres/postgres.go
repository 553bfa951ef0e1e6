// Package postgres is the production boxoffice.Store: PostgreSQL through
// jackc/pgx v5, with the SQL in plain sight and embedded, numbered
// migrations (migrations/*.sql) applied by Open.
//
// The guarantees do not depend on the lock layer in front of it:
//   - at most one valid ticket per (event, seat): a partial unique index,
//     the final arbiter of "never sell a seat twice";
//   - the per-user ticket limit: counted under a row lock on
//     (event, user), so parallel requests from one user, in any number of
//     processes, are counted one after the other;
//   - the fencing check at confirm: a booking whose seat is claimed by a
//     live pending booking with a larger fence cannot be confirmed;
//   - one live buyer per resale listing, one live waitlist entry per user
//     and event, one active listing per ticket: the listing row is locked
//     while a purchase is checked, and partial unique indexes back the
//     rest up;
//   - a ticket is resold, checked in, listed or cancelled under its row
//     lock, always taken in the order booking, ticket, listing (see
//     resale.go), so these changes wait on one another, never interleave
//     and do not deadlock.
//
// Every exported method owns its transaction (see transact); unexported
// helpers take the pgx.Tx.
package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/combine"
)

var _ boxoffice.Store = (*Store)(nil)

// Store is a boxoffice.Store on a pgx connection pool. Create it with Open.
type Store struct {
	pool *pgxpool.Pool
	// bookings group-commits concurrent CreateBooking calls; idempotency
	// reads concurrent Idempotency look-ups in one statement.
	bookings    *combine.Combiner[boxoffice.NewBooking, error]
	idempotency *combine.Combiner[idemKey, *boxoffice.IdempotencyRecord]
	// bookingReads reads concurrent Booking calls in one statement.
	bookingReads *combine.Combiner[boxoffice.ID, *boxoffice.Booking]
	// confirms group-commits concurrent ConfirmBooking calls; captures
	// marks their captures in one round trip.
	confirms *combine.Combiner[boxoffice.ConfirmBooking, confirmed]
	captures *combine.Combiner[bookingRef, error]
	// parts are the month partitions this process knows exist.
	parts partitions
	// Now is the clock for the few writes whose time the port does not pass
	// in (MarkCaptured). Open sets it to time.Now.
	Now func() time.Time
}

// batchRunners is how many batches each of the store's combiners runs at
// once: one. The next batch gathers while one runs, and goes as one
// statement or one transaction however large it is, so on a small server a
// second runner only halves the batches and doubles their round trips and
// fixed costs (measured, docs/benchmarks.md: with one runner instead of
// two, 27 bookings a group commit against 12.7, 6.4 idempotency records a
// look-up against 3.4, and a confirm's p50 25 ms against 31, with
// PostgreSQL's CPU lower in every run).
const batchRunners = 1

// DefaultPoolConns is the connection pool's size when the URL does not set
// pool_max_conns: enough for the batch writers and a confirm each for the
// rest, and six processes within PostgreSQL's default max_connections (100).
// Each process opens up to this many.
const DefaultPoolConns = 16

// Open connects to the database at url (a postgres:// URL or a key=value
// DSN; runtime parameters such as search_path are passed through), applies
// any pending migrations and returns the Store. It fails with EUNAVAILABLE
// when the server cannot be reached.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &boxoffice.Error{Code: boxoffice.EINVALID, Message: "invalid PostgreSQL URL", Err: err}
	}
	// Generic plans and no JIT, unless the URL says otherwise. The event
	// tables are partitioned by month (0010): a custom plan of a statement
	// that reads through unnest'd arrays plans every partition each time
	// (2 ms with 25 months, measured, against 0.09 ms generic), and one
	// with the event as a parameter prunes at execution start anyway. The hot
	// statements are written to read only their rows under a generic plan
	// (TestHotPathsReadOnlyTheirRows).
	//
	// And no JIT: a generic plan's estimate over every partition passes
	// jit_above_cost, and compiling it cost 76 ms a reserve with 25 months
	// (measured with auto_explain) for statements that run in 0.3 ms.
	for param, value := range map[string]string{"plan_cache_mode": "force_generic_plan", "jit": "off"} {
		if _, set := cfg.ConnConfig.RuntimeParams[param]; !set {
			cfg.ConnConfig.RuntimeParams[param] = value
		}
	}
	// pgxpool's own default is one connection per CPU of this host, at
	// least 4; the booking and idempotency writers alone can hold 4, and a
	// confirm (a transaction of its own) then waits behind the drain's
	// batches: in the 200k drill on 2 cores, a confirm's round trip took
	// p50 743 ms and 660 buyers paid past their hold with 4 connections,
	// 185 ms and 5 with 16, 133 ms and 3 with 32 (docs/benchmarks.md). A
	// URL with pool_max_conns keeps its own.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultPoolConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, boxoffice.Unavailable("database", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, boxoffice.Unavailable("database", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, Now: time.Now}
	// A batch of bookings costs the same handful of statements whatever
	// its size: few writers make big batches (8 writers gave half the
	// bookings per second of 2, and 2 fewer than 1). Under a flash sale
	// every refused hold reads its key's record: a read costs little next
	// to the round trip and the statement that carry it.
	s.bookings = combine.New(s.CreateBookings, batchRunners, 256)
	s.idempotency = combine.New(s.idempotencies, batchRunners, 256)
	s.bookingReads = combine.New(s.bookingsByID, batchRunners, 256)
	s.confirms = combine.New(s.confirmBookings, batchRunners, maxConfirmBatch)
	s.captures = combine.New(s.markCaptured, batchRunners, 256)
	return s, nil
}

// Pool returns the connection pool, for tools that need the database
// itself (the migrate command, tests).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping reports whether the database is reachable (EUNAVAILABLE if not).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return boxoffice.Unavailable("database", err)
	}
	return nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// querier is what pgx.Tx and *pgxpool.Pool have in common: helpers that
// only read take one, so they run inside a transaction or without one.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ts is how every time is written: UTC at millisecond precision, the
// precision both stores keep (SQLite stores unix milliseconds), so a time
// reads back as it was written whichever store holds it.
func ts(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
