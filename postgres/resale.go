package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// Fan-to-fan resale: listings, the checks and writes a resale purchase
// adds to CreateBooking and ConfirmBooking, and payouts.
//
// Lock order, the same in every method, so that they wait on one another
// instead of deadlocking: a booking, then a ticket, then its listing.
// CreateListing and CheckIn lock the ticket and then (insert or void) the
// listing; ConfirmBooking of a purchase locks the buyer's booking, the
// seller's ticket, then the listing; CancelBooking the booking, then its
// tickets. CreateBooking and WithdrawListing lock only the listing (after
// the buyer's event_users row, which nothing else takes afterwards).

// CreateListing lists l.TicketID for sale in one transaction and sets
// l.EventID, l.SeatID and l.Status (active) from the ticket; CreatedAt and
// UpdatedAt are taken from l. The ticket row is locked first (FOR UPDATE),
// so a check-in or a cancellation of it waits for the listing or makes it
// fail. Errors, in the order they are checked: ENOTFOUND unless the ticket
// is l.SellerID's valid ticket, EIDEMINFLIGHT when idem's key is taken,
// ECONFLICT when the ticket is checked in or already listed (the partial
// unique index listings_one_active_per_ticket backs the check up) or the
// listing ID is taken, EINVALID for a negative price.
func (s *Store) CreateListing(ctx context.Context, l *boxoffice.Listing, idem *boxoffice.IdempotencyRecord) error {
	return s.transact(ctx, func(tx pgx.Tx) error {
		checks := &pgx.Batch{}
		checks.Queue(`
			SELECT event_id, seat_id, user_id, status, checked_in_at IS NOT NULL
			FROM tickets WHERE id = $1 FOR UPDATE`, int64(l.TicketID))
		if idem != nil {
			queueIdempotency(checks, idem)
		}
		checks.Queue(`
			SELECT EXISTS (
			    SELECT 1 FROM tickets t JOIN listings l ON l.event_id = t.event_id AND l.ticket_id = t.id
			    WHERE t.id = $1 AND l.status = 'active')`, int64(l.TicketID))
		br := tx.SendBatch(ctx, checks)
		defer br.Close()

		var (
			eventID             int64
			seat, owner, status string
			checkedIn, listed   bool
		)
		err := br.QueryRow().Scan(&eventID, &seat, &owner, &status, &checkedIn)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err == nil && (owner != l.SellerID || status != string(boxoffice.TicketValid)):
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "no valid ticket %s of yours", l.TicketID)
		case err != nil:
			return err
		}
		if err := idempotencyResult(br, idem); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&listed); err != nil {
			return err
		}
		if checkedIn {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "ticket %s was checked in: it can no longer be sold", l.TicketID)
		}
		if listed {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "ticket %s is already listed", l.TicketID)
		}
		if err := br.Close(); err != nil {
			return err
		}

		_, err = tx.Exec(ctx, `
			INSERT INTO listings (id, event_id, ticket_id, seat_id, seller_id, price_cents, status, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, $8)`,
			int64(l.ID), eventID, int64(l.TicketID), seat, l.SellerID, l.PriceCents, ts(l.CreatedAt), ts(l.UpdatedAt))
		if pgCode(err) == codeUniqueViolation {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s already exists, or ticket %s is already listed", l.ID, l.TicketID)
		}
		if err != nil {
			return err
		}
		l.EventID, l.SeatID, l.Status, l.BuyerBookingID = boxoffice.ID(eventID), seat, boxoffice.ListingActive, 0
		return nil
	})
}

// Listing returns a listing, or ENOTFOUND.
func (s *Store) Listing(ctx context.Context, id boxoffice.ID) (*boxoffice.Listing, error) {
	l, err := scanListing(s.pool.QueryRow(ctx, `SELECT `+listingColumns+` FROM listings l WHERE l.id = $1`, int64(id)))
	if err != nil {
		return nil, listingErr(err, id)
	}
	return l, nil
}

// EventListings returns the event's active listings in seat id order
// (bytewise, as Go and SQLite compare strings, whatever the database's
// collation).
func (s *Store) EventListings(ctx context.Context, eventID boxoffice.ID) ([]boxoffice.Listing, error) {
	return s.listings(ctx, `
		SELECT `+listingColumns+` FROM listings l
		WHERE l.event_id = $1 AND l.status = 'active'
		ORDER BY l.seat_id COLLATE "C", l.id`, int64(eventID))
}

// UserListings returns the seller's listings of any status, newest first
// (by ID, which grows with time).
func (s *Store) UserListings(ctx context.Context, sellerID string) ([]boxoffice.Listing, error) {
	return s.listings(ctx, `
		SELECT `+listingColumns+` FROM listings l
		WHERE l.seller_id = $1
		ORDER BY l.id DESC`, sellerID)
}

func (s *Store) listings(ctx context.Context, sql string, args ...any) ([]boxoffice.Listing, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	ls, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Listing, error) {
		l, err := scanListing(row)
		if err != nil {
			return boxoffice.Listing{}, err
		}
		return *l, nil
	})
	return ls, translate(err)
}

