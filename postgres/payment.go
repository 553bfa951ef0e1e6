package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// MarkCaptured records that a booking's payment was captured, at s.Now.
// Marking it again changes nothing. ENOTFOUND if the booking has no
// payment.
func (s *Store) MarkCaptured(ctx context.Context, bookingID boxoffice.ID) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE payments SET status = 'captured', captured_at = coalesce(captured_at, $2)
		WHERE booking_id = $1`, int64(bookingID), ts(s.Now()))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no payment for booking %s", bookingID)
	}
	return nil
}

// UncapturedPayments returns up to limit payments still authorized that
// were recorded before cutoff, oldest first.
func (s *Store) UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]boxoffice.Payment, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT booking_id, auth_id, amount_cents, status, created_at
		FROM payments
		WHERE status = 'authorized' AND created_at < $1
		ORDER BY created_at, booking_id
		LIMIT $2`, ts(cutoff), limit)
	if err != nil {
		return nil, translate(err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Payment, error) {
		var (
			p      boxoffice.Payment
			id     int64
			status string
		)
		err := row.Scan(&id, &p.AuthID, &p.AmountCents, &status, &p.CreatedAt)
		p.BookingID, p.Status, p.CreatedAt = boxoffice.ID(id), boxoffice.PaymentStatus(status), p.CreatedAt.UTC()
		return p, err
	})
	return ps, translate(err)
}
