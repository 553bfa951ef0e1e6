package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// The group commit of confirms. Concurrent ConfirmBooking calls that name
// their events are decided together: one transaction locks their bookings,
// runs their fencing checks and looks up their seats' tickets and their
// idempotency keys, four statements in one round trip; the winners'
// tickets and payments are two multi-row inserts, their bookings, events
// and idempotency records follow in the same round trip, and one commit
// makes them durable. A confirm cost
// a transaction and a commit of its own, PostgreSQL's CPU, not the disk,
// bounding confirms per second (docs/benchmarks.md).
//
// Each call gets the answer ConfirmBooking alone would give it. What the
// batch does not decide is run alone afterwards (confirmOne): a booking
// already confirmed (its answer carries its tickets), a resale purchase or
// a waitlist offer (their own rows and locks), a booking asked twice, and
// every call of a batch whose writes met a row committed after its reads
// three times over (a ticket for a seat sold meanwhile, an idempotency key
// or a ticket code taken: the single path tells which).

// maxConfirmBatch bounds the confirms decided in one transaction.
const maxConfirmBatch = 128

// confirmed is one ConfirmBooking call's answer.
type confirmed struct {
	b   *boxoffice.Booking
	err error
}

const (
	// lockBookingsSQL locks the bookings of ($1 events, $2 ids) in the
	// order given (sorted by the caller: concurrent batches do not
	// deadlock) and returns (ordinal, bookingColumns) of those found.
	lockBookingsSQL = `
		SELECT x.ord, ` + bookingColumns + `
		FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS x(e, id, ord)
		CROSS JOIN LATERAL (
		    SELECT * FROM bookings o WHERE o.event_id = x.e AND o.id = x.id
		    LIMIT 1 FOR UPDATE) b
		ORDER BY x.ord`
	// fencingManySQL is fencingSQL for many (event, seat, booking, now,
	// fence, ordinal) rows: the (ordinal, seat) pairs that a live pending
	// booking with a larger fence claims.
	fencingManySQL = `
		SELECT DISTINCT x.ord, x.s
		FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::timestamptz[], $5::bigint[], $6::bigint[])
		     AS x(e, s, b, now, fence, ord)
		CROSS JOIN LATERAL (
		    SELECT 1 FROM booking_seats bs
		    WHERE bs.event_id = x.e AND bs.seat_id = x.s AND bs.booking_id <> x.b
		      AND (SELECT o.status = 'pending' AND o.held_until > x.now AND o.fence > x.fence
		           FROM bookings o WHERE o.event_id = bs.event_id AND o.id = bs.booking_id)
		    LIMIT 1) lost`
	insertTicketsSQL = `
		INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
		SELECT u.id, u.e, u.b, u.s, u.usr, u.code, 'valid', u.at
		FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
		     WITH ORDINALITY AS u(id, e, b, s, usr, code, at, ord)
		ORDER BY u.ord`
	insertPaymentsSQL = `
		INSERT INTO payments (event_id, booking_id, auth_id, amount_cents, status, created_at)
		SELECT x.e, x.b, x.a, x.amount, 'authorized', x.at
		FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::timestamptz[]) AS x(e, b, a, amount, at)`
)

// confirmBookings is ConfirmBooking for the combiner; every c has its
// EventID and its Now rounded.
func (s *Store) confirmBookings(ctx context.Context, cs []boxoffice.ConfirmBooking) ([]confirmed, error) {
	out := make([]confirmed, len(cs))
	alone := make([]bool, len(cs))
	// A batch of one goes this way too: two round trips (the reads with
	// the BEGIN, the writes with the COMMIT), where the single path takes
	// four (BEGIN, the lock, the writes, COMMIT).
	for attempt := 0; ; attempt++ {
		var decided []confirmed
		_, err := s.transactBatches(ctx, func(send sendFunc) (*pgx.Batch, error) {
			clear(alone)
			var writes *pgx.Batch
			var err error
			decided, writes, err = confirmBatch(send, cs, alone)
			return writes, err
		})
		if err == nil {
			copy(out, decided)
			break
		}
		if !errors.Is(err, errBatchRace) {
			return nil, err
		}
		if attempt == maxBatchAttempts-1 || ctx.Err() != nil {
			for i := range alone {
				alone[i] = true
			}
			break
		}
	}
	for i, c := range cs {
		if alone[i] {
			out[i].b, out[i].err = s.confirmOne(ctx, c)
		}
	}
	return out, nil
}

