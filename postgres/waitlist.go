package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// The waitlist, and the seat returns that feed it: every call that ends a
// hold or a sale writes one (queueSeatReturn) in its own transaction.

// JoinWaitlist writes e as a waiting entry (Status waiting, no offer yet,
// UpdatedAt = JoinedAt, whatever e says, and sets those fields on e) and,
// when given, idem, in one transaction. Errors, in the order they are
// checked: ENOTFOUND for an unknown event, EIDEMINFLIGHT when idem's key is
// taken, ECONFLICT when the user has a live entry for the event (the
// partial unique index waitlist_one_live_per_user decides it, so two
// concurrent joins cannot both pass) or the entry ID is taken, EINVALID for
// a quantity below one.
func (s *Store) JoinWaitlist(ctx context.Context, e *boxoffice.WaitlistEntry, idem *boxoffice.IdempotencyRecord) error {
	return s.transact(ctx, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		batch.Queue(`SELECT EXISTS (SELECT 1 FROM events WHERE id = $1)`, int64(e.EventID))
		if idem != nil {
			queueIdempotency(batch, idem)
		}
		batch.Queue(`
			INSERT INTO waitlist_entries (id, event_id, user_id, section, price_tier, quantity, status, offers, joined_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'waiting', 0, $7, $7)`,
			int64(e.ID), int64(e.EventID), e.UserID, e.Section, e.PriceTier, e.Quantity, ts(e.JoinedAt))
		br := tx.SendBatch(ctx, batch)
		defer br.Close()

		var exists bool
		if err := br.QueryRow().Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %s not found", e.EventID)
		}
		if err := idempotencyResult(br, idem); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			if pgCode(err) == codeUniqueViolation {
				return &boxoffice.Error{Code: boxoffice.ECONFLICT, Message: "you are on this event's waitlist already", Err: err}
			}
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		e.Status, e.BookingID, e.Offers, e.UpdatedAt = boxoffice.WaitlistWaiting, 0, 0, e.JoinedAt
		return nil
	})
}

// WaitlistEntry returns an entry, or ENOTFOUND.
func (s *Store) WaitlistEntry(ctx context.Context, id boxoffice.ID) (*boxoffice.WaitlistEntry, error) {
	w, err := scanEntry(s.pool.QueryRow(ctx, `SELECT `+entryColumns+` FROM waitlist_entries w WHERE w.id = $1`, int64(id)))
	if err != nil {
		return nil, entryErr(err, id)
	}
	return w, nil
}

// UserWaitlist returns the user's entries of any status, newest first (by
// ID, which grows with time).
func (s *Store) UserWaitlist(ctx context.Context, userID string) ([]boxoffice.WaitlistEntry, error) {
	return s.entries(ctx, `
		SELECT `+entryColumns+` FROM waitlist_entries w
		WHERE w.user_id = $1
		ORDER BY w.id DESC`, userID)
}

// LeaveWaitlist moves a live entry to left at now and returns it; an entry
// that is no longer live is returned as it is. ENOTFOUND for an unknown
// entry. The entry row is locked (FOR UPDATE) first, so a concurrent offer
// or lapse of it is either seen or waits.
func (s *Store) LeaveWaitlist(ctx context.Context, id boxoffice.ID, now time.Time) (*boxoffice.WaitlistEntry, error) {
	now = ts(now)
	var out *boxoffice.WaitlistEntry
	err := s.transact(ctx, func(tx pgx.Tx) error {
		w, err := scanEntry(tx.QueryRow(ctx, `SELECT `+entryColumns+` FROM waitlist_entries w WHERE w.id = $1 FOR UPDATE`, int64(id)))
		if err != nil {
			return entryErr(err, id)
		}
		if w.Status.Live() {
			if _, err := tx.Exec(ctx, `UPDATE waitlist_entries SET status = 'left', updated_at = $2 WHERE event_id = $3 AND id = $1`,
				int64(id), now, int64(w.EventID)); err != nil {
				return err
			}
			w.Status, w.UpdatedAt = boxoffice.WaitlistLeft, now
		}
		out = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// WaitingEntries returns up to limit waiting entries of the event with an
// ID above after, in join order (by ID).
func (s *Store) WaitingEntries(ctx context.Context, eventID, after boxoffice.ID, limit int) ([]boxoffice.WaitlistEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.entries(ctx, `
		SELECT `+entryColumns+` FROM waitlist_entries w
		WHERE w.event_id = $1 AND w.status = 'waiting' AND w.id > $2
		ORDER BY w.id
		LIMIT $3`, int64(eventID), int64(after), limit)
}

// WaitlistAhead counts the event's waiting entries with an ID below id.
func (s *Store) WaitlistAhead(ctx context.Context, eventID, id boxoffice.ID) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM waitlist_entries
		WHERE event_id = $1 AND status = 'waiting' AND id < $2`, int64(eventID), int64(id)).Scan(&n)
	if err != nil {
		return 0, translate(err)
	}
	return n, nil
}

func (s *Store) entries(ctx context.Context, sql string, args ...any) ([]boxoffice.WaitlistEntry, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.WaitlistEntry, error) {
		w, err := scanEntry(row)
		if err != nil {
			return boxoffice.WaitlistEntry{}, err
		}
		return *w, nil
	})
	return ws, translate(err)
}

// PendingReturns returns up to limit seat returns, oldest first (by ID).
// Like the outbox's seq, an ID is handed out at INSERT, not at COMMIT, so a
// return may become visible after one with a larger ID; the caller deletes
// what it handled rather than keeping a high-water mark, so it is handled
// one pass later, not skipped.
func (s *Store) PendingReturns(ctx context.Context, limit int) ([]boxoffice.SeatReturn, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, event_id, booking_id, seat_ids, coalesce(listing_id, 0), created_at
		FROM seat_returns
		ORDER BY id
		LIMIT $1`, limit)
	if err != nil {
		return nil, translate(err)
	}
	rs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.SeatReturn, error) {
		var (
			r                             boxoffice.SeatReturn
			eventID, bookingID, listingID int64
		)
		err := row.Scan(&r.ID, &eventID, &bookingID, &r.SeatIDs, &listingID, &r.CreatedAt)
		r.EventID, r.BookingID, r.ListingID = boxoffice.ID(eventID), boxoffice.ID(bookingID), boxoffice.ID(listingID)
		r.CreatedAt = r.CreatedAt.UTC()
		return r, err
	})
	return rs, translate(err)
}

