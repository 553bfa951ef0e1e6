package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/boxoffice/boxoffice"
)

var _ boxoffice.ResaleStore = (*Store)(nil)

// The resale purchase itself is a booking: CreateBooking checks it against
// its listing (checkPurchase) and ConfirmBooking moves the ticket
// (takeListing, sellListing).

// CreateListing lists a valid ticket of l.SellerID, with idem in the same
// transaction, and sets l.EventID, l.SeatID (the ticket's) and l.Status
// (active). l.CreatedAt and l.UpdatedAt are written as given. The event's
// resale policy is the caller's to check.
//
// Errors, in the order they are checked: EINVALID for a negative price;
// ENOTFOUND when the ticket does not exist or is not l.SellerID's valid
// ticket; EIDEMINFLIGHT; ECONFLICT when it was checked in or is listed
// already (the partial unique index on active listings backs this up), or
// the listing ID is taken.
func (s *Store) CreateListing(ctx context.Context, l *boxoffice.Listing, idem *boxoffice.IdempotencyRecord) error {
	if l.PriceCents < 0 {
		return boxoffice.Errorf(boxoffice.EINVALID, "a price cannot be negative")
	}
	var (
		eventID boxoffice.ID
		seatID  string
	)
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		var (
			checkedIn, listed bool
		)
		err := tx.QueryRowContext(ctx, `
			SELECT event_id, seat_id, checked_in_at IS NOT NULL,
				EXISTS (SELECT 1 FROM listings WHERE ticket_id = t.id AND status = 'active')
			FROM tickets t
			WHERE id = ? AND user_id = ? AND status = 'valid'`,
			l.TicketID, l.SellerID,
		).Scan(&eventID, &seatID, &checkedIn, &listed)
		if err == sql.ErrNoRows {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "ticket %d not found", l.TicketID)
		}
		if err != nil {
			return err
		}
		if idem != nil {
			if err := insertIdempotency(ctx, tx, idem); err != nil {
				return err
			}
		}
		switch {
		case checkedIn:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "ticket %d was checked in: it cannot be sold", l.TicketID)
		case listed:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "ticket %d is listed already", l.TicketID)
		}
		_, err = tx.ExecContext(ctx, `
			INSERT INTO listings (id, event_id, ticket_id, seat_id, seller_id, price_cents, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
			l.ID, eventID, l.TicketID, seatID, l.SellerID, l.PriceCents, millis(l.CreatedAt), millis(l.UpdatedAt))
		if isUniqueViolation(err) {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d exists, or ticket %d is listed already", l.ID, l.TicketID)
		}
		return err
	})
	if err != nil {
		return err
	}
	l.EventID, l.SeatID, l.Status, l.BuyerBookingID = eventID, seatID, boxoffice.ListingActive, 0
	return nil
}

// Listing returns a listing, or ENOTFOUND.
func (s *Store) Listing(ctx context.Context, id boxoffice.ID) (*boxoffice.Listing, error) {
	l, err := scanListing(s.queryRow(ctx, `SELECT `+listingColumns+` FROM listings WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "listing %d not found", id)
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return &l, nil
}

// EventListings returns the event's active listings, by seat id.
func (s *Store) EventListings(ctx context.Context, eventID boxoffice.ID) ([]boxoffice.Listing, error) {
	rows, err := s.query(ctx, `
		SELECT `+listingColumns+`
		FROM listings
		WHERE event_id = ? AND status = 'active'
		ORDER BY seat_id, id`, eventID)
	if err != nil {
		return nil, translate(err, "database")
	}
	ls, err := collect(rows, scanListing)
	return ls, translate(err, "database")
}

// UserListings returns the seller's listings of every status, newest
// (largest id) first.
func (s *Store) UserListings(ctx context.Context, sellerID string) ([]boxoffice.Listing, error) {
	rows, err := s.query(ctx, `
		SELECT `+listingColumns+`
		FROM listings
		WHERE seller_id = ?
		ORDER BY id DESC`, sellerID)
	if err != nil {
		return nil, translate(err, "database")
	}
	ls, err := collect(rows, scanListing)
	return ls, translate(err, "database")
}

// WithdrawListing takes sellerID's active listing off the market at now
// (UpdatedAt) and returns it; one withdrawn before is returned as it is.
// Errors: ENOTFOUND when it is not sellerID's; ECONFLICT when it is sold
// or void, or a buyer's pending purchase holds it past now.
func (s *Store) WithdrawListing(ctx context.Context, id boxoffice.ID, sellerID string, now time.Time) (*boxoffice.Listing, error) {
	var out *boxoffice.Listing
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		l, err := scanListing(tx.QueryRowContext(ctx,
			`SELECT `+listingColumns+` FROM listings WHERE id = ? AND seller_id = ?`, id, sellerID))
		if err == sql.ErrNoRows {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "listing %d not found", id)
		}
		if err != nil {
			return err
		}
		switch l.Status {
		case boxoffice.ListingWithdrawn:
			out = &l
			return nil
		case boxoffice.ListingActive:
		default:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d is %s", id, l.Status)
		}
		var held bool
		if err := tx.QueryRowContext(ctx, `
			SELECT EXISTS (SELECT 1 FROM bookings
			               WHERE listing_id = ? AND status = 'pending' AND held_until > ?)`,
			id, millis(now)).Scan(&held); err != nil {
			return err
		}
		if held {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %d is held by a buyer", id)
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE listings SET status = 'withdrawn', updated_at = ? WHERE id = ?`, millis(now), id); err != nil {
			return err
		}
		l.Status, l.UpdatedAt = boxoffice.ListingWithdrawn, fromMillis(millis(now))
		out = &l
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UserPayouts returns the seller's payouts, newest (largest listing id)
// first.
func (s *Store) UserPayouts(ctx context.Context, sellerID string) ([]boxoffice.Payout, error) {
	rows, err := s.query(ctx, `
		SELECT `+payoutColumns+`
		FROM payouts
		WHERE seller_id = ?
		ORDER BY listing_id DESC`, sellerID)
	if err != nil {
		return nil, translate(err, "database")
	}
	ps, err := collect(rows, scanPayout)
	return ps, translate(err, "database")
}
