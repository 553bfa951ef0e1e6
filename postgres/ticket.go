package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// Ticket returns a ticket, valid or void, with its active listing, or
// ENOTFOUND.
func (s *Store) Ticket(ctx context.Context, id boxoffice.ID) (*boxoffice.Ticket, error) {
	t, err := scanTicket(s.pool.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets t WHERE t.id = $1`, int64(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no ticket %s", id)
	}
	if err != nil {
		return nil, translate(err)
	}
	return t, nil
}

// UserTickets returns the user's valid tickets, of every event, newest
// first (by ID, which grows with time), each with its active listing.
func (s *Store) UserTickets(ctx context.Context, userID string) ([]boxoffice.Ticket, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+ticketColumns+` FROM tickets t
		WHERE t.user_id = $1 AND t.status = 'valid'
		ORDER BY t.id DESC`, userID)
	tickets, err := collectTickets(rows, err)
	return tickets, translate(err)
}

// CheckIn admits the ticket with this code at now, once, and voids its
// active listing in the same transaction. The ticket row is locked first
// (FOR UPDATE), so of two check-ins of one code the second waits and then
// finds the first's time (ECHECKEDIN); a listing of the ticket, a resale
// or a cancellation of it waits as well, or is seen. Errors: ENOTFOUND,
// ETICKETVOID, ECHECKEDIN (with the ticket, as admitted before).
func (s *Store) CheckIn(ctx context.Context, eventID boxoffice.ID, code string, now time.Time) (*boxoffice.Ticket, error) {
	now = ts(now)
	var out *boxoffice.Ticket
	err := s.transact(ctx, func(tx pgx.Tx) error {
		out = nil
		t, err := scanTicket(tx.QueryRow(ctx, `SELECT `+ticketColumns+` FROM tickets t WHERE t.code = $1 FOR UPDATE`, code))
		if errors.Is(err, pgx.ErrNoRows) {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "no ticket has this code")
		}
		if err != nil {
			return err
		}
		switch {
		case eventID != 0 && t.EventID != eventID:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "this ticket is for another event (%s)", t.EventID)
		case t.Status != boxoffice.TicketValid:
			return boxoffice.Errorf(boxoffice.ETICKETVOID, "ticket %s is void (%s): its code admits nobody", t.ID, t.VoidReason)
		case !t.CheckedInAt.IsZero():
			out = t
			return boxoffice.Errorf(boxoffice.ECHECKEDIN, "ticket %s was checked in at %s", t.ID, t.CheckedInAt.Format(time.RFC3339Nano))
		}
		batch := &pgx.Batch{}
		batch.Queue(`UPDATE tickets SET checked_in_at = $2 WHERE event_id = $3 AND id = $1`, int64(t.ID), now, int64(t.EventID))
		// A ticket that was used cannot be sold.
		batch.Queue(`UPDATE listings SET status = 'void', updated_at = $2 WHERE event_id = $3 AND ticket_id = $1 AND status = 'active'`,
			int64(t.ID), now, int64(t.EventID))
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
		t.CheckedInAt, t.ListingID = now, 0
		out = t
		return nil
	})
	if err != nil && boxoffice.ErrorCode(err) != boxoffice.ECHECKEDIN {
		return nil, err
	}
	return out, err
}

// ticketColumns reads a ticket row aliased t, with its active listing (0
// if none).
const ticketColumns = `t.id, t.event_id, t.booking_id, t.seat_id, t.user_id, t.code, t.status, t.issued_at,
	t.void_reason, t.checked_in_at,
	coalesce((SELECT l.id FROM listings l WHERE l.event_id = t.event_id AND l.ticket_id = t.id AND l.status = 'active'), 0)`

func scanTicket(row pgx.Row) (*boxoffice.Ticket, error) {
	var (
		t                                 boxoffice.Ticket
		id, eventID, bookingID, listingID int64
		status                            string
		checkedIn                         *time.Time
	)
	err := row.Scan(&id, &eventID, &bookingID, &t.SeatID, &t.UserID, &t.Code, &status, &t.IssuedAt,
		&t.VoidReason, &checkedIn, &listingID)
	if err != nil {
		return nil, err
	}
	t.ID, t.EventID, t.BookingID, t.ListingID = boxoffice.ID(id), boxoffice.ID(eventID), boxoffice.ID(bookingID), boxoffice.ID(listingID)
	t.Status, t.IssuedAt = boxoffice.TicketStatus(status), t.IssuedAt.UTC()
	if checkedIn != nil {
		t.CheckedInAt = checkedIn.UTC()
	}
	return &t, nil
}

// collectTickets reads a query of ticketColumns.
func collectTickets(rows pgx.Rows, err error) ([]boxoffice.Ticket, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Ticket, error) {
		t, err := scanTicket(row)
		if err != nil {
			return boxoffice.Ticket{}, err
		}
		return *t, nil
	})
}
