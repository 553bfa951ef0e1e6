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

// userSeatsSQL counts a user's seats for an event, sold or held
// ($1 event, $2 user, $3 now), for the per-user limit. It must read only
// that user's rows whatever plan the server picks: the hold's expiry is
// compared as an expression no index on held_until can serve, so a plan
// cannot use bookings_pending_held_until and read every live hold of
// every event (a generic plan made on a young table did); the (event_id,
// user_id) indexes are the only way in. A pending booking's seats are
// counted by a scalar subquery per booking, which no plan turns into a
// join: over partitions, a generic plan joined them by reading every
// booked seat of the event. Pinned by TestHotPathsReadOnlyTheirRows.
const userSeatsSQL = `
	SELECT (SELECT count(*) FROM tickets t
	        WHERE t.user_id = $2 AND t.event_id = $1 AND t.status = 'valid')
	     + (SELECT coalesce(sum((SELECT count(*) FROM booking_seats s
	                                WHERE s.event_id = o.event_id AND s.booking_id = o.id)), 0)::bigint
	        FROM bookings o
	        WHERE o.event_id = $1 AND o.user_id = $2 AND o.status = 'pending'
	          AND o.held_until - $3::timestamptz > interval '0')`

// soldSeatsSQL returns which of the seats $2 of event $1 have a valid
// ticket, in the order asked: one probe of tickets_one_valid_per_seat per
// seat. A LATERAL subquery with LIMIT cannot be turned into a join, so no
// plan reads the event's other tickets (an EXISTS became a hash semi-join
// over all of them once the event had sold a few thousand). Pinned by
// TestHotPathsReadOnlyTheirRows.
const soldSeatsSQL = `
	SELECT u.seat_id
	FROM unnest($2::text[]) WITH ORDINALITY AS u(seat_id, ord)
	CROSS JOIN LATERAL (
	    SELECT 1 FROM tickets t WHERE t.event_id = $1 AND t.seat_id = u.seat_id AND t.status = 'valid' LIMIT 1) sold
	ORDER BY u.ord`

// CreateBooking writes a pending booking, its seats and, when given, its
// idempotency record, in one transaction. The booking is written as
// pending whatever nb.Booking.Status says.
//
// The ticket limit is counted under a row lock on (event, user) in
// event_users: the row is created if missing (ON CONFLICT DO NOTHING, so
// concurrent first bookings agree on one row) and then locked FOR UPDATE,
// so two requests of one user count one after the other, whichever
// processes they run in; the second sees the first's seats once it commits.
// A user's seats are their valid tickets for the event (a ticket resold or
// cancelled no longer counts, one bought on resale does) and the seats of
// their pending bookings whose hold runs past nb.Booking.CreatedAt (the
// request's "now").
//
// A resale purchase (ListingID set) locks its listing row (FOR UPDATE, so
// two buyers of one listing are checked one after the other) and checks
// it instead of the sold seats; a waitlist offer (WaitlistEntryID set)
// locks its entry and moves it to offered. See purchaseChecks and
// offerChecks.
//
// A plain booking (neither) is group-committed with the plain bookings
// being made at the same time (see bookingCombiner and CreateBookings).
//
// The errors come in the port's order (see boxoffice.BookingStore); the
// rules that need no database are boxoffice.NewBooking's.
func (s *Store) CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error {
	b := nb.Booking
	if err := nb.Validate(); err != nil {
		return err
	}
	if b.ListingID == 0 && b.WaitlistEntryID == 0 {
		answer, err := s.bookings.Call(ctx, nb) // group commit
		if err != nil {
			return err
		}
		return answer
	}
	return s.createBooking(ctx, nb)
}