// confirmBatch decides the confirms of cs from reads sent with send:
// decided[i] is c[i]'s answer unless alone[i], which it sets for those it
// leaves to the single path. writes writes the winners (nil for none).
func confirmBatch(send sendFunc, cs []boxoffice.ConfirmBooking, alone []bool) (decided []confirmed, writes *pgx.Batch, err error) {
	decided = make([]confirmed, len(cs))
	// The lock order: by event, then booking. A booking asked twice is
	// locked once; its later calls run alone.
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(cs[a].EventID, cs[b].EventID), cmp.Compare(cs[a].BookingID, cs[b].BookingID), cmp.Compare(a, b))
	})
	var (
		lockEvents, lockIDs                []int64
		lockOf                             = make([]int, 0, len(cs)) // lock ordinal - 1 -> call
		fEvents, fBookings, fFences, fOrds []int64
		fSeats                             []string
		fNows                              []time.Time
	)
	var keyUsers, keys []string
	var keyOf []int // key ordinal - 1 -> call
	for j, i := range order {
		c := cs[i]
		if j > 0 && c.BookingID == cs[order[j-1]].BookingID && c.EventID == cs[order[j-1]].EventID {
			alone[i] = true
			continue
		}
		lockEvents, lockIDs, lockOf = append(lockEvents, int64(c.EventID)), append(lockIDs, int64(c.BookingID)), append(lockOf, i)
		if r := c.Idempotency; r != nil {
			keyUsers, keys, keyOf = append(keyUsers, r.UserID), append(keys, r.Key), append(keyOf, i)
		}
		for _, t := range c.Tickets {
			fEvents, fSeats, fBookings = append(fEvents, int64(c.EventID)), append(fSeats, t.SeatID), append(fBookings, int64(c.BookingID))
			fNows, fFences, fOrds = append(fNows, c.Now), append(fFences, c.Fence), append(fOrds, int64(i))
		}
	}

	reads := &pgx.Batch{}
	reads.Queue(lockBookingsSQL, lockEvents, lockIDs)
	reads.Queue(fencingManySQL, fEvents, fSeats, fBookings, fNows, fFences, fOrds)
	reads.Queue(seatFactsSQL, fEvents, fSeats)
	reads.Queue(knownKeysSQL, keyUsers, keys)
	br := send(reads)
	defer br.Close()

	booking := make([]*boxoffice.Booking, len(cs))
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	var ord int64
	for rows.Next() {
		b, err := scanBooking(ordinalRow{rows, &ord})
		if err != nil {
			rows.Close()
			return nil, nil, err
		}
		booking[lockOf[ord-1]] = b
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	lost := make([][]string, len(cs))
	var seat string
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord, &seat}, func() { lost[ord] = append(lost[ord], seat) }); err != nil {
		return nil, nil, err
	}
	sold := make([]bool, len(fSeats)) // by ticket row, as asked
	var isSold, exists bool
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord, &isSold, &exists}, func() { sold[ord-1] = isSold }); err != nil {
		return nil, nil, err
	}
	keyTaken := make([]bool, len(cs))
	rows, err = br.Query()
	if _, err = forEach(rows, err, []any{&ord}, func() { keyTaken[keyOf[ord-1]] = true }); err != nil {
		return nil, nil, err
	}
	if err := br.Close(); err != nil {
		return nil, nil, err
	}
	soldOf := make([][]string, len(cs))
	for k, ok := range sold {
		if ok {
			soldOf[fOrds[k]] = append(soldOf[fOrds[k]], fSeats[k])
		}
	}

	// The decisions, in ConfirmBooking's order of checks.
	var w confirmWrites
	usedKeys := map[[2]string]bool{}
	for i, c := range cs {
		if alone[i] {
			continue
		}
		b := booking[i]
		if b == nil {
			decided[i].err = bookingErr(pgx.ErrNoRows, c.BookingID)
			continue
		}
		plan, err := c.Check(b)
		switch {
		case err != nil:
			decided[i].err = err
			continue
		case plan.AlreadyConfirmed, b.ListingID != 0, b.WaitlistEntryID != 0:
			alone[i] = true
			continue
		}
		if len(lost[i]) > 0 {
			slices.Sort(lost[i])
			decided[i].err = holdLost(lost[i])
			continue
		}
		if len(soldOf[i]) > 0 {
			decided[i].err = seatsTaken(b, func(seat string) bool { return slices.Contains(soldOf[i], seat) })
			continue
		}
		if r := c.Idempotency; r != nil {
			k := [2]string{r.UserID, r.Key}
			if keyTaken[i] || usedKeys[k] {
				decided[i].err = errIdemInFlight
				continue
			}
			usedKeys[k] = true
		}
		if err := w.add(c, b, plan); err != nil {
			return nil, nil, err
		}
		decided[i].b = b
	}
	return decided, w.writes(), nil
}