// WithdrawListing takes an active listing of sellerID off the market at now
// and returns it. The listing row is locked (FOR UPDATE) before the
// buyers are looked at, so a buyer's CreateBooking either committed before
// (and its live hold refuses the withdrawal) or runs after (and finds the
// listing withdrawn). Errors: ENOTFOUND if there is no such listing of
// sellerID; ECONFLICT if it is sold or void, or a pending booking with a
// hold past now claims it. A listing withdrawn before is returned as it
// is.
func (s *Store) WithdrawListing(ctx context.Context, id boxoffice.ID, sellerID string, now time.Time) (*boxoffice.Listing, error) {
	now = ts(now)
	var out *boxoffice.Listing
	err := s.transact(ctx, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		batch.Queue(`SELECT `+listingColumns+` FROM listings l WHERE l.id = $1 FOR UPDATE`, int64(id))
		batch.Queue(`
			SELECT EXISTS (
			    SELECT 1 FROM listings l JOIN bookings b ON b.event_id = l.event_id AND b.listing_id = l.id
			    WHERE l.id = $1 AND b.status = 'pending' AND b.held_until > $2)`, int64(id), now)
		br := tx.SendBatch(ctx, batch)
		defer br.Close()
		l, err := scanListing(br.QueryRow())
		if err != nil {
			return listingErr(err, id)
		}
		if l.SellerID != sellerID {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "no listing %s", id)
		}
		var claimed bool
		if err := br.QueryRow().Scan(&claimed); err != nil {
			return err
		}
		switch {
		case l.Status == boxoffice.ListingWithdrawn:
			out = l
			return nil
		case l.Status != boxoffice.ListingActive:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s is %s", id, l.Status)
		case claimed:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s is held by a buyer", id)
		}
		if err := br.Close(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE listings SET status = 'withdrawn', updated_at = $2 WHERE event_id = $3 AND id = $1`,
			int64(id), now, int64(l.EventID)); err != nil {
			return err
		}
		l.Status, l.UpdatedAt = boxoffice.ListingWithdrawn, now
		out = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UserPayouts returns the seller's payouts, newest first (by listing ID,
// which grows with time).
func (s *Store) UserPayouts(ctx context.Context, sellerID string) ([]boxoffice.Payout, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT listing_id, seller_id, amount_cents, status, created_at
		FROM payouts
		WHERE seller_id = $1
		ORDER BY listing_id DESC`, sellerID)
	if err != nil {
		return nil, translate(err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Payout, error) {
		var (
			p      boxoffice.Payout
			id     int64
			status string
		)
		err := row.Scan(&id, &p.SellerID, &p.AmountCents, &status, &p.CreatedAt)
		p.ListingID, p.Status, p.CreatedAt = boxoffice.ID(id), boxoffice.PayoutStatus(status), p.CreatedAt.UTC()
		return p, err
	})
	return ps, translate(err)
}

// purchaseChecks queues into CreateBooking's checks, after its lock on
// (event, buyer), the checks of the resale purchase b, and returns the
// function that reads their results. The listing row is locked FOR UPDATE,
// so two buyers of one listing are checked one after the other and the
// second sees the first's booking; the database backs the lock layer up.
// Errors, in this order: ENOTFOUND (no such listing), ECONFLICT (another
// event's or seat's, or no longer active), EINVALID (the buyer's own),
// ESEATTAKEN naming the seat (a live pending booking other than b claims
// the listing at b.CreatedAt).
func purchaseChecks(batch *pgx.Batch, b *boxoffice.Booking) func(pgx.BatchResults) error {
	batch.Queue(`SELECT event_id, seat_id, seller_id, status FROM listings WHERE id = $1 FOR UPDATE`, int64(b.ListingID))
	batch.Queue(`
		SELECT EXISTS (
		    SELECT 1 FROM bookings
		    WHERE event_id = $4 AND listing_id = $1 AND status = 'pending' AND held_until > $2 AND id <> $3)`,
		int64(b.ListingID), ts(b.CreatedAt), int64(b.ID), int64(b.EventID))
	return func(br pgx.BatchResults) error {
		var (
			eventID              int64
			seat, seller, status string
			claimed              bool
		)
		err := br.QueryRow().Scan(&eventID, &seat, &seller, &status)
		if errors.Is(err, pgx.ErrNoRows) {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "no listing %s", b.ListingID)
		}
		if err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&claimed); err != nil {
			return err
		}
		switch {
		case boxoffice.ID(eventID) != b.EventID || seat != b.SeatIDs[0]:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s is not on sale for this seat", b.ListingID)
		case status != string(boxoffice.ListingActive):
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s is no longer on sale", b.ListingID)
		case seller == b.UserID:
			return boxoffice.Errorf(boxoffice.EINVALID, "listing %s is your own", b.ListingID)
		case claimed:
			return &boxoffice.Error{Code: boxoffice.ESEATTAKEN, Message: "another buyer holds this listing", Seats: []string{seat}}
		}
		return nil
	}
}

