package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/wait"
)

// CreateBookings writes a batch of pending bookings in one transaction: the
// queue's drain, and the group commit of concurrent direct reserves
// (combiner.go). errs[i] is booking i's answer, exactly what CreateBooking
// would have said had the bookings been written one after the other in
// slice order: a later booking sees the earlier ones' seats in its user's
// limit, and a key or id an earlier one took. A refused booking writes
// nothing and does not stop the others. err is for the batch as a whole
// (the database unreachable, a failed commit): then nothing was written.
//
// Only plain bookings batch: a resale purchase or a waitlist offer locks
// rows of its own and is refused here with EINVALID; CreateBooking takes
// those.
//
// The cost is fixed per batch, not per booking: one round trip that locks
// the batch's (event, user) rows in sorted order (so two batches, or a batch
// and a single booking, wait for each other instead of deadlocking) and
// reads what the checks need, set-based, each read an index probe per row
// asked (pinned by TestHotPathsReadOnlyTheirRows); one round trip of
// multi-row inserts for the winners; the commit.
func (s *Store) CreateBookings(ctx context.Context, nbs []boxoffice.NewBooking) (errs []error, err error) {
	errs = make([]error, len(nbs))
	for attempt := 0; ; attempt++ {
		var sent bool // the transaction reached its commit
		sent, err = s.transactBatches(ctx, func(send sendFunc) (*pgx.Batch, error) {
			return createBookings(send, nbs, errs)
		})
		if attempt == maxBatchAttempts-1 || ctx.Err() != nil {
			break
		}
		// A key or an id committed by someone else between the reads and
		// the inserts: the next attempt reads it and refuses that booking.
		if errors.Is(err, errBatchRace) {
			continue
		}
		// A connection lost before the commit was sent wrote nothing: a
		// batch carries many callers' bookings, so it is tried again on
		// another connection rather than failing them all. Past the
		// commit, whether it was written is unknown: that is the callers'
		// to find out (EUNAVAILABLE; a retry with the key replays it).
		if !sent && boxoffice.ErrorCode(err) == boxoffice.EUNAVAILABLE {
			if wait.Sleep(ctx, backoff(attempt+1)) != nil {
				break
			}
			continue
		}
		break
	}
	if errors.Is(err, errBatchRace) {
		err = boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "a concurrent request took a key or id of this batch")
	}
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// maxBatchAttempts bounds how often CreateBookings runs its transaction.
const maxBatchAttempts = 3

var errBatchRace = errors.New("postgres: a batch insert met a row committed after its reads")

// eventUser is one row of event_users: the lock a user's limit is counted
// under.
type eventUser struct {
	event int64
	user  string
}

func cmpEventUser(a, b eventUser) int {
	if a.event != b.event {
		if a.event < b.event {
			return -1
		}
		return 1
	}
	return strings.Compare(a.user, b.user)
}

