package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/boxoffice/boxoffice"
)

var _ boxoffice.WaitlistStore = (*Store)(nil)

// An offer is a booking: CreateBooking moves its entry to offered
// (checkOffer), ConfirmBooking fulfils it, ReleaseBooking and
// ExpireBookings lapse it and write the seat returns (endHold).

// JoinWaitlist writes a waiting entry, with idem in the same transaction.
// The entry is written waiting, with no offer, and UpdatedAt = JoinedAt,
// whatever e says; those fields are set on e.
//
// Errors, in the order they are checked: EINVALID for a quantity below
// one; ENOTFOUND for an unknown event; EIDEMINFLIGHT; ECONFLICT when the
// user has a live entry for the event (the partial unique index
// waitlist_one_live_per_user backs this up) or the entry ID is taken.
func (s *Store) JoinWaitlist(ctx context.Context, e *boxoffice.WaitlistEntry, idem *boxoffice.IdempotencyRecord) error {
	if e.Quantity < 1 {
		return boxoffice.Errorf(boxoffice.EINVALID, "a waitlist entry wants at least one seat")
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		var eventExists, live bool
		if err := tx.QueryRowContext(ctx, `
			SELECT
				EXISTS (SELECT 1 FROM events WHERE id = ?1),
				EXISTS (SELECT 1 FROM waitlist_entries
				        WHERE event_id = ?1 AND user_id = ?2 AND status IN ('waiting', 'offered'))`,
			e.EventID, e.UserID).Scan(&eventExists, &live); err != nil {
			return err
		}
		if !eventExists {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d not found", e.EventID)
		}
		if idem != nil {
			if err := insertIdempotency(ctx, tx, idem); err != nil {
				return err
			}
		}
		if live {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "already on the waitlist of event %d", e.EventID)
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO waitlist_entries (id, event_id, user_id, section, price_tier, quantity, status, offers, joined_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 'waiting', 0, ?, ?)`,
			e.ID, e.EventID, e.UserID, e.Section, e.PriceTier, e.Quantity, millis(e.JoinedAt), millis(e.JoinedAt))
		if isUniqueViolation(err) {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "waitlist entry %d exists, or the user is on the waitlist already", e.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	e.Status, e.BookingID, e.Offers, e.UpdatedAt = boxoffice.WaitlistWaiting, 0, 0, e.JoinedAt
	return nil
}

// WaitlistEntry returns an entry, or ENOTFOUND.
func (s *Store) WaitlistEntry(ctx context.Context, id boxoffice.ID) (*boxoffice.WaitlistEntry, error) {
	w, err := scanWaitlistEntry(s.queryRow(ctx, `SELECT `+waitlistColumns+` FROM waitlist_entries WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "waitlist entry %d not found", id)
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return &w, nil
}

// UserWaitlist returns the user's entries of every status, newest
// (largest id) first.
func (s *Store) UserWaitlist(ctx context.Context, userID string) ([]boxoffice.WaitlistEntry, error) {
	rows, err := s.query(ctx, `
		SELECT `+waitlistColumns+`
		FROM waitlist_entries
		WHERE user_id = ?
		ORDER BY id DESC`, userID)
	if err != nil {
		return nil, translate(err, "database")
	}
	ws, err := collect(rows, scanWaitlistEntry)
	return ws, translate(err, "database")
}

// LeaveWaitlist moves a live entry to left at now (UpdatedAt) and returns
// it; an entry no longer live is returned as it is. ENOTFOUND for an
// unknown id. An open offer's booking stays pending: it is the caller's
// to release.
func (s *Store) LeaveWaitlist(ctx context.Context, id boxoffice.ID, now time.Time) (*boxoffice.WaitlistEntry, error) {
	var out *boxoffice.WaitlistEntry
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.ExecContext(ctx, `
			UPDATE waitlist_entries SET status = 'left', updated_at = ?
			WHERE id = ? AND status IN ('waiting', 'offered')`, millis(now), id); err != nil {
			return err
		}
		w, err := scanWaitlistEntry(tx.QueryRowContext(ctx, `SELECT `+waitlistColumns+` FROM waitlist_entries WHERE id = ?`, id))
		if err == sql.ErrNoRows {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "waitlist entry %d not found", id)
		}
		if err != nil {
			return err
		}
		out = &w
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WaitingEntries returns up to limit waiting entries of the event with an
// id above after, in join (id) order.
func (s *Store) WaitingEntries(ctx context.Context, eventID, after boxoffice.ID, limit int) ([]boxoffice.WaitlistEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `
		SELECT `+waitlistColumns+`
		FROM waitlist_entries
		WHERE event_id = ? AND status = 'waiting' AND id > ?
		ORDER BY id
		LIMIT ?`, eventID, after, limit)
	if err != nil {
		return nil, translate(err, "database")
	}
	ws, err := collect(rows, scanWaitlistEntry)
	return ws, translate(err, "database")
}

// WaitlistAhead counts the event's waiting entries with an id below id,
// whether or not id names an entry.
func (s *Store) WaitlistAhead(ctx context.Context, eventID, id boxoffice.ID) (int, error) {
	var n int
	err := s.queryRow(ctx, `
		SELECT count(*) FROM waitlist_entries
		WHERE event_id = ? AND status = 'waiting' AND id < ?`, eventID, id).Scan(&n)
	return n, translate(err, "database")
}

// PendingReturns returns up to limit seat returns, oldest (smallest id)
// first.
func (s *Store) PendingReturns(ctx context.Context, limit int) ([]boxoffice.SeatReturn, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `
		SELECT `+seatReturnColumns+`
		FROM seat_returns
		ORDER BY id
		LIMIT ?`, limit)
	if err != nil {
		return nil, translate(err, "database")
	}
	rs, err := collect(rows, scanSeatReturn)
	return rs, translate(err, "database")
}

// DeleteReturn forgets a handled return; an unknown id is not an error.
func (s *Store) DeleteReturn(ctx context.Context, id int64) error {
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM seat_returns WHERE id = ?`, id)
		return err
	})
}