// createBooking is CreateBooking in a transaction of its own: a resale
// purchase's and a waitlist offer's path (and, in the tests, the reference
// CreateBookings is held to).
func (s *Store) createBooking(ctx context.Context, nb boxoffice.NewBooking) error {
	b := nb.Booking
	eventID, now := int64(b.EventID), ts(b.CreatedAt)

	return s.transact(ctx, func(tx pgx.Tx) error {
		// The checks travel in one round trip; the server runs them in
		// order, so the ones after the lock run once it is held.
		checks := &pgx.Batch{}
		// No foreign key checks the event (migration 0015): the insert
		// creates the row of a known event only, and the lock finds none
		// for an unknown one.
		checks.Queue(ensureEventUsersSQL, []int64{eventID}, []string{b.UserID})
		checks.Queue(`SELECT 1 FROM event_users WHERE event_id = $1 AND user_id = $2 FOR UPDATE`,
			eventID, b.UserID)
		if nb.Idempotency != nil {
			queueIdempotency(checks, nb.Idempotency)
		}
		var checkOffer func(pgx.BatchResults) error
		if b.WaitlistEntryID != 0 {
			// The entry before the seats, in the port's order.
			checkOffer = offerChecks(checks, b)
		}
		var checkSeats func(pgx.BatchResults) error
		if b.ListingID != 0 {
			// The seat being sold is what a listing is: the listing's own
			// checks replace the sold-seat check.
			checkSeats = purchaseChecks(checks, b)
		} else {
			checks.Queue(soldSeatsSQL, eventID, b.SeatIDs)
			checkSeats = func(br pgx.BatchResults) error {
				sold, err := collectStrings(br.Query())
				if err != nil {
					return err
				}
				if len(sold) > 0 {
					return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "some seats are already sold", Seats: sold}
				}
				return nil
			}
		}
		checks.Queue(userSeatsSQL, eventID, b.UserID, now)
		br := tx.SendBatch(ctx, checks)
		defer br.Close()

		if _, err := br.Exec(); err != nil {
			return err
		}
		if tag, err := br.Exec(); err != nil {
			return err
		} else if tag.RowsAffected() == 0 {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %s not found", b.EventID)
		}
		if err := idempotencyResult(br, nb.Idempotency); err != nil {
			return err
		}
		if checkOffer != nil {
			if err := checkOffer(br); err != nil {
				return err
			}
		}
		if err := checkSeats(br); err != nil {
			return err
		}
		var taken int
		if err := br.QueryRow().Scan(&taken); err != nil {
			return err
		}
		if err := nb.CheckLimit(taken); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}

		writes := &pgx.Batch{}
		writes.Queue(`
			INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at,
			                      listing_id, waitlist_entry_id)
			VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, nullif($9::bigint, 0), nullif($10::bigint, 0))`,
			int64(b.ID), eventID, b.UserID, b.Fence, b.AmountCents, ts(b.HeldUntil), now, ts(b.UpdatedAt),
			int64(b.ListingID), int64(b.WaitlistEntryID))
		writes.Queue(`
			SELECT u.seat_id
			FROM unnest($2::text[]) WITH ORDINALITY AS u(seat_id, ord)
			WHERE NOT EXISTS (SELECT 1 FROM seats st WHERE st.event_id = $1 AND st.seat_id = u.seat_id)
			ORDER BY u.ord`,
			eventID, b.SeatIDs)
		writes.Queue(`
			INSERT INTO booking_seats (booking_id, position, event_id, seat_id)
			SELECT $1, u.ord - 1, $2, u.seat_id
			FROM unnest($3::text[]) WITH ORDINALITY AS u(seat_id, ord)`,
			int64(b.ID), eventID, b.SeatIDs)
		if b.WaitlistEntryID != 0 {
			writes.Queue(`
				UPDATE waitlist_entries
				SET status = 'offered', booking_id = $2, offers = offers + 1, updated_at = $3
				WHERE event_id = $4 AND id = $1`,
				int64(b.WaitlistEntryID), int64(b.ID), now, eventID)
		}
		// The event reports the booking as written: pending, its times at
		// millisecond precision.
		held := *b
		held.Status, held.HeldUntil = boxoffice.BookingPending, ts(b.HeldUntil)
		if err := queueEvent(writes, boxoffice.TopicBookingHeld, &held, now); err != nil {
			return err
		}
		wr := tx.SendBatch(ctx, writes)
		defer wr.Close()

		if _, err := wr.Exec(); err != nil {
			if pgCode(err) == codeUniqueViolation {
				return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %s already exists", b.ID)
			}
			return err
		}
		unknown, err := collectStrings(wr.Query())
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			return &boxoffice.Error{Code: boxoffice.EINVALID, Message: "no such seat in this event", Seats: unknown}
		}
		// The unique (booking, seat) finds a seat named twice. An unknown
		// seat was refused just above, which rolls the insert back:
		// booking_seats has no foreign keys (migration 0014).
		if _, err := wr.Exec(); err != nil {
			if pgCode(err) == codeUniqueViolation {
				if twice := nb.CheckSeatsOnce(); twice != nil {
					return twice
				}
			}
			return err
		}
		if b.WaitlistEntryID != 0 {
			if _, err := wr.Exec(); err != nil { // the entry, locked above
				return err
			}
		}
		if _, err := wr.Exec(); err != nil { // the event
			return eventErr(err)
		}
		return wr.Close()
	})
}

