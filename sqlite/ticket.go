package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/boxoffice/boxoffice"
)

var _ boxoffice.TicketStore = (*Store)(nil)

// Ticket returns a ticket, valid or void, with its active listing, or
// ENOTFOUND.
func (s *Store) Ticket(ctx context.Context, id boxoffice.ID) (*boxoffice.Ticket, error) {
	t, err := scanTicket(s.queryRow(ctx, `SELECT `+ticketColumns+` FROM tickets t WHERE t.id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "ticket %d not found", id)
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return &t, nil
}

// UserTickets returns the user's valid tickets, of every event, newest
// (largest id) first, each with its active listing.
func (s *Store) UserTickets(ctx context.Context, userID string) ([]boxoffice.Ticket, error) {
	rows, err := s.query(ctx, `
		SELECT `+ticketColumns+`
		FROM tickets t
		WHERE t.user_id = ? AND t.status = 'valid'
		ORDER BY t.id DESC`, userID)
	if err != nil {
		return nil, translate(err, "database")
	}
	ts, err := collect(rows, scanTicket)
	return ts, translate(err, "database")
}

// CheckIn admits the valid ticket with this code at now, voids its active
// listing (UpdatedAt now) and returns the ticket as admitted. Errors:
// ENOTFOUND, ETICKETVOID (no ticket returned), ECHECKEDIN with the ticket
// as it is and a message naming the first check-in in RFC 3339, UTC.
func (s *Store) CheckIn(ctx context.Context, eventID boxoffice.ID, code string, now time.Time) (*boxoffice.Ticket, error) {
	var out *boxoffice.Ticket
	err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		t, err := scanTicket(tx.QueryRowContext(ctx, `SELECT `+ticketColumns+` FROM tickets t WHERE t.code = ?`, code))
		if err == sql.ErrNoRows {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "no ticket has this code")
		}
		if err != nil {
			return err
		}
		switch {
		case eventID != 0 && t.EventID != eventID:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "this ticket is for another event (%d)", t.EventID)
		case t.Status != boxoffice.TicketValid:
			return boxoffice.Errorf(boxoffice.ETICKETVOID, "this ticket is void (%s): it admits nobody", t.VoidReason)
		case !t.CheckedInAt.IsZero():
			out = &t
			return boxoffice.Errorf(boxoffice.ECHECKEDIN, "this ticket was checked in at %s", t.CheckedInAt.Format(time.RFC3339Nano))
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tickets SET checked_in_at = ? WHERE id = ?`, millis(now), t.ID); err != nil {
			return err
		}
		// A used ticket cannot be sold.
		if _, err := tx.ExecContext(ctx, `
			UPDATE listings SET status = 'void', updated_at = ?
			WHERE ticket_id = ? AND status = 'active'`, millis(now), t.ID); err != nil {
			return err
		}
		t.CheckedInAt, t.ListingID = fromMillis(millis(now)), 0
		out = &t
		return nil
	})
	if err != nil && boxoffice.ErrorCode(err) != boxoffice.ECHECKEDIN {
		return nil, err
	}
	return out, err
}