// The batch's reads. Each probes an index once per row it is given,
// whatever plan the server picks: every look-up is a LATERAL subquery with
// LIMIT, which the planner cannot turn into a join that scans the table (an
// EXISTS or a join became a hash join over every booking or ticket under a
// generic plan). Pinned by TestHotPathsReadOnlyTheirRows.
const (
	// ensureEventUsersSQL creates the missing (event, user) rows of known
	// events.
	ensureEventUsersSQL = `
		INSERT INTO event_users (event_id, user_id)
		SELECT x.e, x.u
		FROM unnest($1::bigint[], $2::text[]) AS x(e, u)
		CROSS JOIN LATERAL (SELECT 1 FROM events ev WHERE ev.id = x.e LIMIT 1) known
		ON CONFLICT DO NOTHING`
	// lockEventUsersSQL locks the rows in the order given (sorted by the
	// caller, so concurrent batches do not deadlock); it returns those of
	// known events.
	lockEventUsersSQL = `
		SELECT eu.event_id
		FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS x(e, u, ord)
		CROSS JOIN LATERAL (
		    SELECT event_id FROM event_users
		    WHERE event_id = x.e AND user_id = x.u
		    LIMIT 1 FOR UPDATE) eu
		ORDER BY x.ord`
	// usersSeatsSQL is userSeatsSQL for many (event, user) pairs, $3 the
	// "now" of each; returns (ordinal, seats).
	usersSeatsSQL = `
		SELECT x.ord,
		       (SELECT count(*) FROM tickets t
		        WHERE t.user_id = x.u AND t.event_id = x.e AND t.status = 'valid')
		     + (SELECT coalesce(sum((SELECT count(*) FROM booking_seats s
		                                WHERE s.event_id = o.event_id AND s.booking_id = o.id)), 0)::bigint
		        FROM bookings o
		        WHERE o.event_id = x.e AND o.user_id = x.u AND o.status = 'pending'
		          AND o.held_until - x.now > interval '0')
		FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS x(e, u, now, ord)`
	knownKeysSQL = `
		SELECT x.ord
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(u, k, ord)
		CROSS JOIN LATERAL (SELECT 1 FROM idempotency_keys i WHERE i.user_id = x.u AND i.key = x.k LIMIT 1) known`
	knownBookingsSQL = `
		SELECT x.ord
		FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS x(id, e, ord)
		CROSS JOIN LATERAL (SELECT 1 FROM bookings b WHERE b.event_id = x.e AND b.id = x.id LIMIT 1) known`
	// seatFactsSQL says for each (event, seat) asked whether it has a valid
	// ticket and whether the event has such a seat at all.
	seatFactsSQL = `
		SELECT x.ord, sold.one IS NOT NULL, seat.one IS NOT NULL
		FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS x(e, s, ord)
		LEFT JOIN LATERAL (
		    SELECT 1 AS one FROM tickets t WHERE t.event_id = x.e AND t.seat_id = x.s AND t.status = 'valid' LIMIT 1) sold ON true
		LEFT JOIN LATERAL (
		    SELECT 1 AS one FROM seats st WHERE st.event_id = x.e AND st.seat_id = x.s LIMIT 1) seat ON true`
)