// collectStrings reads a one-column text result.
func collectStrings(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Booking returns a booking, or ENOTFOUND. A confirmed or cancelled
// booking comes with all its tickets, valid or void, each with its active
// listing.
//
// Concurrent calls are read together, in one statement (bookingsByID): a
// booking found by its id alone probes every month's partition, and the
// statement's set-up of those probes, not the probes, is most of its cost
// in the server.
func (s *Store) Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error) {
	b, err := s.bookingReads.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, bookingErr(pgx.ErrNoRows, id)
	}
	// A booking has tickets from its confirm on, written in the same
	// transaction, so this second read cannot miss them (it may see them
	// a moment later than the booking row: voided by a resale or a
	// cancellation that committed in between).
	if b.Status == boxoffice.BookingConfirmed || b.Status == boxoffice.BookingCancelled {
		if b.Tickets, err = bookingTickets(ctx, s.pool, b); err != nil {
			return nil, translate(err)
		}
	}
	return b, nil
}

// bookingsByIDSQL reads bookings by their ids alone; LATERAL with LIMIT
// keeps it a probe per id (of each month's id index) under any plan.
const bookingsByIDSQL = `
	SELECT x.ord, ` + bookingColumns + `
	FROM unnest($1::bigint[]) WITH ORDINALITY AS x(id, ord)
	CROSS JOIN LATERAL (SELECT * FROM bookings o WHERE o.id = x.id LIMIT 1) b`