// ordinalRow scans a row of (ordinal, the columns scanBooking reads).
type ordinalRow struct {
	rows pgx.Rows
	ord  *int64
}

func (r ordinalRow) Scan(dest ...any) error {
	return r.rows.Scan(append([]any{r.ord}, dest...)...)
}

// confirmWrites gathers the batch's winners.
type confirmWrites struct {
	// tickets, as columns, in (event, seat) order: the lock order of the
	// unique index on valid tickets, as confirmOne inserts them.
	tickets []boxoffice.Ticket
	// payments, as columns
	payEvents, payBookings, payAmounts []int64
	payAuths                           []string
	payAt                              []time.Time
	// the bookings' updates: one statement each (one for all, an UPDATE
	// joined with unnest, became a scan of every booking under a generic
	// plan)
	updates pgx.Batch
	outbox  outboxRows
	keys    idempotencyRows
	n       int
}

// add writes b confirmed by c as plan says; b becomes the booking as
// written, with its tickets in its seats' order.
func (w *confirmWrites) add(c boxoffice.ConfirmBooking, b *boxoffice.Booking, plan boxoffice.ConfirmPlan) error {
	now := c.Now
	p := plan.Payment
	w.payEvents, w.payBookings, w.payAmounts = append(w.payEvents, int64(b.EventID)), append(w.payBookings, int64(b.ID)), append(w.payAmounts, p.AmountCents)
	w.payAuths, w.payAt = append(w.payAuths, p.AuthID), append(w.payAt, ts(p.CreatedAt))
	w.tickets = append(w.tickets, plan.Tickets...)
	w.updates.Queue(confirmBookingSQL, int64(b.ID), c.Code, p.AuthID, now, int64(b.EventID))
	b.Status = boxoffice.BookingConfirmed
	b.ConfirmationCode, b.PaymentAuthID, b.UpdatedAt = c.Code, p.AuthID, now
	if err := w.outbox.add(boxoffice.TopicBookingConfirmed, b, now); err != nil {
		return err
	}
	if c.Idempotency != nil {
		w.keys.add(c.Idempotency)
	}
	b.Tickets = plan.Tickets // in the booking's seat order, as Booking reads them
	w.n++
	return nil
}

// writes writes the winners (nil for none): the tickets first, so that a
// seat sold meanwhile fails the batch before anything else is written.
func (w *confirmWrites) writes() *pgx.Batch {
	if w.n == 0 {
		return nil
	}
	slices.SortFunc(w.tickets, func(x, y boxoffice.Ticket) int {
		return cmp.Or(cmp.Compare(x.EventID, y.EventID), strings.Compare(x.SeatID, y.SeatID))
	})
	n := len(w.tickets)
	ids, events, bookings := make([]int64, n), make([]int64, n), make([]int64, n)
	seats, users, codes, at := make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for i, t := range w.tickets {
		ids[i], events[i], bookings[i] = int64(t.ID), int64(t.EventID), int64(t.BookingID)
		seats[i], users[i], codes[i], at[i] = t.SeatID, t.UserID, t.Code, ts(t.IssuedAt)
	}
	batch := &pgx.Batch{}
	batch.Queue(insertTicketsSQL, ids, events, bookings, seats, users, codes, at)
	batch.Queue(insertPaymentsSQL, w.payEvents, w.payBookings, w.payAuths, w.payAmounts, w.payAt)
	batch.QueuedQueries = append(batch.QueuedQueries, w.updates.QueuedQueries...)
	w.outbox.queue(batch)
	w.keys.queue(batch)
	return batch
}