// lockResale locks, for ConfirmBooking of the resale purchase b, the
// seller's ticket and then the listing (FOR UPDATE, in the package's lock
// order), and returns the listing once it has checked that the sale can
// go through: ECONFLICT if the listing is no longer active, or the ticket
// no longer valid or checked in.
func lockResale(ctx context.Context, tx pgx.Tx, b *boxoffice.Booking) (*boxoffice.Listing, error) {
	batch := &pgx.Batch{}
	// A listing's ticket never changes, so it is read unlocked to lock the
	// ticket before the listing.
	batch.Queue(`
		SELECT t.status, t.checked_in_at IS NOT NULL
		FROM tickets t
		WHERE t.event_id = $2 AND t.id = (SELECT ticket_id FROM listings WHERE event_id = $2 AND id = $1)
		FOR UPDATE`, int64(b.ListingID), int64(b.EventID))
	batch.Queue(`SELECT `+listingColumns+` FROM listings l WHERE l.event_id = $2 AND l.id = $1 FOR UPDATE`,
		int64(b.ListingID), int64(b.EventID))
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	var (
		status    string
		checkedIn bool
	)
	if err := br.QueryRow().Scan(&status, &checkedIn); err != nil {
		return nil, listingErr(err, b.ListingID)
	}
	l, err := scanListing(br.QueryRow())
	if err != nil {
		return nil, listingErr(err, b.ListingID)
	}
	switch {
	case l.Status != boxoffice.ListingActive:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s is no longer on sale (%s)", l.ID, l.Status)
	case status != string(boxoffice.TicketValid):
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "the listed ticket %s is no longer valid", l.TicketID)
	case checkedIn:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "the listed ticket %s was checked in", l.TicketID)
	}
	return l, br.Close()
}

// queueResale queues into ConfirmBooking's writes, after the booking's
// own, the rest of the resale of l to booking b with the buyer's ticket
// bought, at now: the listing sold to b, the seller's payout of the
// listing's price, and the ticket.resold event. (The seller's ticket is
// voided at the head of the batch, before the buyer's is inserted: the
// unique index on valid tickets would refuse the other order.) It returns
// the function that reads their results.
func queueResale(batch *pgx.Batch, l *boxoffice.Listing, b *boxoffice.Booking, bought boxoffice.Ticket, now time.Time) (func(pgx.BatchResults) error, error) {
	ev, err := boxoffice.NewTicketResoldEvent(boxoffice.Resale{
		ListingID:   l.ID,
		EventID:     l.EventID,
		SeatID:      l.SeatID,
		PriceCents:  l.PriceCents,
		SellerID:    l.SellerID,
		BuyerID:     b.UserID,
		BookingID:   b.ID,
		OldTicketID: l.TicketID,
		NewTicketID: bought.ID,
	}, now)
	if err != nil {
		return nil, err
	}
	batch.Queue(`UPDATE listings SET status = 'sold', buyer_booking_id = $2, updated_at = $3 WHERE event_id = $4 AND id = $1`,
		int64(l.ID), int64(b.ID), now, int64(l.EventID))
	batch.Queue(`
		INSERT INTO payouts (event_id, listing_id, seller_id, amount_cents, status, created_at)
		VALUES ($5, $1, $2, $3, 'pending', $4)`,
		int64(l.ID), l.SellerID, l.PriceCents, now, int64(l.EventID))
	var event outboxRows
	event.addEvent(ev)
	event.queue(batch)
	return func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil { // the listing
			return err
		}
		if _, err := br.Exec(); err != nil { // the payout
			return err
		}
		if _, err := br.Exec(); err != nil { // the event
			return eventErr(err)
		}
		return nil
	}, nil
}

// listingColumns reads a listing row aliased l.
const listingColumns = `l.id, l.event_id, l.ticket_id, l.seat_id, l.seller_id, l.price_cents, l.status,
	coalesce(l.buyer_booking_id, 0), l.created_at, l.updated_at`

func scanListing(row pgx.Row) (*boxoffice.Listing, error) {
	var (
		l                               boxoffice.Listing
		id, eventID, ticketID, buyerBkg int64
		status                          string
	)
	err := row.Scan(&id, &eventID, &ticketID, &l.SeatID, &l.SellerID, &l.PriceCents, &status,
		&buyerBkg, &l.CreatedAt, &l.UpdatedAt)
	if err != nil {
		return nil, err
	}
	l.ID, l.EventID, l.TicketID, l.BuyerBookingID = boxoffice.ID(id), boxoffice.ID(eventID), boxoffice.ID(ticketID), boxoffice.ID(buyerBkg)
	l.Status, l.CreatedAt, l.UpdatedAt = boxoffice.ListingStatus(status), l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	return &l, nil
}

// listingErr reads pgx.ErrNoRows as "no such listing".
func listingErr(err error, id boxoffice.ID) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no listing %s", id)
	}
	return translate(err)
}