// bookingsByID reads many bookings, without their tickets, in one
// statement: out[i] is ids[i]'s, nil when there is none.
func (s *Store) bookingsByID(ctx context.Context, ids []boxoffice.ID) ([]*boxoffice.Booking, error) {
	raw := make([]int64, len(ids))
	for i, id := range ids {
		raw[i] = int64(id)
	}
	out := make([]*boxoffice.Booking, len(ids))
	rows, err := s.pool.Query(ctx, bookingsByIDSQL, raw)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var ord int64
	for rows.Next() {
		b, err := scanBooking(ordinalRow{rows, &ord})
		if err != nil {
			return nil, translate(err)
		}
		out[ord-1] = b
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// ConfirmBooking confirms a pending booking in one transaction: it locks
// the booking row (FOR UPDATE: a concurrent confirm or release of the same
// booking waits, then sees the outcome), checks it against c
// (boxoffice.ConfirmBooking.Check: status, fence, hold, tickets, payment),
// runs the fencing check, and writes the tickets and the payment of the
// check's plan, the booking's new state and the idempotency record. Any
// failure rolls all of it back. See boxoffice.BookingStore for the errors;
// a ticket id or code already in use fails with ECONFLICT.
//
// The unique index on valid tickets, not a prior read, decides ESEATTAKEN.
// The tickets are inserted in seat id order, so two confirms that share
// seats wait on one another in the same order instead of deadlocking.
//
// A resale purchase locks the seller's ticket and then the listing (see
// lockResale) after the fencing check, voids the seller's ticket before
// inserting the buyer's, and writes the rest of the sale after the
// booking (queueResale). A waitlist offer's entry becomes fulfilled,
// even if its user left the waitlist meanwhile.
//
// A confirm that names its event is group-committed with the concurrent
// ones (confirms_batch.go); one by its id alone runs by itself.
func (s *Store) ConfirmBooking(ctx context.Context, c boxoffice.ConfirmBooking) (*boxoffice.Booking, error) {
	// The plan's times (the tickets', the payment's) are the ones written.
	c.Now = ts(c.Now)
	if c.EventID == 0 {
		return s.confirmOne(ctx, c)
	}
	r, err := s.confirms.Call(ctx, c)
	if err != nil {
		return nil, err
	}
	return r.b, r.err
}

// confirmOne is ConfirmBooking in a transaction of its own.
func (s *Store) confirmOne(ctx context.Context, c boxoffice.ConfirmBooking) (*boxoffice.Booking, error) {
	now := c.Now
	var out *boxoffice.Booking
	err := s.transact(ctx, func(tx pgx.Tx) error {
		b, lost, fenced, err := lockForConfirm(ctx, tx, c)
		if err != nil {
			return err
		}
		plan, err := c.Check(b)
		if err != nil {
			return err
		}
		if plan.AlreadyConfirmed {
			// A retry, or a second payment the caller must void: either
			// way nothing is written.
			b.Tickets, err = bookingTickets(ctx, tx, b)
			out = b
			return err
		}
		// Inserted in seat id order: the lock order.
		tickets := slices.Clone(plan.Tickets)
		slices.SortFunc(tickets, func(x, y boxoffice.Ticket) int { return strings.Compare(x.SeatID, y.SeatID) })
		payment := plan.Payment

		// The fencing check: a live pending booking with a larger fence on
		// one of these seats means the lock layer has since handed the
		// seat to someone else, so this hold is no longer the seat's. The
		// other booking is read by a correlated subquery, so the plan is
		// always "seat index, then primary key": a join lets the planner
		// start from the pending bookings, which in a flash sale are all
		// of them. It ran with the lock when c named the event.
		if !fenced {
			if lost, err = collectStrings(tx.Query(ctx, fencingSQL, int64(b.EventID), b.SeatIDs, int64(b.ID), now, b.Fence)); err != nil {
				return err
			}
		}
		if len(lost) > 0 {
			return holdLost(lost)
		}
		var listing *boxoffice.Listing
		if b.ListingID != 0 {
			if listing, err = lockResale(ctx, tx, b); err != nil {
				return err
			}
		}

		ids, seats, codes := make([]int64, len(tickets)), make([]string, len(tickets)), make([]string, len(tickets))
		for i, t := range tickets {
			ids[i], seats[i], codes[i] = int64(t.ID), t.SeatID, t.Code
		}
		// One round trip for every write. The ticket insert skips a seat
		// that already has a valid ticket (ON CONFLICT on the partial
		// unique index, which waits for a concurrent insert of the same
		// seat to commit or roll back) and returns the seats it did write:
		// a seat missing from the answer is taken, and the whole
		// transaction is rolled back. A taken ticket id or code is still a
		// unique violation.
		batch := &pgx.Batch{}
		if listing != nil {
			// First: the seller's ticket stops being valid before the
			// buyer's is inserted for the same seat.
			batch.Queue(`UPDATE tickets SET status = 'void', void_reason = 'resold' WHERE event_id = $2 AND id = $1`,
				int64(listing.TicketID), int64(b.EventID))
		}
		batch.Queue(`
			INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)
			SELECT u.id, $4, $5, u.seat_id, $6, u.code, 'valid', $7
			FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS u(id, seat_id, code, ord)
			ORDER BY u.ord
			ON CONFLICT (event_id, seat_id) WHERE status = 'valid' DO NOTHING
			RETURNING seat_id`,
			ids, seats, codes, int64(b.EventID), int64(b.ID), b.UserID, now)
		batch.Queue(`
			INSERT INTO payments (event_id, booking_id, auth_id, amount_cents, status, created_at)
			VALUES ($5, $1, $2, $3, 'authorized', $4)`,
			int64(payment.BookingID), payment.AuthID, payment.AmountCents, ts(payment.CreatedAt), int64(b.EventID))
		batch.Queue(confirmBookingSQL, int64(b.ID), c.Code, payment.AuthID, now, int64(b.EventID))
		// b becomes the booking as written; it is returned only if all of
		// this commits.
		b.Status = boxoffice.BookingConfirmed
		b.ConfirmationCode, b.PaymentAuthID, b.UpdatedAt = c.Code, payment.AuthID, now
		if err := queueEvent(batch, boxoffice.TopicBookingConfirmed, b, now); err != nil {
			return err
		}
		var readResale func(pgx.BatchResults) error
		if listing != nil {
			if readResale, err = queueResale(batch, listing, b, tickets[0], now); err != nil {
				return err
			}
		}
		if b.WaitlistEntryID != 0 {
			// Whatever the entry's status now (its user may have left
			// meanwhile): they paid, the seats are theirs.
			batch.Queue(`
				UPDATE waitlist_entries SET status = 'fulfilled', updated_at = $3
				WHERE event_id = $4 AND id = $1 AND booking_id = $2`,
				int64(b.WaitlistEntryID), int64(b.ID), now, int64(b.EventID))
		}
		if c.Idempotency != nil {
			queueIdempotency(batch, c.Idempotency)
		}
		br := tx.SendBatch(ctx, batch)
		defer br.Close()

		if listing != nil {
			if _, err := br.Exec(); err != nil { // the seller's ticket
				return err
			}
		}
		written, err := collectStrings(br.Query())
		if pgCode(err) == codeUniqueViolation {
			return &boxoffice.Error{Code: boxoffice.ECONFLICT, Message: "a ticket id or code is already in use", Err: err}
		}
		if err != nil {
			return err
		}
		if len(written) < len(tickets) {
			return seatsTaken(b, func(seat string) bool { return !slices.Contains(written, seat) })
		}
		if _, err := br.Exec(); err != nil { // the payment
			return err
		}
		if _, err := br.Exec(); err != nil { // the booking's new state
			return err
		}
		if _, err := br.Exec(); err != nil { // the event
			return eventErr(err)
		}
		if readResale != nil {
			if err := readResale(br); err != nil {
				return err
			}
		}
		if b.WaitlistEntryID != 0 {
			if _, err := br.Exec(); err != nil { // the entry
				return err
			}
		}
		if err := idempotencyResult(br, c.Idempotency); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}

		// Written in seat id order (the lock order), returned in the
		// booking's seat order (the plan's), as Booking reads them.
		b.Tickets = plan.Tickets
		out = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReleaseBooking moves a pending booking to released or expired (to) and
// returns it as it is afterwards, writing in the same transaction its
// event, its seat return and, for a waitlist offer still offered, the
// entry's lapse. Errors: EINVALID for another target status, ENOTFOUND,
// ECONFLICT if the booking was not pending.
func (s *Store) ReleaseBooking(ctx context.Context, id boxoffice.ID, to boxoffice.BookingStatus, now time.Time) (*boxoffice.Booking, error) {
	if to != boxoffice.BookingReleased && to != boxoffice.BookingExpired {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "a booking is released to %q or %q, not %q",
			boxoffice.BookingReleased, boxoffice.BookingExpired, to)
	}
	var out *boxoffice.Booking
	err := s.transact(ctx, func(tx pgx.Tx) error {
		b, err := lockBooking(ctx, tx, id)
		if err != nil {
			return err
		}
		if b.Status != boxoffice.BookingPending {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %s is %s", id, b.Status)
		}
		b.Status, b.UpdatedAt = to, ts(now)
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE bookings SET status = $2, updated_at = $3 WHERE event_id = $4 AND id = $1`,
			int64(id), string(to), b.UpdatedAt, int64(b.EventID))
		if err := queueEvent(batch, boxoffice.ReleaseTopic(to), b, b.UpdatedAt); err != nil {
			return err
		}
		readEnded := queueEnded(batch, b)
		br := tx.SendBatch(ctx, batch)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil { // the event
			return eventErr(err)
		}
		if err := readEnded(br); err != nil {
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		out = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExpireBookings moves up to limit pending bookings whose hold ran out at
// or before cutoff to expired, oldest hold first, and returns them, with
// the event, the seat return and an offer's lapse of each (in that order,
// so the returns' ids follow the sweep). Rows another transaction holds (a
// confirm in progress) are skipped, not waited for, so several reconcilers
// can sweep at once.
func (s *Store) ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*boxoffice.Booking, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []*boxoffice.Booking
	err := s.transact(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			UPDATE bookings b SET status = 'expired', updated_at = $1
			WHERE (b.event_id, b.id) IN (
			    SELECT event_id, id FROM bookings
			    WHERE status = 'pending' AND held_until <= $1
			    ORDER BY held_until, id
			    LIMIT $2
			    FOR UPDATE SKIP LOCKED)
			RETURNING `+bookingColumns, ts(cutoff), limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*boxoffice.Booking, error) { return scanBooking(row) })
		if err != nil || len(out) == 0 {
			return err
		}
		// RETURNING gives no order; the events follow the sweep's.
		slices.SortFunc(out, func(x, y *boxoffice.Booking) int {
			if c := x.HeldUntil.Compare(y.HeldUntil); c != 0 {
				return c
			}
			return cmp.Compare(x.ID, y.ID)
		})
		batch := &pgx.Batch{}
		ended := make([]func(pgx.BatchResults) error, len(out))
		for i, b := range out {
			if err := queueEvent(batch, boxoffice.TopicBookingExpired, b, b.UpdatedAt); err != nil {
				return err
			}
			ended[i] = queueEnded(batch, b)
		}
		br := tx.SendBatch(ctx, batch)
		defer br.Close()
		for _, readEnded := range ended {
			if _, err := br.Exec(); err != nil {
				return eventErr(err)
			}
			if err := readEnded(br); err != nil {
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bookingColumns reads a booking row aliased b, with its seats in request
// order.
const (
	bookingColumns = bookingFields + `,
	ARRAY(SELECT s.seat_id FROM booking_seats s WHERE s.event_id = b.event_id AND s.booking_id = b.id ORDER BY s.position)`
	// bookingColumnsOfEvent1 is bookingColumns for bookings of the event
	// in $1: a parameter, not b.event_id, lets a generic plan keep one
	// partition of booking_seats when the executor starts, where
	// b.event_id leaves every month's in the plan, each set up per call.
	bookingColumnsOfEvent1 = bookingFields + `,
	ARRAY(SELECT s.seat_id FROM booking_seats s WHERE s.event_id = $1 AND s.booking_id = b.id ORDER BY s.position)`
	bookingFields = `b.id, b.event_id, b.user_id, b.status, b.fence, b.amount_cents,
	b.held_until, b.created_at, b.updated_at, b.confirmation_code, b.payment_auth_id,
	coalesce(b.listing_id, 0), coalesce(b.waitlist_entry_id, 0)`
)

func scanBooking(row pgx.Row) (*boxoffice.Booking, error) {
	var (
		b                                     boxoffice.Booking
		id, eventID, listingID, waitlistEntry int64
		status                                string
	)
	err := row.Scan(&id, &eventID, &b.UserID, &status, &b.Fence, &b.AmountCents,
		&b.HeldUntil, &b.CreatedAt, &b.UpdatedAt, &b.ConfirmationCode, &b.PaymentAuthID,
		&listingID, &waitlistEntry, &b.SeatIDs)
	if err != nil {
		return nil, err
	}
	b.ID, b.EventID, b.Status = boxoffice.ID(id), boxoffice.ID(eventID), boxoffice.BookingStatus(status)
	b.ListingID, b.WaitlistEntryID = boxoffice.ID(listingID), boxoffice.ID(waitlistEntry)
	b.HeldUntil, b.CreatedAt, b.UpdatedAt = b.HeldUntil.UTC(), b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	return &b, nil
}

// bookingTickets returns a booking's tickets, valid and void, in the order
// of its seats.
func bookingTickets(ctx context.Context, q querier, b *boxoffice.Booking) ([]boxoffice.Ticket, error) {
	rows, err := q.Query(ctx, `
		SELECT `+ticketColumns+`
		FROM tickets t JOIN booking_seats bs
		  ON bs.event_id = t.event_id AND bs.booking_id = t.booking_id AND bs.seat_id = t.seat_id
		WHERE t.event_id = $2 AND t.booking_id = $1
		ORDER BY bs.position, t.id`, int64(b.ID), int64(b.EventID))
	return collectTickets(rows, err)
}

// bookingErr reads pgx.ErrNoRows as "no such booking".
// lockBookingSQL reads a booking by its id alone and locks its row: a probe
// of each partition's id index (0010), then its seats by primary key.
// Pinned by TestHotPathsReadOnlyTheirRows.
const lockBookingSQL = `SELECT ` + bookingColumns + ` FROM bookings b WHERE b.id = $1 FOR UPDATE`

// fencingSQL is confirm's fencing check ($1 event, $2 seats, $3 the
// booking, $4 now, $5 its fence): the seats of b that a live pending
// booking with a larger fence claims. Both tables are narrowed by $1, so
// that a generic plan keeps one partition of each. Pinned by
// TestHotPathsReadOnlyTheirRows.
const fencingSQL = `
	SELECT DISTINCT s.seat_id
	FROM booking_seats s
	WHERE s.event_id = $1 AND s.seat_id = ANY($2) AND s.booking_id <> $3
	  AND (SELECT o.status = 'pending' AND o.held_until > $4 AND o.fence > $5
	       FROM bookings o WHERE o.event_id = $1 AND o.id = s.booking_id)
	ORDER BY s.seat_id`

// confirmBookingSQL records a booking's confirm ($1 the booking, $2 its
// confirmation code, $3 the authorization, $4 now, $5 its event).
const confirmBookingSQL = `
	UPDATE bookings
	SET status = 'confirmed', confirmation_code = $2, payment_auth_id = $3, updated_at = $4
	WHERE event_id = $5 AND id = $1`

// holdLost is a confirm's refusal when newer holds claim seats of its
// booking (the fencing check's answer).
func holdLost(seats []string) error {
	return &boxoffice.Error{Code: boxoffice.EHOLDLOST, Message: "a newer hold claims seats of this booking", Seats: seats}
}

// seatsTaken is a confirm's refusal when seats of b are sold: those
// taken says, in the booking's order.
func seatsTaken(b *boxoffice.Booking, taken func(seat string) bool) error {
	var seats []string
	for _, seat := range b.SeatIDs {
		if taken(seat) {
			seats = append(seats, seat)
		}
	}
	return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "a seat of this booking is already sold", Seats: seats}
}

// lockBookingOfEventSQL is lockBookingSQL for a booking whose event is
// known ($1 the event, $2 the booking): one probe of one partition.
const lockBookingOfEventSQL = `SELECT ` + bookingColumnsOfEvent1 + ` FROM bookings b WHERE b.event_id = $1 AND b.id = $2 FOR UPDATE`

// lockForConfirm locks the booking of c. When c names its event, the
// fencing check goes in the same round trip, asked about the seats of c's
// tickets, its fence and c.Now: fenced says so, and lost is then its
// answer. That answer is the booking's own only if Check then finds c's
// seats and fence to be the booking's, which it must for the confirm to
// go on. The check still runs after the lock is granted: the statements of
// a batch run in turn, each on a snapshot of its own (READ COMMITTED).
func lockForConfirm(ctx context.Context, tx pgx.Tx, c boxoffice.ConfirmBooking) (b *boxoffice.Booking, lost []string, fenced bool, err error) {
	if c.EventID == 0 {
		b, err = lockBooking(ctx, tx, c.BookingID)
		return b, nil, false, err
	}
	seats := make([]string, len(c.Tickets))
	for i, t := range c.Tickets {
		seats[i] = t.SeatID
	}
	batch := &pgx.Batch{}
	batch.Queue(lockBookingOfEventSQL, int64(c.EventID), int64(c.BookingID))
	batch.Queue(fencingSQL, int64(c.EventID), seats, int64(c.BookingID), c.Now, c.Fence)
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if b, err = scanBooking(br.QueryRow()); err != nil {
		return nil, nil, false, bookingErr(err, c.BookingID)
	}
	if lost, err = collectStrings(br.Query()); err != nil {
		return nil, nil, false, err
	}
	return b, lost, true, br.Close()
}

// lockBooking reads a booking and locks its row (FOR UPDATE) for the rest
// of tx: a concurrent confirm, release or cancel of it waits, then sees the
// outcome. ENOTFOUND for an unknown id.
func lockBooking(ctx context.Context, tx pgx.Tx, id boxoffice.ID) (*boxoffice.Booking, error) {
	b, err := scanBooking(tx.QueryRow(ctx, lockBookingSQL, int64(id)))
	if err != nil {
		return nil, bookingErr(err, id)
	}
	return b, nil
}

func bookingErr(err error, id boxoffice.ID) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no booking %s", id)
	}
	return translate(err)
}
