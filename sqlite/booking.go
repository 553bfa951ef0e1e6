package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/boxoffice/boxoffice"
)

// CreateBooking writes a pending booking and its seats, after checking the
// user's ticket limit inside the same write transaction. The writes of
// this store run one at a time, on one connection, even those that share a
// commit (see writeCombiner), so parallel requests of one user see each
// other's bookings.
//
// A booking is live when it is pending and its hold runs past
// nb.Booking.CreatedAt, the request's "now" (the port passes no other).
// The booking is written as pending whatever nb.Booking.Status says. The
// limit counts the user's valid tickets for the event and the seats of
// their live bookings.
//
// The errors come in the port's order (see boxoffice.BookingStore); the
// rules that need no database are boxoffice.NewBooking's. For a resale
// purchase the listing's are ENOTFOUND (no such listing), ECONFLICT (not
// active, or not this event's and seat's), EINVALID (the buyer's own) and
// ESEATTAKEN (another live purchase of the listing); for a waitlist offer
// the entry's are ENOTFOUND (no such entry) and ECONFLICT (not waiting, or
// not this user's and event's).
func (s *Store) CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error {
	if err := nb.Validate(); err != nil {
		return err
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error { return createBooking(ctx, tx, nb) })
}

// CreateBookings writes a batch of plain pending bookings in one
// transaction, each answered as CreateBooking would have answered it one
// after the other (see boxoffice.BookingStore): a refused booking writes
// nothing and the others go on. A resale purchase or a waitlist offer is
// refused with EINVALID: those are booked on their own.
//
// No booking needs a savepoint of its own: checkBooking finds every
// refusal before the first write. A savepoint per booking made SQLite copy
// every page the booking touched into its statement journal, in memory
// freshly allocated and given back to the system at each release: about
// half of the batch's time, and of the writer's in a sale. The winners are
// written together once all are checked (batchWinners), the later
// bookings' checks seeing the earlier winners through its overlay.
func (s *Store) CreateBookings(ctx context.Context, nbs []boxoffice.NewBooking) ([]error, error) {
	errs := make([]error, len(nbs))
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		clear(errs)
		winners := newBatchWinners()
		for i, nb := range nbs {
			if errs[i] = nb.ValidateForBatch(); errs[i] != nil {
				continue
			}
			if errs[i] = checkBooking(ctx, tx, nb, winners); errs[i] != nil {
				if !refusal(errs[i]) {
					return errs[i] // the database failed: the whole batch fails
				}
				continue
			}
			if err := winners.add(nb); err != nil {
				return err
			}
		}
		if err := winners.write(ctx, tx); err != nil {
			if refusal(err) {
				// checkBooking missed it, and the other winners' rows
				// went in the same statements: the batch writes nothing
				// rather than guess which booking it was.
				return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "a booking was refused only when written", Err: err}
			}
			return err
		}
		return nil
	})
	if err != nil {
		return nil, translate(err, "database")
	}
	return errs, nil
}

// refusal reports whether err is a booking's own answer (a domain error),
// not a failure of the database.
func refusal(err error) bool {
	var e *boxoffice.Error
	return errors.As(err, &e) && e.Code != boxoffice.EINTERNAL && e.Code != boxoffice.EUNAVAILABLE
}

// createBooking is CreateBooking's work inside tx.
func createBooking(ctx context.Context, tx *txn, nb boxoffice.NewBooking) error {
	if err := checkBooking(ctx, tx, nb, nil); err != nil {
		return err
	}
	return writeBooking(ctx, tx, nb)
}

