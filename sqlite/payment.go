package sqlite

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
)

// MarkCaptured records that a booking's payment was captured, at the
// store's clock. Marking it again is harmless. Errors: ENOTFOUND when the
// booking has no payment.
func (s *Store) MarkCaptured(ctx context.Context, bookingID boxoffice.ID) error {
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE payments SET status = 'captured', captured_at = coalesce(captured_at, ?)
			WHERE booking_id = ?`,
			millis(s.now()), bookingID)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "booking %d has no payment", bookingID)
		}
		return nil
	})
}

// UncapturedPayments returns up to limit payments still authorized that
// were recorded before cutoff (created_at < cutoff), oldest first.
func (s *Store) UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]boxoffice.Payment, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `
		SELECT `+paymentColumns+`
		FROM payments
		WHERE status = 'authorized' AND created_at < ?
		ORDER BY created_at, booking_id
		LIMIT ?`, millis(cutoff), limit)
	if err != nil {
		return nil, translate(err, "database")
	}
	ps, err := collect(rows, scanPayment)
	return ps, translate(err, "database")
}