// createBookings decides the batch's bookings in errs, from reads sent
// with send, and returns the winners' writes (nil for none).
func createBookings(send sendFunc, nbs []boxoffice.NewBooking, errs []error) (*pgx.Batch, error) {
	clear(errs) // a retried transaction decides afresh
	// What the reads are asked: the distinct (event, user) pairs in lock
	// order, every key, every id, every seat.
	pairs := make([]eventUser, 0, len(nbs))
	var (
		keyUsers, keys []string
		keyOf          = make([]int, len(nbs)) // booking -> ordinal in keys, -1 for none
		ids, idEvents  = make([]int64, 0, len(nbs)), make([]int64, 0, len(nbs))
		seatEvents     []int64
		seatIDs        []string
		seatOf         = make([]int, len(nbs)) // booking -> its first seat's ordinal
	)
	for i, nb := range nbs {
		b := nb.Booking
		if errs[i] = nb.ValidateForBatch(); errs[i] != nil {
			continue
		}
		pairs = append(pairs, eventUser{int64(b.EventID), b.UserID})
		keyOf[i] = -1
		if nb.Idempotency != nil {
			keyOf[i] = len(keys)
			keyUsers, keys = append(keyUsers, nb.Idempotency.UserID), append(keys, nb.Idempotency.Key)
		}
		ids, idEvents = append(ids, int64(b.ID)), append(idEvents, int64(b.EventID))
		seatOf[i] = len(seatIDs)
		for _, seat := range b.SeatIDs {
			seatEvents, seatIDs = append(seatEvents, int64(b.EventID)), append(seatIDs, seat)
		}
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	slices.SortFunc(pairs, cmpEventUser)
	pairs = slices.Compact(pairs)
	pairEvents, pairUsers := make([]int64, len(pairs)), make([]string, len(pairs))
	for j, p := range pairs {
		pairEvents[j], pairUsers[j] = p.event, p.user
	}
	// A user's seats are counted at each booking's own "now" (its
	// CreatedAt), as CreateBooking would: one count per distinct (event,
	// user, now).
	type counted struct {
		eventUser
		now time.Time
	}
	countOf := map[counted]int{}
	var countEvents []int64
	var countUsers []string
	var countNows []time.Time
	for i, nb := range nbs {
		if errs[i] != nil {
			continue
		}
		b := nb.Booking
		k := counted{eventUser{int64(b.EventID), b.UserID}, ts(b.CreatedAt)}
		if _, ok := countOf[k]; !ok {
			countOf[k] = len(countEvents)
			countEvents, countUsers, countNows = append(countEvents, k.event), append(countUsers, k.user), append(countNows, k.now)
		}
	}

	reads := &pgx.Batch{}
	reads.Queue(ensureEventUsersSQL, pairEvents, pairUsers)
	reads.Queue(lockEventUsersSQL, pairEvents, pairUsers)
	reads.Queue(usersSeatsSQL, countEvents, countUsers, countNows)
	reads.Queue(knownKeysSQL, keyUsers, keys)
	reads.Queue(knownBookingsSQL, ids, idEvents)
	reads.Queue(seatFactsSQL, seatEvents, seatIDs)
	br := send(reads)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	known := map[int64]bool{} // events with a row: the event exists
	var ord, count, event int64
	rows, err := br.Query()
	if _, err = forEach(rows, err, []any{&event}, func() { known[event] = true }); err != nil {
		return nil, err
	}
	counts := make([]int64, len(countEvents))
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord, &count}, func() { counts[ord-1] = count }); err != nil {
		return nil, err
	}
	keyTaken := make([]bool, len(keys))
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord}, func() { keyTaken[ord-1] = true }); err != nil {
		return nil, err
	}
	idTaken := map[int64]bool{}
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord}, func() { idTaken[ids[ord-1]] = true }); err != nil {
		return nil, err
	}
	var sold, exists bool
	seatSold, seatKnown := make([]bool, len(seatIDs)), make([]bool, len(seatIDs))
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord, &sold, &exists}, func() {
		seatSold[ord-1], seatKnown[ord-1] = sold, exists
	}); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, err
	}

	// The decisions, in CreateBooking's order of checks, each booking
	// after the earlier winners.
	var w batchWrites
	usedKeys := map[[2]string]bool{}
	// The batch's winners so far, per (event, user): their seats count
	// towards a later booking's limit while their hold is live at its now.
	type winner struct {
		seats     int64
		heldUntil time.Time
	}
	won := map[eventUser][]winner{}
	for i, nb := range nbs {
		if errs[i] != nil {
			continue
		}
		b := nb.Booking
		p := eventUser{int64(b.EventID), b.UserID}
		seats := b.SeatIDs
		first := seatOf[i]
		var k [2]string
		if nb.Idempotency != nil {
			k = [2]string{nb.Idempotency.UserID, nb.Idempotency.Key}
		}
		now := ts(b.CreatedAt)
		taken := counts[countOf[counted{p, now}]]
		for _, w := range won[p] {
			if w.heldUntil.After(now) {
				taken += w.seats
			}
		}
		switch tooMany := nb.CheckLimit(int(taken)); {
		case !known[p.event]:
			errs[i] = boxoffice.Errorf(boxoffice.ENOTFOUND, "event %s not found", b.EventID)
		case nb.Idempotency != nil && (keyTaken[keyOf[i]] || usedKeys[k]):
			errs[i] = errIdemInFlight
		case anyOf(seatSold[first : first+len(seats)]):
			errs[i] = &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "some seats are already sold",
				Seats: pick(seats, seatSold[first:first+len(seats)], true)}
		case tooMany != nil:
			errs[i] = tooMany
		case idTaken[int64(b.ID)]:
			errs[i] = boxoffice.Errorf(boxoffice.ECONFLICT, "booking %s already exists", b.ID)
		case !allOf(seatKnown[first : first+len(seats)]):
			errs[i] = &boxoffice.Error{Code: boxoffice.EINVALID, Message: "no such seat in this event",
				Seats: pick(seats, seatKnown[first:first+len(seats)], false)}
		default:
			errs[i] = nb.CheckSeatsOnce()
		}
		if errs[i] != nil {
			continue
		}
		won[p] = append(won[p], winner{int64(len(seats)), ts(b.HeldUntil)})
		idTaken[int64(b.ID)] = true
		if nb.Idempotency != nil {
			usedKeys[k] = true
		}
		if err := w.add(nb); err != nil {
			return nil, err
		}
	}
	if w.n == 0 {
		return nil, nil
	}
	return w.batch(), nil
}

