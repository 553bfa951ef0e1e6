package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// Payment returns a booking's payment, or ENOTFOUND.
func (s *Store) Payment(ctx context.Context, bookingID boxoffice.ID) (*boxoffice.Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, `
		SELECT `+paymentColumns+` FROM payments WHERE booking_id = $1`, int64(bookingID)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no payment for booking %s", bookingID)
	}
	if err != nil {
		return nil, translate(err)
	}
	return &p, nil
}

// MarkCaptured records that a booking's payment was captured, at s.Now.
// Marking it again changes nothing, and neither does a capture reported
// after the booking was cancelled: its refund_pending (or refunded) status
// is kept, so the refund is not forgotten. ENOTFOUND if the booking has no
// payment or is not eventID's.
func (s *Store) MarkCaptured(ctx context.Context, eventID, bookingID boxoffice.ID) error {
	notFound, err := s.captures.Call(ctx, bookingRef{eventID, bookingID})
	if err != nil {
		return err
	}
	return notFound
}

// markCapturedSQL is MarkCaptured's statement ($1 the booking, $2 now, $3
// its event). The event names the partition: by the booking alone it was
// a probe of every month's index. Pinned by TestHotPathsReadOnlyTheirRows.
const markCapturedSQL = `
	UPDATE payments
	SET status = CASE WHEN status = 'authorized' THEN 'captured' ELSE status END,
	    captured_at = coalesce(captured_at, $2)
	WHERE event_id = $3 AND booking_id = $1`

// bookingRef names a booking with its event, the partition key.
type bookingRef struct{ event, id boxoffice.ID }

// markCaptured is MarkCaptured for the combiner: the captures of
// concurrent confirms in one round trip and one commit (a batch of
// single-row statements: one statement for many, with = ANY, became a
// sequential scan of the payments under a generic plan).
func (s *Store) markCaptured(ctx context.Context, refs []bookingRef) ([]error, error) {
	now := ts(s.Now())
	batch := &pgx.Batch{}
	for _, r := range refs {
		batch.Queue(markCapturedSQL, int64(r.id), now, int64(r.event))
	}
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	errs := make([]error, len(refs))
	for i, r := range refs {
		tag, err := br.Exec()
		if err != nil {
			return nil, translate(err)
		}
		if tag.RowsAffected() == 0 {
			errs[i] = boxoffice.Errorf(boxoffice.ENOTFOUND, "no payment for booking %s of event %s", r.id, r.event)
		}
	}
	if err := br.Close(); err != nil {
		return nil, translate(err)
	}
	return errs, nil
}

// UncapturedPayments returns up to limit payments still authorized that
// were recorded before cutoff, oldest first.
func (s *Store) UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]boxoffice.Payment, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.payments(ctx, `
		SELECT `+paymentColumns+`
		FROM payments
		WHERE status = 'authorized' AND created_at < $1
		ORDER BY created_at, booking_id
		LIMIT $2`, ts(cutoff), limit)
}

// MarkRefunded records that a refund_pending payment was refunded at now.
// A payment refunded before is left as it is. Errors: ENOTFOUND if the
// booking has no payment, ECONFLICT if its payment owes no refund
// (authorized or captured: the booking was not cancelled).
func (s *Store) MarkRefunded(ctx context.Context, bookingID boxoffice.ID, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE payments SET status = 'refunded', refunded_at = $2
		WHERE booking_id = $1 AND status = 'refund_pending'`, int64(bookingID), ts(now))
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	p, err := s.Payment(ctx, bookingID)
	switch {
	case err != nil:
		return err
	case p.Status == boxoffice.PaymentRefunded:
		return nil
	}
	return boxoffice.Errorf(boxoffice.ECONFLICT, "the payment of booking %s is %s: no refund is owed", bookingID, p.Status)
}

// RefundsDue returns up to limit payments in refund_pending, oldest
// payment first (by CreatedAt, then booking ID).
func (s *Store) RefundsDue(ctx context.Context, limit int) ([]boxoffice.Payment, error) {
	if limit <= 0 {
		return nil, nil
	}
	return s.payments(ctx, `
		SELECT `+paymentColumns+`
		FROM payments
		WHERE status = 'refund_pending'
		ORDER BY created_at, booking_id
		LIMIT $1`, limit)
}

func (s *Store) payments(ctx context.Context, sql string, args ...any) ([]boxoffice.Payment, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, translate(err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.Payment, error) { return scanPayment(row) })
	return ps, translate(err)
}

const paymentColumns = `event_id, booking_id, auth_id, amount_cents, status, created_at`

func scanPayment(row pgx.Row) (boxoffice.Payment, error) {
	var (
		p      boxoffice.Payment
		event  int64
		id     int64
		status string
	)
	err := row.Scan(&event, &id, &p.AuthID, &p.AmountCents, &status, &p.CreatedAt)
	p.EventID, p.BookingID = boxoffice.ID(event), boxoffice.ID(id)
	p.Status, p.CreatedAt = boxoffice.PaymentStatus(status), p.CreatedAt.UTC()
	return p, err
}
