package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
)

// DefaultHoldTimeout bounds each call of Holds and Leases, retries and lock
// waits included, when their Timeout is zero: the lock layer fails closed
// (EUNAVAILABLE) rather than keep a request waiting on a stalled database.
const DefaultHoldTimeout = 5 * time.Second

var (
	_ boxoffice.Holds  = (*Holds)(nil)
	_ boxoffice.Leases = (*Leases)(nil)
)

// Holds is boxoffice.Holds in PostgreSQL with pessimistic row locks, for a
// deployment without Redis and as the "SELECT … FOR UPDATE" side of the
// lock-layer benchmark. It is safe for concurrent use, also by several
// processes on one database: expiry is judged by the database's clock.
//
// # Layout
//
// seat_holds (migration 0006) has one row per (event, seat) ever asked for,
// with its owner, fence and expiry. A released or expired row stays, free,
// and keeps its last fence. Fences come from the sequence
// seat_hold_fences, drawn while the grant holds its seats' row locks (see
// the migration for why that makes a later hold on a seat larger).
//
// # Round trips
//
// Acquire and AcquireMany are one statement each, a call of the PL/pgSQL
// function seat_holds_acquire in its implicit transaction: one round trip
// whatever the number of requests and seats, granted or refused (pgx
// prepares each statement once per connection, one more round trip the
// first time). The
// function inserts the rows missing, locks every seat of the batch with
// SELECT … FOR UPDATE in (event_id, seat_id) order, then decides the
// requests in order against the locked rows and writes the grants; the
// commit releases the locks. Release is one pipelined round trip (lock in
// order, then update), Verify and Held one query each.
//
// # Locks
//
// Every writer locks seat rows in (event_id, seat_id) order, so they
// cannot deadlock one another; should the server report a deadlock or a
// serialization failure anyway (a caller raising the isolation level), the
// call is retried a few times with jittered backoff, as transact does.
//
// # Failures
//
// A call that cannot reach the database, or does not finish within
// Timeout, is EUNAVAILABLE. If the commit's answer is lost, a grant may or
// may not have been made; its seats are then the owner's and expire with
// its TTL, as the port allows.
type Holds struct {
	pool *pgxpool.Pool

	// Timeout bounds each call, retries and lock waits included; zero means
	// DefaultHoldTimeout.
	Timeout time.Duration
}

// NewHolds returns Holds on pool, whose database must have the migrations
// applied (Open or Migrate): for a process that has a pool but no Store,
// such as a benchmark.
func NewHolds(pool *pgxpool.Pool) *Holds { return &Holds{pool: pool} }

// Holds returns seat holds on the store's database and connection pool, so
// that a PostgreSQL-only deployment needs no lock store of its own.
func (s *Store) Holds() *Holds { return NewHolds(s.pool) }

// holdAcquireSQL decides a batch of requests in one statement; see the
// migration for the function and its arguments.
const holdAcquireSQL = `SELECT granted_fence, granted_until, taken_seats
	FROM seat_holds_acquire($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[],
	                        $5::integer[], $6::integer[], $7::bigint[], $8::text[])`

// Acquire holds every seat of req for req.TTL, or none of them (see
// boxoffice.Holds); repeated seat ids count once. It returns EINVALID for a
// request without seats or with a TTL that is not positive, ESEATTAKEN
// listing, in request order, the seats held by others than req.Owner and
// req.Supersede, and EUNAVAILABLE when the database fails.
func (h *Holds) Acquire(ctx context.Context, req boxoffice.HoldRequest) (boxoffice.Hold, error) {
	holds, errs := h.acquire(ctx, []boxoffice.HoldRequest{req})
	return holds[0], errs[0]
}

// AcquireMany decides reqs as if Acquire were called for each in turn, in
// one statement and one transaction: every seat of the batch is locked
// first, in order, then the requests are decided in slice order. If that
// statement fails, every valid request gets its error (EUNAVAILABLE when
// the database fails or the Timeout passes) and none holds anything,
// unless the commit's answer was lost (see Failures in Holds).
func (h *Holds) AcquireMany(ctx context.Context, reqs []boxoffice.HoldRequest) ([]boxoffice.Hold, []error) {
	return h.acquire(ctx, reqs)
}

