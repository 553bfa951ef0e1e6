package sale

import (
	"context"
	"errors"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/inflight"
)

// CancelRequest cancels a confirmed booking for a refund.
type CancelRequest struct {
	BookingID      boxoffice.ID
	IdempotencyKey string
}

// Cancellation is the answer to a cancel, and to every repeat.
type Cancellation struct {
	BookingID boxoffice.ID
	Status    string
	// RefundCents is what goes back to the card; RefundStatus is
	// "refunded", or "pending" when the gateway did not confirm it yet
	// (the reconciler retries until it does).
	RefundCents  int64
	RefundStatus string
	Replayed     bool
}

// Cancel cancels the user's confirmed booking under the event's refund
// policy: its tickets are voided, its payment refunded, and its seats come
// back (to the waitlist first). The order is: the database first (tickets
// void, refund owed, seats returned, one transaction), then the gateway's
// refund, which the reconciler retries if it fails; so a ticket is never
// valid without its payment, and a refund is never lost. A repeat returns
// the first answer; cancelling a cancelled booking returns it as it is.
//
// Errors: EIDEMMISSING, EIDEMMISMATCH, EIDEMINFLIGHT, ENOTFOUND (not the
// user's), ECANCELCLOSED (the policy does not allow it now), ECONFLICT
// (not confirmed, a resale purchase, or a ticket resold, checked in or
// listed), EUNAVAILABLE.
func (s *Tickets) Cancel(ctx context.Context, u boxoffice.User, req CancelRequest) (*Cancellation, error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	b, err := ownBooking(ctx, s.store, u, req.BookingID)
	if err != nil {
		return nil, err
	}
	hash := requestHash("cancel", req.BookingID.String())
	var first Cancellation
	if err := s.replay(ctx, u.ID, req.IdempotencyKey, hash, &first); !errors.Is(err, errNoRecord) {
		if err != nil {
			return nil, err
		}
		// The same cancellation, with where its refund is now.
		c, err := s.cancellation(ctx, b)
		if err != nil {
			return nil, err
		}
		c.Replayed = true
		return c, nil
	}
	if b.Status == boxoffice.BookingCancelled {
		return s.cancellation(ctx, b)
	}
	if b.Status != boxoffice.BookingConfirmed {
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "only a confirmed booking can be cancelled; this one is %s", b.EffectiveStatus(s.now()))
	}
	if b.ListingID != 0 {
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "a resale purchase cannot be cancelled; list the ticket for resale instead")
	}
	l, err := s.Layout(ctx, b.EventID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if !l.Event.RefundOpen(now) {
		if !l.Event.Refundable {
			return nil, boxoffice.Errorf(boxoffice.ECANCELCLOSED, "this event's tickets are not refundable")
		}
		return nil, boxoffice.Errorf(boxoffice.ECANCELCLOSED, "cancellations closed %d hours before the show, at %s",
			l.Event.RefundCutoffHours, l.Event.StartsAt.Add(-time.Duration(l.Event.RefundCutoffHours)*time.Hour).UTC().Format(time.RFC3339))
	}
	release, err := s.leases.TryLease(ctx, "cancel\x00"+b.ID.String(), s.cfg.LeaseTTL())
	if err != nil {
		return nil, err
	}
	defer release()
	// A capture this process runs after the confirm's answer goes first:
	// the refund then finds the money taken (capture.go).
	s.captures.wait(ctx, b.ID)

	// Hold the seats under the booking's id before they stop being sold,
	// so that the returns pass hands them to the waitlist before anyone
	// else can take them. Best effort: a seat it cannot hold now goes to
	// whoever holds it, and the sale is cancelled all the same.
	if _, err := s.holds.Acquire(ctx, boxoffice.HoldRequest{EventID: b.EventID, SeatIDs: b.SeatIDs, Owner: b.ID,
		TTL: s.cfg.HandoverGrace}); err != nil {
		s.log.WarnContext(ctx, "hold a cancelled booking's seats for the waitlist", "booking", b.ID, "err", err)
	}
	preview := &Cancellation{BookingID: b.ID, Status: string(boxoffice.BookingCancelled), RefundCents: b.AmountCents,
		RefundStatus: "pending"}
	rec, err := s.record(u.ID, req.IdempotencyKey, hash, boxoffice.OutcomeCancelled, preview)
	if err != nil {
		return nil, err
	}
	nb, err := s.store.CancelBooking(ctx, boxoffice.CancelBooking{BookingID: b.ID, Now: now, Idempotency: rec})
	if err != nil {
		s.releaseHold(ctx, b.EventID, b.SeatIDs, b.ID)
		return nil, err
	}
	s.returns.returnSeats(ctx, nb)
	if nb.Status != boxoffice.BookingCancelled {
		return nil, boxoffice.Errorf(boxoffice.EINTERNAL, "cancel left the booking %s", nb.Status)
	}
	return s.cancellation(ctx, nb)
}

// cancellation refunds a cancelled booking if it is still owed and says
// where the money is.
func (s *Tickets) cancellation(ctx context.Context, b *boxoffice.Booking) (*Cancellation, error) {
	c := &Cancellation{BookingID: b.ID, Status: string(b.Status), RefundCents: b.AmountCents, RefundStatus: "pending"}
	p, err := s.store.Payment(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	if p.Status == boxoffice.PaymentRefundPending {
		if err := s.refund(ctx, *p); err != nil {
			s.log.WarnContext(ctx, "refund; the reconciler will retry", "booking", b.ID, "err", err)
			return c, nil
		}
	}
	c.RefundStatus = "refunded"
	return c, nil
}

// refund pays back a cancelled booking's payment at the gateway, keyed by
// the booking so that repeats refund once, and records it.
func (s *Tickets) refund(ctx context.Context, p boxoffice.Payment) error {
	inflight.Leave(ctx) // the gateway may take seconds
	ctx, cancel := detach(ctx)
	defer cancel()
	if err := s.payments.Refund(ctx, p.AuthID, p.AmountCents, "refund:"+p.BookingID.String()); err != nil {
		return err
	}
	return s.store.MarkRefunded(ctx, p.BookingID, s.now())
}
