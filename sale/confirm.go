package sale

import (
	"context"
	"errors"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/inflight"
)

// ConfirmRequest pays for a pending booking.
type ConfirmRequest struct {
	BookingID      boxoffice.ID
	PaymentToken   string
	IdempotencyKey string
}

// TicketView is a ticket as its owner sees it. A void ticket has no code:
// it admits nobody.
type TicketView struct {
	TicketID    boxoffice.ID
	EventID     boxoffice.ID
	BookingID   boxoffice.ID
	SeatID      string
	Code        string
	Status      string
	VoidReason  string
	CheckedInAt string
	// ListingID is the ticket's active resale listing.
	ListingID boxoffice.ID
}

// ticketView renders a ticket for its owner.
func ticketView(t *boxoffice.Ticket) TicketView {
	v := TicketView{TicketID: t.ID, EventID: t.EventID, BookingID: t.BookingID, SeatID: t.SeatID, Status: string(t.Status),
		VoidReason: t.VoidReason, ListingID: t.ListingID}
	if t.Status == boxoffice.TicketValid {
		v.Code = t.Code
	}
	if !t.CheckedInAt.IsZero() {
		v.CheckedInAt = t.CheckedInAt.UTC().Format(TimeFormat)
	}
	return v
}

// Confirmation is the answer to a successful confirm, and to every repeat.
type Confirmation struct {
	BookingID        boxoffice.ID
	ConfirmationCode string
	AmountCents      int64
	Tickets          []TicketView
	Replayed         bool
}

func confirmationOf(b *boxoffice.Booking) *Confirmation {
	c := &Confirmation{BookingID: b.ID, ConfirmationCode: b.ConfirmationCode, AmountCents: b.AmountCents, Tickets: []TicketView{}}
	for i := range b.Tickets {
		c.Tickets = append(c.Tickets, ticketView(&b.Tickets[i]))
	}
	return c
}

// Confirm charges the payment token and issues the tickets of a pending
// booking that is still this user's hold. The order is: check the hold,
// authorize, write tickets (the database is the arbiter), capture; any
// failure after authorizing voids, so a booking that lost its seats is
// never charged. A repeat returns the same confirmation.
//
// Errors: EIDEMMISSING, EIDEMMISMATCH, EIDEMINFLIGHT (another confirm of
// this booking is running), ENOTFOUND (no such booking, or not the user's),
// ECONFLICT (released), EHOLDLOST (expired or taken over: nothing charged),
// EPAYMENTDECLINED (the hold stays), EPAYMENTFAILED, ESEATTAKEN,
// EUNAVAILABLE.
func (s *Bookings) Confirm(ctx context.Context, u boxoffice.User, req ConfirmRequest) (_ *Confirmation, err error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	if req.PaymentToken == "" {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "payment_token is required")
	}
	if len(req.PaymentToken) > 255 {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "payment_token is too long")
	}
	// One confirm of a booking at a time, whatever key it carries. The
	// lease comes first, so the booking is read once, under it: a confirm
	// that waited for another (a double click with two keys) reads the
	// other's outcome and answers with it instead of paying again. It is
	// the user's lease of the booking: someone else's confirm of it, which
	// fails as not found, cannot hold its owner up.
	release, busyErr := s.leases.TryLease(ctx, confirmLease(req.BookingID, u.ID), s.cfg.PaymentTimeout+10*time.Second)
	busy := isCode(busyErr, boxoffice.EIDEMINFLIGHT)
	if busyErr != nil && !busy {
		return nil, busyErr
	}
	if !busy {
		defer func() {
			if err != nil {
				// Released before the answer: a second attempt to pay,
				// sent at once after a failed one (another card), must
				// find the lease free.
				release()
				return
			}
			// After an outcome is written the answer does not wait for
			// the release's round trip: a confirm that meets the lease
			// still held reads that outcome (below) and answers with it.
			go release()
		}()
	}
	// The booking and the key's record are read at once: two reads, one
	// wait. Without the lease they are read too: a retry, or a second
	// click, that comes while the lease is held after the outcome was
	// written (another confirm finishing, a crashed process's lease
	// running out) gets that outcome, not a 409; only a confirm that may
	// still be paying is refused.
	hash := requestHash("confirm", req.BookingID.String(), req.PaymentToken)
	var out Confirmation
	replayed := make(chan error, 1)
	go func() { replayed <- s.replay(ctx, u.ID, req.IdempotencyKey, hash, &out) }()
	b, err := ownBooking(ctx, s.store, u, req.BookingID)
	rerr := <-replayed
	if err != nil {
		return nil, err
	}
	if !errors.Is(rerr, errNoRecord) {
		if rerr != nil {
			return nil, rerr
		}
		out.Replayed = true
		return &out, nil
	}
	if b.Status == boxoffice.BookingConfirmed {
		return s.confirmed(ctx, u, req, hash, b)
	}
	if busy {
		return nil, busyErr
	}
	if err := confirmable(b, s.now()); err != nil {
		return nil, err
	}
	if err := s.holds.Verify(ctx, b.EventID, b.SeatIDs, b.ID, b.Fence); err != nil {
		return nil, err // lost before paying: nothing charged
	}

	// The gateway may take seconds: no place among the requests handled
	// at once is kept for that.
	inflight.Leave(ctx)
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PaymentTimeout)
	auth, err := s.payments.Authorize(pctx, boxoffice.PaymentRequest{
		Token: req.PaymentToken, AmountCents: b.AmountCents, Currency: s.cfg.Currency,
		IdempotencyKey: b.ID.String() + ":" + req.IdempotencyKey,
	})
	cancel()
	if err != nil {
		return nil, err
	}
	// From here on every failure must void the authorization.
	done, err := s.issue(ctx, u, req, hash, b, auth)
	if err != nil {
		s.void(ctx, auth.ID, b.ID)
		return nil, err
	}
	if done.PaymentAuthID != auth.ID {
		// Confirmed meanwhile by another authorization: ours must not stick.
		s.void(ctx, auth.ID, b.ID)
		return confirmationOf(done), nil
	}
	// The tickets are written: the answer need not wait for the capture.
	s.captures.start(done.ID, func() { s.capture(ctx, done.EventID, done.ID, auth.ID) })
	return confirmationOf(done), nil
}