// DeleteReturn forgets a handled return; an unknown id is not an error.
func (s *Store) DeleteReturn(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM seat_returns WHERE id = $1`, id)
	return translate(err)
}

// offerChecks queues into CreateBooking's checks, after its lock on
// (event, user), the lock of the waitlist offer b's entry (FOR UPDATE: two
// offers to one entry are checked one after the other), and returns the
// function that checks it: ENOTFOUND for no such entry, ECONFLICT if it is
// another user's or event's, or not waiting.
func offerChecks(batch *pgx.Batch, b *boxoffice.Booking) func(pgx.BatchResults) error {
	batch.Queue(`SELECT event_id, user_id, status FROM waitlist_entries WHERE id = $1 FOR UPDATE`, int64(b.WaitlistEntryID))
	return func(br pgx.BatchResults) error {
		var (
			eventID      int64
			user, status string
		)
		if err := br.QueryRow().Scan(&eventID, &user, &status); err != nil {
			return entryErr(err, b.WaitlistEntryID)
		}
		switch {
		case boxoffice.ID(eventID) != b.EventID || user != b.UserID:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "waitlist entry %s is not this user's for this event", b.WaitlistEntryID)
		case status != string(boxoffice.WaitlistWaiting):
			return boxoffice.Errorf(boxoffice.ECONFLICT, "waitlist entry %s is %s, not waiting", b.WaitlistEntryID, status)
		}
		return nil
	}
}

// queueEnded queues what the end of b's hold (a release or an expiry, at
// b.UpdatedAt) writes besides the booking and its event: the seat return
// and, for a waitlist offer still offered with b, the entry's lapse. It
// returns the function that reads their results.
func queueEnded(batch *pgx.Batch, b *boxoffice.Booking) func(pgx.BatchResults) error {
	queueSeatReturn(batch, b)
	if b.WaitlistEntryID != 0 {
		batch.Queue(`
			UPDATE waitlist_entries SET status = 'lapsed', updated_at = $3
			WHERE event_id = $4 AND id = $1 AND status = 'offered' AND booking_id = $2`,
			int64(b.WaitlistEntryID), int64(b.ID), b.UpdatedAt, int64(b.EventID))
	}
	return func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil { // the return
			return err
		}
		if b.WaitlistEntryID != 0 {
			if _, err := br.Exec(); err != nil { // the lapse
				return err
			}
		}
		return nil
	}
}

// queueSeatReturn queues the return of b's seats, in b's order, at
// b.UpdatedAt (the time of the change that ended it); a resale purchase's
// names its listing.
func queueSeatReturn(batch *pgx.Batch, b *boxoffice.Booking) {
	batch.Queue(`
		INSERT INTO seat_returns (event_id, booking_id, seat_ids, listing_id, created_at)
		VALUES ($1, $2, $3, nullif($4::bigint, 0), $5)`,
		int64(b.EventID), int64(b.ID), b.SeatIDs, int64(b.ListingID), ts(b.UpdatedAt))
}

// entryColumns reads a waitlist entry row aliased w.
const entryColumns = `w.id, w.event_id, w.user_id, w.section, w.price_tier, w.quantity, w.status,
	coalesce(w.booking_id, 0), w.offers, w.joined_at, w.updated_at`

func scanEntry(row pgx.Row) (*boxoffice.WaitlistEntry, error) {
	var (
		w                      boxoffice.WaitlistEntry
		id, eventID, bookingID int64
		status                 string
	)
	err := row.Scan(&id, &eventID, &w.UserID, &w.Section, &w.PriceTier, &w.Quantity, &status,
		&bookingID, &w.Offers, &w.JoinedAt, &w.UpdatedAt)
	if err != nil {
		return nil, err
	}
	w.ID, w.EventID, w.BookingID = boxoffice.ID(id), boxoffice.ID(eventID), boxoffice.ID(bookingID)
	w.Status, w.JoinedAt, w.UpdatedAt = boxoffice.WaitlistStatus(status), w.JoinedAt.UTC(), w.UpdatedAt.UTC()
	return &w, nil
}

// entryErr reads pgx.ErrNoRows as "no such waitlist entry".
func entryErr(err error, id boxoffice.ID) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no waitlist entry %s", id)
	}
	return translate(err)
}