// batchWrites gathers the winners' rows as columns, for one multi-row
// insert per table.
type batchWrites struct {
	n int
	// bookings
	ids, events, fences, amounts    []int64
	users                           []string
	heldUntil, createdAt, updatedAt []time.Time
	// booking_seats
	seatBookings, seatEvents []int64
	seatPositions            []int32
	seatIDs                  []string
	keys                     idempotencyRows
	outbox                   outboxRows
}

func (w *batchWrites) add(nb boxoffice.NewBooking) error {
	b := nb.Booking
	held := *b
	held.Status, held.HeldUntil = boxoffice.BookingPending, ts(b.HeldUntil)
	now := ts(b.CreatedAt)
	if err := w.outbox.add(boxoffice.TopicBookingHeld, &held, now); err != nil {
		return err
	}
	w.n++
	w.ids, w.events, w.fences, w.amounts = append(w.ids, int64(b.ID)), append(w.events, int64(b.EventID)),
		append(w.fences, b.Fence), append(w.amounts, b.AmountCents)
	w.users = append(w.users, b.UserID)
	w.heldUntil, w.createdAt, w.updatedAt = append(w.heldUntil, ts(b.HeldUntil)), append(w.createdAt, now),
		append(w.updatedAt, ts(b.UpdatedAt))
	for pos, seat := range b.SeatIDs {
		w.seatBookings, w.seatEvents = append(w.seatBookings, int64(b.ID)), append(w.seatEvents, int64(b.EventID))
		w.seatPositions, w.seatIDs = append(w.seatPositions, int32(pos)), append(w.seatIDs, seat)
	}
	if r := nb.Idempotency; r != nil {
		w.keys.add(r)
	}
	return nil
}

// batch inserts the winners, one statement per table.
func (w *batchWrites) batch() *pgx.Batch {
	batch := &pgx.Batch{}
	batch.Queue(`
		INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at)
		SELECT x.id, x.e, x.u, 'pending', x.f, x.a, x.h, x.c, x.up
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[],
		            $6::timestamptz[], $7::timestamptz[], $8::timestamptz[]) AS x(id, e, u, f, a, h, c, up)`,
		w.ids, w.events, w.users, w.fences, w.amounts, w.heldUntil, w.createdAt, w.updatedAt)
	batch.Queue(`
		INSERT INTO booking_seats (booking_id, position, event_id, seat_id)
		SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::text[])`,
		w.seatBookings, w.seatPositions, w.seatEvents, w.seatIDs)
	w.keys.queue(batch)
	w.outbox.queue(batch)
	return batch
}

func forEach(rows pgx.Rows, err error, scans []any, fn func()) (int, error) {
	if err != nil {
		return 0, err
	}
	tag, err := pgx.ForEachRow(rows, scans, func() error { fn(); return nil })
	return int(tag.RowsAffected()), err
}

func anyOf(xs []bool) bool { return slices.Contains(xs, true) }

func allOf(xs []bool) bool { return !slices.Contains(xs, false) }

// pick returns the seats whose flag is want, in order.
func pick(seats []string, flags []bool, want bool) []string {
	var out []string
	for i, f := range flags {
		if f == want {
			out = append(out, seats[i])
		}
	}
	return out
}