func (h *Holds) acquire(ctx context.Context, reqs []boxoffice.HoldRequest) ([]boxoffice.Hold, []error) {
	holds := make([]boxoffice.Hold, len(reqs))
	errs := make([]error, len(reqs))

	// The function's arguments: one entry per valid request (in sent), and
	// their distinct seats one after the other.
	var (
		sent                          []int
		events, owners, supers, ttlMs []int64
		first, count                  []int32
		seatEvents                    []int64
		seatIDs                       []string
	)
	for i, req := range reqs {
		if errs[i] = req.Check(); errs[i] != nil {
			continue
		}
		seats := distinctSeats(req.SeatIDs)
		sent = append(sent, i)
		events = append(events, int64(req.EventID))
		owners = append(owners, int64(req.Owner))
		supers = append(supers, int64(req.Supersede))
		ttlMs = append(ttlMs, int64((req.TTL+time.Millisecond-1)/time.Millisecond))
		first = append(first, int32(len(seatIDs)+1)) // SQL arrays are 1-based
		count = append(count, int32(len(seats)))
		for _, s := range seats {
			seatEvents = append(seatEvents, int64(req.EventID))
			seatIDs = append(seatIDs, s)
		}
	}
	if len(sent) == 0 {
		return holds, errs
	}

	type decision struct {
		fence pgtype.Int8 // NULL: refused
		until pgtype.Timestamptz
		taken []string
	}
	var out []decision
	err := h.run(ctx, func(ctx context.Context) error {
		out = out[:0]
		rows, err := h.pool.Query(ctx, holdAcquireSQL, events, owners, supers, ttlMs, first, count, seatEvents, seatIDs)
		var d decision
		_, err = forEach(rows, err, []any{&d.fence, &d.until, &d.taken}, func() {
			out = append(out, decision{d.fence, d.until, slices.Clone(d.taken)})
		})
		if err == nil && len(out) != len(sent) {
			err = errors.New("seat_holds_acquire: one row per request expected")
		}
		return err
	})
	if noPartition(err) {
		// An event outside every partition: unknown, or archived. The
		// use cases hold seats only of events they found.
		err = boxoffice.Errorf(boxoffice.ENOTFOUND, "no such event: seats of an unknown or archived event cannot be held")
	}
	for k, i := range sent {
		req := reqs[i]
		switch {
		case err != nil:
			errs[i] = err
		case !out[k].fence.Valid || !out[k].until.Valid:
			errs[i] = seatsInTheWay(req.SeatIDs, out[k].taken)
		default:
			holds[i] = boxoffice.Hold{
				EventID:   req.EventID,
				SeatIDs:   slices.Clone(req.SeatIDs),
				Owner:     req.Owner,
				Fence:     out[k].fence.Int64,
				ExpiresAt: out[k].until.Time,
			}
		}
	}
	return holds, errs
}

