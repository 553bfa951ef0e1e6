package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/boxoffice/boxoffice"
)

// MarkCaptured records that a booking's payment was captured, at the
// store's clock. Marking it again is harmless, and so is marking a payment
// owed a refund or refunded (a capture that comes after a cancellation):
// its status stays, so the refund is not forgotten. Errors: ENOTFOUND
// when the booking has no payment or is not eventID's.
func (s *Store) MarkCaptured(ctx context.Context, eventID, bookingID boxoffice.ID) error {
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE payments
			SET status = CASE status WHEN 'authorized' THEN 'captured' ELSE status END,
			    captured_at = coalesce(captured_at, ?)
			WHERE booking_id = ? AND EXISTS (SELECT 1 FROM bookings WHERE id = payments.booking_id AND event_id = ?)`,
			millis(s.now()), bookingID, eventID)
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

// Payment returns a booking's payment, or ENOTFOUND.
func (s *Store) Payment(ctx context.Context, bookingID boxoffice.ID) (*boxoffice.Payment, error) {
	p, err := scanPayment(s.queryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE booking_id = ?`, bookingID))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "booking %d has no payment", bookingID)
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return &p, nil
}

// MarkRefunded records that a refund_pending payment was refunded at now.
// A payment refunded before is left as it is. Errors: ENOTFOUND when the
// booking has no payment, ECONFLICT when its payment is owed no refund
// (authorized or captured: the booking was not cancelled).
func (s *Store) MarkRefunded(ctx context.Context, bookingID boxoffice.ID, now time.Time) error {
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		var status boxoffice.PaymentStatus
		err := tx.QueryRowContext(ctx, `
			UPDATE payments
			SET status = 'refunded', refunded_at = coalesce(refunded_at, ?)
			WHERE booking_id = ? AND status IN ('refund_pending', 'refunded')
			RETURNING status`,
			millis(now), bookingID).Scan(&status)
		if err != sql.ErrNoRows {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT status FROM payments WHERE booking_id = ?`, bookingID).Scan(&status); err == sql.ErrNoRows {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "booking %d has no payment", bookingID)
		} else if err != nil {
			return err
		}
		return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %d: the payment is %s, not owed a refund", bookingID, status)
	})
}

// RefundsDue returns up to limit payments in refund_pending, oldest
// payment first (created_at, then booking id).
func (s *Store) RefundsDue(ctx context.Context, limit int) ([]boxoffice.Payment, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `
		SELECT `+paymentColumns+`
		FROM payments
		WHERE status = 'refund_pending'
		ORDER BY created_at, booking_id
		LIMIT ?`, limit)
	if err != nil {
		return nil, translate(err, "database")
	}
	ps, err := collect(rows, scanPayment)
	return ps, translate(err, "database")
}