// confirmLease is the key of a user's lease of a booking's confirm.
func confirmLease(bookingID boxoffice.ID, userID string) string {
	return "confirm\x00" + bookingID.String() + "\x00" + userID
}

// issue writes tickets, payment and idempotency record in one transaction
// after the (possibly slow) authorization. The lock layer is not asked
// again: the store confirms only a booking still pending, under its fence,
// before its hold's end, with no newer live booking on its seats
// (boxoffice.ConfirmBooking), which is every way a hold is lost short of
// the lock store losing it, and a Verify just before the write would only
// narrow that window.
func (s *Bookings) issue(ctx context.Context, u boxoffice.User, req ConfirmRequest, hash string, b *boxoffice.Booking, auth boxoffice.Authorization) (*boxoffice.Booking, error) {
	now := s.now()
	if err := confirmable(b, now); err != nil {
		return nil, err
	}
	code := "BX-" + randomCode(5)
	tickets := make([]boxoffice.Ticket, len(b.SeatIDs))
	for i, seat := range b.SeatIDs {
		id, err := s.idFor(ctx, b.EventID)
		if err != nil {
			return nil, err
		}
		tickets[i] = boxoffice.Ticket{ID: id, EventID: b.EventID, BookingID: b.ID, SeatID: seat,
			UserID: b.UserID, Code: randomCode(10), Status: boxoffice.TicketValid, IssuedAt: now}
	}
	preview := &boxoffice.Booking{ID: b.ID, ConfirmationCode: code, AmountCents: b.AmountCents, Tickets: tickets}
	rec, err := s.record(u.ID, req.IdempotencyKey, hash, boxoffice.OutcomeConfirmed, confirmationOf(preview))
	if err != nil {
		return nil, err
	}
	return s.store.ConfirmBooking(ctx, boxoffice.ConfirmBooking{
		BookingID: b.ID, EventID: b.EventID, Fence: b.Fence, Now: now, Code: code, Tickets: tickets,
		Payment:     boxoffice.Payment{EventID: b.EventID, BookingID: b.ID, AuthID: auth.ID, AmountCents: auth.AmountCents, Status: boxoffice.PaymentAuthorized, CreatedAt: now},
		Idempotency: rec,
	})
}

// confirmed answers a confirm of a booking that is already confirmed, and
// records the answer under this key so its retries replay it.
func (s *Bookings) confirmed(ctx context.Context, u boxoffice.User, req ConfirmRequest, hash string, b *boxoffice.Booking) (*Confirmation, error) {
	c := confirmationOf(b)
	if rec, err := s.record(u.ID, req.IdempotencyKey, hash, boxoffice.OutcomeConfirmed, c); err == nil {
		if err := s.store.PutIdempotency(ctx, rec); err != nil && !isCode(err, boxoffice.EIDEMINFLIGHT) {
			s.log.WarnContext(ctx, "record idempotent confirm", "booking", b.ID, "err", err)
		}
	}
	return c, nil
}

// confirmable says whether a booking may still be paid for at now.
func confirmable(b *boxoffice.Booking, now time.Time) error {
	switch b.EffectiveStatus(now) {
	case boxoffice.BookingPending:
		return nil
	case boxoffice.BookingExpired:
		return boxoffice.Errorf(boxoffice.EHOLDLOST, "the hold on this booking expired; nothing was charged")
	case boxoffice.BookingConfirmed:
		return boxoffice.Errorf(boxoffice.ECONFLICT, "the booking is already confirmed")
	default:
		return boxoffice.Errorf(boxoffice.ECONFLICT, "the booking was %s", b.Status)
	}
}

func (s *core) void(ctx context.Context, authID string, bookingID boxoffice.ID) {
	ctx, cancel := detach(ctx)
	defer cancel()
	if err := s.payments.Void(ctx, authID); err != nil {
		s.log.ErrorContext(ctx, "void authorization", "booking", bookingID, "auth", authID, "err", err)
	}
}

// capture takes the money after the tickets are written, most often after
// the confirm's answer (capture.go). A failure is left to the reconciler,
// which finds the payment still authorized.
func (s *Bookings) capture(ctx context.Context, eventID, bookingID boxoffice.ID, authID string) {
	ctx, cancel := detach(ctx)
	defer cancel()
	if err := s.payments.Capture(ctx, authID); err != nil {
		s.log.WarnContext(ctx, "capture payment; the reconciler will retry", "booking", bookingID, "err", err)
		return
	}
	if err := s.store.MarkCaptured(ctx, eventID, bookingID); err != nil {
		s.log.WarnContext(ctx, "mark payment captured; the reconciler will retry", "booking", bookingID, "err", err)
	}
}
