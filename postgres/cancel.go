package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// CancelBooking moves a confirmed booking to cancelled at c.Now in one
// transaction: its tickets become void (cancelled), its payment
// refund_pending, and it writes the booking.cancelled event, the seat
// return and, when given, the idempotency record. It returns the booking as
// it is afterwards, with its tickets.
//
// The booking row is locked first (FOR UPDATE), so a second cancel waits
// and then finds it cancelled; then its tickets, in id order (the package's
// lock order: booking, ticket, listing), so a resale or a check-in of one
// of them either committed before, and is seen, or waits until this one
// is done. The active listings are read by a statement of their own, after
// the tickets' lock is held, so it sees a listing created while it waited.
//
// Errors: ENOTFOUND; ECONFLICT when the booking is not confirmed, is a
// resale purchase, or has a ticket that is no longer valid (resold),
// checked in or listed; EIDEMINFLIGHT when the idempotency key is taken. A
// booking cancelled before is returned as it is, with nothing written.
func (s *Store) CancelBooking(ctx context.Context, c boxoffice.CancelBooking) (*boxoffice.Booking, error) {
	now := ts(c.Now)
	var out *boxoffice.Booking
	err := s.transact(ctx, func(tx pgx.Tx) error {
		b, err := lockBooking(ctx, tx, c.BookingID)
		if err != nil {
			return err
		}
		switch b.Status {
		case boxoffice.BookingCancelled:
			b.Tickets, err = bookingTickets(ctx, tx, b)
			out = b
			return err
		case boxoffice.BookingConfirmed:
		default:
			return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %s is %s: only a confirmed booking can be cancelled", b.ID, b.Status)
		}
		if b.ListingID != 0 {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "booking %s is a resale purchase: it cannot be cancelled", b.ID)
		}

		checks := &pgx.Batch{}
		checks.Queue(`
			SELECT id, status, checked_in_at IS NOT NULL
			FROM tickets WHERE event_id = $2 AND booking_id = $1
			ORDER BY id
			FOR UPDATE`, int64(b.ID), int64(b.EventID))
		checks.Queue(`
			SELECT EXISTS (
			    SELECT 1 FROM tickets t JOIN listings l ON l.event_id = t.event_id AND l.ticket_id = t.id
			    WHERE t.event_id = $2 AND t.booking_id = $1 AND l.status = 'active')`, int64(b.ID), int64(b.EventID))
		br := tx.SendBatch(ctx, checks)
		defer br.Close()
		var (
			id                int64
			status            string
			checkedIn, listed bool
		)
		rows, err := br.Query()
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&id, &status, &checkedIn}, func() error {
			switch {
			case status != string(boxoffice.TicketValid):
				return boxoffice.Errorf(boxoffice.ECONFLICT, "ticket %s of booking %s was resold", boxoffice.ID(id), b.ID)
			case checkedIn:
				return boxoffice.Errorf(boxoffice.ECONFLICT, "ticket %s of booking %s was checked in", boxoffice.ID(id), b.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&listed); err != nil {
			return err
		}
		if listed {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "a ticket of booking %s is listed for resale: withdraw the listing first", b.ID)
		}
		if err := br.Close(); err != nil {
			return err
		}

		b.Status, b.UpdatedAt = boxoffice.BookingCancelled, now
		batch := &pgx.Batch{}
		ev := int64(b.EventID)
		batch.Queue(`UPDATE tickets SET status = 'void', void_reason = 'cancelled' WHERE event_id = $2 AND booking_id = $1 AND status = 'valid'`, int64(b.ID), ev)
		batch.Queue(`UPDATE payments SET status = 'refund_pending' WHERE event_id = $2 AND booking_id = $1 AND status IN ('authorized', 'captured')`, int64(b.ID), ev)
		batch.Queue(`UPDATE bookings SET status = 'cancelled', updated_at = $2 WHERE event_id = $3 AND id = $1`, int64(b.ID), now, ev)
		if err := queueEvent(batch, boxoffice.TopicBookingCancelled, b, now); err != nil {
			return err
		}
		queueSeatReturn(batch, b)
		if c.Idempotency != nil {
			queueIdempotency(batch, c.Idempotency)
		}
		wr := tx.SendBatch(ctx, batch)
		defer wr.Close()
		for range 3 { // the tickets, the payment, the booking
			if _, err := wr.Exec(); err != nil {
				return err
			}
		}
		if _, err := wr.Exec(); err != nil { // the event
			return eventErr(err)
		}
		if _, err := wr.Exec(); err != nil { // the return
			return err
		}
		if err := idempotencyResult(wr, c.Idempotency); err != nil {
			return err
		}
		if err := wr.Close(); err != nil {
			return err
		}
		if b.Tickets, err = bookingTickets(ctx, tx, b); err != nil {
			return err
		}
		out = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