// checkBookingSQL reads in one statement everything a booking can be
// refused for: whether the event exists, the user's seats for it (the
// limit), which of the requested seats already have a valid ticket,
// whether the idempotency key or the booking id is taken, and which seats
// the event does not have. CROSS JOIN keeps the requested seats the outer
// loop (SQLite does not reorder it): a few index probes, not a walk over
// every ticket already sold for the event.
const checkBookingSQL = `
	SELECT
		EXISTS (SELECT 1 FROM events WHERE id = ?1),
		(SELECT count(*) FROM tickets
		 WHERE user_id = ?2 AND event_id = ?1 AND status = 'valid')
		+ (SELECT count(*)
		   FROM bookings b
		   JOIN booking_seats bs ON bs.booking_id = b.id
		   WHERE b.event_id = ?1 AND b.user_id = ?2 AND b.status = 'pending' AND b.held_until > ?3),
		(SELECT json_group_array(j.value)
		 FROM json_each(?4) j
		 CROSS JOIN tickets t
		 WHERE t.event_id = ?1 AND t.seat_id = j.value AND t.status = 'valid'),
		EXISTS (SELECT 1 FROM idempotency_keys WHERE user_id = ?5 AND key = ?6),
		EXISTS (SELECT 1 FROM bookings WHERE id = ?7),
		(SELECT json_group_array(j.value)
		 FROM json_each(?4) j
		 WHERE NOT EXISTS (SELECT 1 FROM seats WHERE event_id = ?1 AND seat_id = j.value))`

// checkBooking answers a booking's refusal, in the port's order (see
// boxoffice.BookingStore), before anything of it is written; nil: the
// writes of writeBooking will succeed, unless the database fails. earlier,
// if not nil, holds the batch's winners before nb, not written yet.
func checkBooking(ctx context.Context, tx *txn, nb boxoffice.NewBooking, earlier *batchWinners) error {
	b := nb.Booking
	var keyUser, key any // NULL: no key, nothing taken
	if r := nb.Idempotency; r != nil {
		keyUser, key = r.UserID, r.Key
	}
	var (
		eventExists, keyTaken, idTaken bool
		taken                          int
		sold, unknown                  string // JSON arrays
	)
	if err := tx.QueryRowContext(ctx, checkBookingSQL,
		b.EventID, b.UserID, millis(b.CreatedAt), jsonStrings(b.SeatIDs), keyUser, key, b.ID,
	).Scan(&eventExists, &taken, &sold, &keyTaken, &idTaken, &unknown); err != nil {
		return err
	}
	k, id, seats := earlier.overlay(b, keyUser, key)
	keyTaken, idTaken, taken = keyTaken || k, idTaken || id, taken+seats
	if !eventExists {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d not found", b.EventID)
	}
	if keyTaken {
		return errKeyTaken
	}
	if b.WaitlistEntryID != 0 {
		// The entry before the seats, in the port's order.
		if err := checkOffer(ctx, tx, b); err != nil {
			return err
		}
	}
	if b.ListingID != 0 {
		// The seat is sold: that is what a listing is.
		if err := checkPurchase(ctx, tx, b); err != nil {
			return err
		}
	} else if sold != "[]" {
		return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "some seats are already sold", Seats: inRequestOrder(sold, b.SeatIDs)}
	}
	if err := nb.CheckLimit(taken); err != nil {
		return err
	}
	if idTaken {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d already exists", b.ID)
	}
	if unknown != "[]" {
		return &boxoffice.Error{Code: boxoffice.EINVALID, Message: "no such seat in this event", Seats: inRequestOrder(unknown, b.SeatIDs)}
	}
	return nb.CheckSeatsOnce()
}

// writeBooking writes a booking checkBooking let through: its idempotency
// record, the booking, its seats, the outbox event and its waitlist
// entry's offer.
func writeBooking(ctx context.Context, tx *txn, nb boxoffice.NewBooking) error {
	var w bookingRows
	if err := w.add(nb); err != nil {
		return err
	}
	if err := w.write(ctx, tx); err != nil {
		return err
	}
	b := nb.Booking
	if b.WaitlistEntryID != 0 {
		if _, err := tx.ExecContext(ctx, `
			UPDATE waitlist_entries
			SET status = 'offered', booking_id = ?, offers = offers + 1, updated_at = ?
			WHERE id = ?`,
			b.ID, millis(b.CreatedAt), b.WaitlistEntryID); err != nil {
			return err
		}
	}
	return nil
}