// distinctSeats returns seatIDs without repeats, in first-seen order.
func distinctSeats(seatIDs []string) []string {
	seen := make(map[string]bool, len(seatIDs))
	out := make([]string, 0, len(seatIDs))
	for _, s := range seatIDs {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// seatsInTheWay is the ESEATTAKEN error for the seats in taken, listed in
// the order of seatIDs, once each.
func seatsInTheWay(seatIDs, taken []string) error {
	in := make(map[string]bool, len(taken))
	for _, s := range taken {
		in[s] = true
	}
	seats := make([]string, 0, len(taken))
	for _, s := range seatIDs {
		if in[s] {
			seats = append(seats, s)
			delete(in, s)
		}
	}
	return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "some seats are held by someone else", Seats: seats}
}

// holdLockSQL locks the seats in the order every writer uses;
// holdReleaseSQL, the next statement of the same implicit transaction, so
// with a snapshot taken after the locks, frees those the owner still holds.
const (
	holdLockSQL = `
	SELECT 1 FROM seat_holds
	WHERE event_id = $1 AND seat_id = ANY ($2::text[])
	ORDER BY seat_id
	FOR UPDATE`
	holdReleaseSQL = `
	UPDATE seat_holds SET owner = NULL, expires_at = NULL
	WHERE event_id = $1 AND seat_id = ANY ($2::text[])
	  AND owner = $3 AND expires_at > clock_timestamp()`
)

// Release frees the seats of seatIDs that owner holds right now and leaves
// every other seat alone (check-and-delete; the row stays, free, with its
// fence). It returns how many it freed; a hold that already expired is not
// counted. One round trip: the two statements are pipelined.
func (h *Holds) Release(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID) (int, error) {
	if len(seatIDs) == 0 {
		return 0, nil
	}
	var freed int
	err := h.run(ctx, func(ctx context.Context) error {
		b := &pgx.Batch{}
		b.Queue(holdLockSQL, int64(eventID), seatIDs)
		b.Queue(holdReleaseSQL, int64(eventID), seatIDs, int64(owner)).Exec(func(tag pgconn.CommandTag) error {
			freed = int(tag.RowsAffected())
			return nil
		})
		return h.pool.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, err
	}
	return freed, nil
}

// holdVerifySQL returns the seats of $2 that owner $3 holds under fence $4
// right now.
const holdVerifySQL = `
	SELECT seat_id FROM seat_holds
	WHERE event_id = $1 AND seat_id = ANY ($2::text[])
	  AND owner = $3 AND fence = $4 AND expires_at > now()`

// Verify returns nil if owner holds every seat of seatIDs under fence
// right now, and otherwise an EHOLDLOST *Error listing, in input order, the
// seats it does not hold. An empty seatIDs is EINVALID: there is nothing to
// prove.
func (h *Holds) Verify(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID, fence int64) error {
	if len(seatIDs) == 0 {
		return boxoffice.Errorf(boxoffice.EINVALID, "nothing to verify: no seats")
	}
	held := make(map[string]bool, len(seatIDs))
	err := h.run(ctx, func(ctx context.Context) error {
		clear(held)
		rows, err := h.pool.Query(ctx, holdVerifySQL, int64(eventID), seatIDs, int64(owner), fence)
		var s string
		_, err = forEach(rows, err, []any{&s}, func() { held[s] = true })
		return err
	})
	if err != nil {
		return err
	}
	var lost []string
	for _, s := range seatIDs {
		if !held[s] && !slices.Contains(lost, s) {
			lost = append(lost, s)
		}
	}
	if lost != nil {
		return &boxoffice.Error{Code: boxoffice.EHOLDLOST, Message: "the hold has expired or was taken over", Seats: lost}
	}
	return nil
}

// holdHeldSQL returns the positions (1-based) in $2 of the seats held right
// now: one statement for a whole seat map, repeats included.
const holdHeldSQL = `
	SELECT u.i FROM unnest($2::text[]) WITH ORDINALITY AS u(seat, i)
	JOIN seat_holds h ON h.event_id = $1 AND h.seat_id = u.seat
	WHERE h.owner IS NOT NULL AND h.expires_at > now()`

// Held reports, aligned with seatIDs, which seats anyone holds right now,
// in one query.
func (h *Holds) Held(ctx context.Context, eventID boxoffice.ID, seatIDs []string) ([]bool, error) {
	out := make([]bool, len(seatIDs))
	if len(seatIDs) == 0 {
		return out, nil
	}
	err := h.run(ctx, func(ctx context.Context) error {
		clear(out)
		rows, err := h.pool.Query(ctx, holdHeldSQL, int64(eventID), seatIDs)
		var i int64
		_, err = forEach(rows, err, []any{&i}, func() {
			if i >= 1 && int(i) <= len(out) {
				out[i-1] = true
			}
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Ping reports whether the database is reachable (EUNAVAILABLE if not).
func (h *Holds) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, timeoutOr(h.Timeout))
	defer cancel()
	if err := h.pool.Ping(ctx); err != nil {
		return boxoffice.Unavailable("the seat hold store", err)
	}
	return nil
}

// run calls fn under the Timeout, again after a deadlock or serialization
// failure (at most maxAttempts times in all, with transact's backoff), and
// returns its error in the port's vocabulary: a failure of the database or
// of the deadline is EUNAVAILABLE. fn must be safe to run more than once.
func (h *Holds) run(ctx context.Context, fn func(ctx context.Context) error) error {
	return retry(ctx, timeoutOr(h.Timeout), fn)
}

func retry(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last, _ := withRetries(ctx, func() error { return fn(ctx) }) // a pause cut short: the last attempt's error
	return lockStoreError(last)
}

// lockStoreError translates err like the rest of the package; what is left
// untranslated (a cancelled context) is EUNAVAILABLE too, the one failure
// the ports name.
func lockStoreError(err error) error {
	if err == nil {
		return nil
	}
	err = translate(err)
	var de *boxoffice.Error
	if !errors.As(err, &de) {
		return boxoffice.Unavailable("the seat hold store", err)
	}
	return err
}

func timeoutOr(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return DefaultHoldTimeout
}

// Leases is boxoffice.Leases in PostgreSQL (table key_leases, migration
// 0006): the "request with this idempotency key in flight" marker for a
// deployment without Redis. A lease is a row with a random token and an
// expiry by the database's clock; taking it is one statement, an insert
// that takes over the row only if it expired; release deletes it only if
// the token is still this taking's. It is safe for concurrent use.
type Leases struct {
	pool *pgxpool.Pool

	// Timeout bounds each call, the release included; zero means
	// DefaultHoldTimeout.
	Timeout time.Duration
}

// NewLeases returns Leases on pool, whose database must have the
// migrations applied: for a process with a pool but no Store.
func NewLeases(pool *pgxpool.Pool) *Leases { return &Leases{pool: pool} }

// Leases returns leases on the store's database, so that a PostgreSQL-only
// deployment needs no lock store of its own.
func (s *Store) Leases() *Leases { return NewLeases(s.pool) }

// tryLeaseSQL takes the lease on $1 with token $2 for $3 ms unless someone
// holds it: the conflicting row is locked and replaced only if expired, so
// of racing takers exactly one gets a row back.
const tryLeaseSQL = `
	INSERT INTO key_leases AS l (key, token, expires_at)
	VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 millisecond')
	ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
	WHERE l.expires_at <= clock_timestamp()
	RETURNING true`

const releaseLeaseSQL = `DELETE FROM key_leases WHERE key = $1 AND token = $2`

// TryLease takes the lease on key for ttl. It returns EINVALID for an empty
// key or a ttl that is not positive, EIDEMINFLIGHT when someone holds the
// lease, EUNAVAILABLE when the database fails. The release func may be
// called any number of times; it ends the lease only while it is still this
// one, and if the database cannot be reached then, the lease ends with its
// ttl.
func (l *Leases) TryLease(ctx context.Context, key string, ttl time.Duration) (func(), error) {
	if key == "" {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "lease key is empty")
	}
	if ttl <= 0 {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "lease ttl must be positive")
	}
	token := rand.Text()
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	timeout := timeoutOr(l.Timeout)
	taken := false
	err := retry(ctx, timeout, func(ctx context.Context) error {
		err := l.pool.QueryRow(ctx, tryLeaseSQL, key, token, ms).Scan(&taken)
		if errors.Is(err, pgx.ErrNoRows) {
			taken, err = false, nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !taken {
		return nil, boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a request with this key is in flight")
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = retry(context.Background(), timeout, func(ctx context.Context) error {
				_, err := l.pool.Exec(ctx, releaseLeaseSQL, key, token)
				return err
			})
		})
	}, nil
}