// bookingRows gathers the rows of bookings checkBooking let through, to
// write them together: a batch's winners cost a few multi-row INSERTs per
// table, not four statements or more each (the writer's time in a batch's
// writes fell by a fifth: a statement's fixed cost in database/sql and the
// driver is paid per chunk, not per row).
type bookingRows struct {
	idem, bookings, seats, outbox []any // the rows' values, row after row
}

var (
	insertBookings = newMultiInsert(`INSERT INTO bookings (id, event_id, user_id, status, fence, amount_cents, held_until,
		created_at, updated_at, listing_id, waitlist_entry_id)`, 11, 128, 32, 8, 1)
	insertTickets      = newMultiInsert(`INSERT INTO tickets (id, event_id, booking_id, seat_id, user_id, code, status, issued_at)`, 8, 8, 4, 2, 1)
	insertBookingSeats = newMultiInsert(`INSERT INTO booking_seats (booking_id, position, event_id, seat_id)`, 4, 128, 32, 8, 1)
)

// add takes nb's rows, written as pending whatever its status says. The
// outbox event reports the booking as stored: pending, its times truncated
// to the millisecond.
func (w *bookingRows) add(nb boxoffice.NewBooking) error {
	b := nb.Booking
	held := *b
	held.Status, held.HeldUntil = boxoffice.BookingPending, fromMillis(millis(b.HeldUntil))
	ev, err := boxoffice.NewBookingEvent(boxoffice.TopicBookingHeld, &held, fromMillis(millis(b.CreatedAt)))
	if err != nil {
		return err
	}
	if r := nb.Idempotency; r != nil {
		w.idem = idempotencyRow(w.idem, r)
	}
	w.bookings = append(w.bookings, b.ID, b.EventID, b.UserID, string(boxoffice.BookingPending), b.Fence, b.AmountCents,
		millis(b.HeldUntil), millis(b.CreatedAt), millis(b.UpdatedAt), orNull(b.ListingID), orNull(b.WaitlistEntryID))
	for i, seat := range b.SeatIDs {
		w.seats = append(w.seats, b.ID, i, b.EventID, seat)
	}
	w.outbox = outboxRow(w.outbox, ev)
	return nil
}

// write writes the rows taken; the bookings before their seats, which
// refer to them.
func (w *bookingRows) write(ctx context.Context, tx *txn) error {
	if err := insertIdempotencyRows(ctx, tx, w.idem); err != nil {
		return err
	}
	if err := insertBookings.exec(ctx, tx, w.bookings); err != nil {
		return err
	}
	if err := insertBookingSeats.exec(ctx, tx, w.seats); err != nil {
		return err
	}
	err := insertOutboxes.exec(ctx, tx, w.outbox)
	if isUniqueViolation(err) {
		return fmt.Errorf("an outbox event of these bookings written twice: %w", err)
	}
	return err
}

// batchWinners are the rows of a batch's winners so far, and what
// checkBooking must add for the bookings after them, since those rows are
// not in the tables yet: their keys, ids and live seats (overlay).
type batchWinners struct {
	bookingRows
	keys map[[2]string]bool
	ids  map[boxoffice.ID]bool
	live map[bookingUser][]heldSeats
}

type bookingUser struct {
	event boxoffice.ID
	user  string
}

// heldSeats is a pending booking's seat count and the end of its hold.
type heldSeats struct {
	until int64 // ms
	n     int
}

func newBatchWinners() *batchWinners {
	return &batchWinners{keys: map[[2]string]bool{}, ids: map[boxoffice.ID]bool{}, live: map[bookingUser][]heldSeats{}}
}

// add takes nb's rows and what the later bookings' checks must see of it.
func (w *batchWinners) add(nb boxoffice.NewBooking) error {
	if err := w.bookingRows.add(nb); err != nil {
		return err
	}
	b := nb.Booking
	if r := nb.Idempotency; r != nil {
		w.keys[[2]string{r.UserID, r.Key}] = true
	}
	w.ids[b.ID] = true
	u := bookingUser{b.EventID, b.UserID}
	w.live[u] = append(w.live[u], heldSeats{until: millis(b.HeldUntil), n: len(b.SeatIDs)})
	return nil
}

// overlay is what the winners taken so far add to checkBooking's reads
// for b: whether its key or id is one of theirs, and how many of its
// user's seats for its event they hold past b's creation (the limit). A
// nil w (a booking alone) adds nothing.
func (w *batchWinners) overlay(b *boxoffice.Booking, keyUser, key any) (keyTaken, idTaken bool, seats int) {
	if w == nil {
		return false, false, 0
	}
	if u, ok := keyUser.(string); ok {
		keyTaken = w.keys[[2]string{u, key.(string)}]
	}
	now := millis(b.CreatedAt)
	for _, h := range w.live[bookingUser{b.EventID, b.UserID}] {
		if h.until > now {
			seats += h.n
		}
	}
	return keyTaken, w.ids[b.ID], seats
}

// checkPurchase checks a resale purchase b against its listing: it must
// exist (ENOTFOUND), be active and of b's event and seat (ECONFLICT), not
// be the buyer's own (EINVALID), and have no other live buyer at
// b.CreatedAt (ESEATTAKEN: the database backs up the lock layer).
func checkPurchase(ctx context.Context, tx *txn, b *boxoffice.Booking) error {
	var (
		eventID        boxoffice.ID
		seat, seller   string
		status         boxoffice.ListingStatus
		otherLiveBuyer bool
	)
	err := tx.QueryRowContext(ctx, `
		SELECT l.event_id, l.seat_id, l.seller_id, l.status,
			EXISTS (SELECT 1 FROM bookings b
			        WHERE b.listing_id = l.id AND b.status = 'pending' AND b.held_until > ?)
		FROM listings l
		WHERE l.id = ?`, millis(b.CreatedAt), b.ListingID,
	).Scan(&eventID, &seat, &seller, &status, &otherLiveBuyer)
	if err == sql.ErrNoRows {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "listing %d not found", b.ListingID)
	}
	if err != nil {
		return err
	}
	switch {
	case status != boxoffice.ListingActive || eventID != b.EventID || seat != b.SeatIDs[0]:
		return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d is no longer on sale", b.ListingID)
	case seller == b.UserID:
		return boxoffice.Errorf(boxoffice.EINVALID, "a seller cannot buy their own listing")
	case otherLiveBuyer:
		return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "another buyer holds this listing", Seats: []string{seat}}
	}
	return nil
}

// checkOffer checks a waitlist offer b against its entry: it must exist
// (ENOTFOUND), be b's user's and event's, and be waiting (ECONFLICT).
func checkOffer(ctx context.Context, tx *txn, b *boxoffice.Booking) error {
	var (
		eventID boxoffice.ID
		user    string
		status  boxoffice.WaitlistStatus
	)
	err := tx.QueryRowContext(ctx, `SELECT event_id, user_id, status FROM waitlist_entries WHERE id = ?`,
		b.WaitlistEntryID).Scan(&eventID, &user, &status)
	if err == sql.ErrNoRows {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "waitlist entry %d not found", b.WaitlistEntryID)
	}
	if err != nil {
		return err
	}
	if eventID != b.EventID || user != b.UserID {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "waitlist entry %d is not this user's for this event", b.WaitlistEntryID)
	}
	if status != boxoffice.WaitlistWaiting {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "waitlist entry %d is %s, not waiting", b.WaitlistEntryID, status)
	}
	return nil
}

// inRequestOrder decodes seatsJSON, a JSON array of seat ids (the sold
// ones, or the unknown ones), and orders them as requested does.
func inRequestOrder(seatsJSON string, requested []string) []string {
	var seats []string
	if err := json.Unmarshal([]byte(seatsJSON), &seats); err != nil {
		panic(err) // json_group_array writes valid JSON
	}
	slices.SortFunc(seats, func(a, b string) int {
		return cmp.Compare(slices.Index(requested, a), slices.Index(requested, b))
	})
	return seats
}

// Booking returns a booking with its seats and tickets, or ENOTFOUND.
func (s *Store) Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error) {
	var b *boxoffice.Booking
	err := s.readTx(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		b, err = loadBooking(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// ConfirmBooking moves a pending booking to confirmed, issuing its tickets
// and recording the authorized payment, in one transaction (see the port
// for the errors). boxoffice.ConfirmBooking.Check judges the booking
// against c (status, fence, hold, tickets, payment) and gives the tickets
// and the payment to write.
//
// The unique index on valid tickets, not a prior read, decides ESEATTAKEN:
// it holds whatever the lock layer and this code did.
//
// A resale purchase is checked after the hold and the fence: ECONFLICT
// if its listing is not active or the seller's ticket is no longer valid
// or was checked in. The seller's ticket is voided before the buyer's is
// issued, so the unique index holds throughout. A waitlist offer's entry
// is fulfilled whatever its status (a user who left while the offer was
// open and paid anyway has the seats).
func (s *Store) ConfirmBooking(ctx context.Context, c boxoffice.ConfirmBooking) (*boxoffice.Booking, error) {
	// The plan's times are the ones written (and returned): milliseconds.
	c.Now = fromMillis(millis(c.Now))
	var out *boxoffice.Booking
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		// A pending booking has no tickets to read.
		b, err := loadBookingSeats(ctx, tx, c.BookingID)
		if err != nil {
			return err
		}
		plan, err := c.Check(b)
		if err != nil {
			return err
		}
		if plan.AlreadyConfirmed {
			b.Tickets, err = bookingTickets(ctx, tx, b.ID)
			out = b
			return err
		}

		var newer bool
		if err := tx.QueryRowContext(ctx, `
			SELECT EXISTS (
				SELECT 1
				FROM booking_seats mine
				JOIN booking_seats other
				  ON other.event_id = mine.event_id AND other.seat_id = mine.seat_id AND other.booking_id <> mine.booking_id
				JOIN bookings o ON o.id = other.booking_id
				WHERE mine.booking_id = ?
				  AND o.status = 'pending' AND o.held_until > ? AND o.fence > ?
			)`, b.ID, millis(c.Now), b.Fence,
		).Scan(&newer); err != nil {
			return err
		}
		if newer {
			return boxoffice.Errorf(boxoffice.EHOLDLOST, "booking %d: a newer hold claims one of its seats", b.ID)
		}

		var sale *resale
		if b.ListingID != 0 {
			if sale, err = takeListing(ctx, tx, b); err != nil {
				return err
			}
		}

		// The tickets in one statement (up to eight); a conflict fails the
		// request, and its savepoint undoes whatever it wrote.
		args := make([]any, 0, len(plan.Tickets)*8)
		for _, t := range plan.Tickets {
			args = append(args, t.ID, t.EventID, t.BookingID, t.SeatID, t.UserID, t.Code, t.Status, millis(t.IssuedAt))
		}
		if err := insertTickets.exec(ctx, tx, args); isUniqueViolation(err) {
			return ticketConflict(ctx, tx, b.ID)
		} else if err != nil {
			return err
		}

		if sale != nil {
			if err := sellListing(ctx, tx, sale, b.ID, c.Now); err != nil {
				return err
			}
		}

		p := plan.Payment
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO payments (booking_id, auth_id, amount_cents, status, created_at)
			VALUES (?, ?, ?, ?, ?)`,
			p.BookingID, p.AuthID, p.AmountCents, p.Status, millis(p.CreatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE bookings
			SET status = 'confirmed', confirmation_code = ?, payment_auth_id = ?, updated_at = ?
			WHERE id = ?`,
			c.Code, p.AuthID, millis(c.Now), b.ID); err != nil {
			return err
		}
		if b.WaitlistEntryID != 0 {
			if _, err := tx.ExecContext(ctx, `
				UPDATE waitlist_entries SET status = 'fulfilled', updated_at = ?
				WHERE id = ? AND booking_id = ?`,
				millis(c.Now), b.WaitlistEntryID, b.ID); err != nil {
				return err
			}
		}
		if c.Idempotency != nil {
			if err := insertIdempotency(ctx, tx, c.Idempotency); err != nil {
				return err
			}
		}
		// The booking as written, as Booking would read it back.
		b.Status, b.ConfirmationCode, b.PaymentAuthID, b.UpdatedAt = boxoffice.BookingConfirmed, c.Code, p.AuthID, c.Now
		b.Tickets = plan.Tickets
		out = b
		if err := writeEvent(ctx, tx, boxoffice.TopicBookingConfirmed, out, out.UpdatedAt); err != nil {
			return err
		}
		if sale == nil {
			return nil
		}
		return writeResold(ctx, tx, boxoffice.Resale{
			ListingID:   sale.listingID,
			EventID:     out.EventID,
			SeatID:      sale.seatID,
			PriceCents:  sale.priceCents,
			SellerID:    sale.sellerID,
			BuyerID:     out.UserID,
			BookingID:   out.ID,
			OldTicketID: sale.ticketID,
			NewTicketID: out.Tickets[0].ID,
		}, out.UpdatedAt)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// resale is the listing a resale purchase buys, as takeListing found it.
type resale struct {
	listingID  boxoffice.ID
	ticketID   boxoffice.ID // the seller's
	seatID     string
	sellerID   string
	priceCents int64
}

// takeListing checks that the listing of the resale purchase b is still
// for sale and voids the seller's ticket (VoidResold), so that the buyer's
// can be issued. ECONFLICT if the listing is not active, or the ticket is
// no longer valid or was checked in.
func takeListing(ctx context.Context, tx *txn, b *boxoffice.Booking) (*resale, error) {
	var (
		r            = resale{listingID: b.ListingID}
		status       boxoffice.ListingStatus
		ticketStatus boxoffice.TicketStatus
		checkedIn    bool
	)
	gone := func() error {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d is no longer on sale", b.ListingID)
	}
	err := tx.QueryRowContext(ctx, `
		SELECT l.ticket_id, l.seat_id, l.seller_id, l.price_cents, l.status, t.status, t.checked_in_at IS NOT NULL
		FROM listings l
		JOIN tickets t ON t.id = l.ticket_id
		WHERE l.id = ?`, b.ListingID,
	).Scan(&r.ticketID, &r.seatID, &r.sellerID, &r.priceCents, &status, &ticketStatus, &checkedIn)
	if err == sql.ErrNoRows {
		return nil, gone()
	}
	if err != nil {
		return nil, err
	}
	switch {
	case status != boxoffice.ListingActive:
		return nil, gone()
	case ticketStatus != boxoffice.TicketValid:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d: the ticket is no longer valid", b.ListingID)
	case checkedIn:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d: the ticket was checked in", b.ListingID)
	}
	if _, err := tx.ExecContext(ctx, `
		UPDATE tickets SET status = 'void', void_reason = 'resold' WHERE id = ?`, r.ticketID); err != nil {
		return nil, err
	}
	return &r, nil
}

// sellListing records the sale of r to booking at now: the listing sold,
// the seller's payout of its price owed.
func sellListing(ctx context.Context, tx *txn, r *resale, booking boxoffice.ID, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `
		UPDATE listings SET status = 'sold', buyer_booking_id = ?, updated_at = ? WHERE id = ?`,
		booking, millis(now), r.listingID); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO payouts (listing_id, seller_id, amount_cents, status, created_at)
		VALUES (?, ?, ?, 'pending', ?)`,
		r.listingID, r.sellerID, r.priceCents, millis(now))
	return err
}

// ticketConflict explains a unique violation on tickets: a seat of the
// booking already has a valid ticket (ESEATTAKEN, naming the seats), or
// else a ticket id or code is already in use.
func ticketConflict(ctx context.Context, tx *txn, bookingID boxoffice.ID) error {
	rows, err := tx.QueryContext(ctx, `
		SELECT bs.seat_id
		FROM booking_seats bs
		JOIN tickets t ON t.event_id = bs.event_id AND t.seat_id = bs.seat_id AND t.status = 'valid'
		WHERE bs.booking_id = ?
		ORDER BY bs.position`, bookingID)
	if err != nil {
		return err
	}
	taken, err := collect(rows, scanString)
	if err != nil {
		return err
	}
	if len(taken) > 0 {
		return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "a seat of this booking is already sold", Seats: taken}
	}
	return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d: a ticket id or code is already in use", bookingID)
}

// ReleaseBooking moves a pending booking to released or expired (to) and
// returns it, with its seat return and, for a waitlist offer still
// offered, its entry lapsed (both at now). Errors: EINVALID for another
// target status, ENOTFOUND, ECONFLICT if it was not pending.
func (s *Store) ReleaseBooking(ctx context.Context, id boxoffice.ID, to boxoffice.BookingStatus, now time.Time) (*boxoffice.Booking, error) {
	if to != boxoffice.BookingReleased && to != boxoffice.BookingExpired {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "a booking is released to %q or %q, not %q",
			boxoffice.BookingReleased, boxoffice.BookingExpired, to)
	}
	var out *boxoffice.Booking
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE bookings SET status = ?, updated_at = ?
			WHERE id = ? AND status = 'pending'`,
			to, millis(now), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if out, err = loadBooking(ctx, tx, id); err != nil {
			return err
		}
		if n == 0 {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d is %s", id, out.Status)
		}
		if err := writeEvent(ctx, tx, boxoffice.ReleaseTopic(to), out, out.UpdatedAt); err != nil {
			return err
		}
		return endHold(ctx, tx, out, out.UpdatedAt)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExpireBookings moves up to limit pending bookings whose hold ran out by
// cutoff (held_until <= cutoff: the moment a hold stops being live, as in
// Booking.Live) to expired, oldest hold first, and returns them. Their
// UpdatedAt is cutoff; their events and seat returns are written in that
// order, and the offers among them lapse, all at cutoff.
func (s *Store) ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*boxoffice.Booking, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []*boxoffice.Booking
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		rows, err := tx.QueryContext(ctx, `
			UPDATE bookings SET status = 'expired', updated_at = ?
			WHERE id IN (
				SELECT id FROM bookings
				WHERE status = 'pending' AND held_until <= ?
				ORDER BY held_until, id
				LIMIT ?
			)
			RETURNING `+bookingColumns,
			millis(cutoff), millis(cutoff), limit)
		if err != nil {
			return err
		}
		if out, err = collect(rows, scanBooking); err != nil {
			return err
		}
		if err := attachSeats(ctx, tx, out); err != nil {
			return err
		}
		// RETURNING gives no order; the events follow the sweep's.
		sort.Slice(out, func(i, j int) bool {
			if !out[i].HeldUntil.Equal(out[j].HeldUntil) {
				return out[i].HeldUntil.Before(out[j].HeldUntil)
			}
			return out[i].ID < out[j].ID
		})
		for _, b := range out {
			if err := writeEvent(ctx, tx, boxoffice.TopicBookingExpired, b, b.UpdatedAt); err != nil {
				return err
			}
			if err := endHold(ctx, tx, b, b.UpdatedAt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CancelBooking moves a confirmed booking to cancelled at c.Now, in one
// transaction: its tickets void (VoidCancelled), its payment
// refund_pending, its seats back (a seat return at c.Now), the
// booking.cancelled event, and c.Idempotency. A booking cancelled before
// is returned as it is and nothing is written.
//
// Errors, in the order they are checked: ENOTFOUND; ECONFLICT when the
// booking is not confirmed, is a resale purchase, or has a ticket that is
// no longer valid (resold), was checked in, or is listed; EIDEMINFLIGHT.
func (s *Store) CancelBooking(ctx context.Context, c boxoffice.CancelBooking) (*boxoffice.Booking, error) {
	var out *boxoffice.Booking
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		b, err := loadBooking(ctx, tx, c.BookingID)
		if err != nil {
			return err
		}
		switch b.Status {
		case boxoffice.BookingCancelled:
			out = b
			return nil
		case boxoffice.BookingConfirmed:
		default:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d is %s: only a confirmed booking can be cancelled", b.ID, b.Status)
		}
		if b.ListingID != 0 {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d is a resale purchase: it cannot be cancelled", b.ID)
		}
		for _, t := range b.Tickets {
			switch {
			case t.Status != boxoffice.TicketValid:
				return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d: ticket %d was resold", b.ID, t.ID)
			case !t.CheckedInAt.IsZero():
				return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d: ticket %d was checked in", b.ID, t.ID)
			case t.ListingID != 0:
				return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d: ticket %d is listed for resale", b.ID, t.ID)
			}
		}
		if c.Idempotency != nil {
			if err := insertIdempotency(ctx, tx, c.Idempotency); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE tickets SET status = 'void', void_reason = 'cancelled'
			WHERE booking_id = ? AND status = 'valid'`, b.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE payments SET status = 'refund_pending' WHERE booking_id = ?`, b.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE bookings SET status = 'cancelled', updated_at = ? WHERE id = ?`,
			millis(c.Now), b.ID); err != nil {
			return err
		}
		if out, err = loadBooking(ctx, tx, b.ID); err != nil {
			return err
		}
		if err := writeEvent(ctx, tx, boxoffice.TopicBookingCancelled, out, out.UpdatedAt); err != nil {
			return err
		}
		return writeReturn(ctx, tx, out, out.UpdatedAt)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// endHold records in tx that the pending booking b ended unpaid at at:
// its seats come back (a seat return, naming the listing of a resale
// purchase), and a waitlist offer's entry lapses if it is still offered.
func endHold(ctx context.Context, tx *txn, b *boxoffice.Booking, at time.Time) error {
	if err := writeReturn(ctx, tx, b, at); err != nil {
		return err
	}
	if b.WaitlistEntryID == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `
		UPDATE waitlist_entries SET status = 'lapsed', updated_at = ?
		WHERE id = ? AND booking_id = ? AND status = 'offered'`,
		millis(at), b.WaitlistEntryID, b.ID)
	return err
}

// writeReturn records in tx that b's seats came back at at.
func writeReturn(ctx context.Context, tx *txn, b *boxoffice.Booking, at time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO seat_returns (event_id, booking_id, seat_ids, listing_id, created_at)
		VALUES (?, ?, ?, ?, ?)`,
		b.EventID, b.ID, jsonStrings(b.SeatIDs), orNull(b.ListingID), millis(at))
	return err
}

// attachSeats fills in the seats of bookings, in request order.
func attachSeats(ctx context.Context, q querier, bookings []*boxoffice.Booking) error {
	if len(bookings) == 0 {
		return nil
	}
	byID := make(map[boxoffice.ID]*boxoffice.Booking, len(bookings))
	ids := make([]boxoffice.ID, len(bookings))
	for i, b := range bookings {
		byID[b.ID], ids[i] = b, b.ID
	}
	rows, err := q.QueryContext(ctx, `
		SELECT booking_id, seat_id
		FROM booking_seats
		WHERE booking_id IN (SELECT value FROM json_each(?))
		ORDER BY booking_id, position`, jsonIDs(ids))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id   boxoffice.ID
			seat string
		)
		if err := rows.Scan(&id, &seat); err != nil {
			return err
		}
		b := byID[id]
		b.SeatIDs = append(b.SeatIDs, seat)
	}
	return rows.Err()
}
