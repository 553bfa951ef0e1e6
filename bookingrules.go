package boxoffice

// The rules of CreateBooking, CreateBookings and ConfirmBooking that need
// no database. Every Store calls these, each at the place the port's order
// of errors (see BookingStore) gives it, so that the stores keep one set
// of rules, one order and one wording; each store keeps only its SQL and
// the translation of its database's errors.

// Validate checks the shape of a new booking, the first check of
// CreateBooking and CreateBookings, before any database: a booking of at
// least one seat; a resale purchase of exactly one seat (the listing's).
// EINVALID otherwise. A booking may be both a resale purchase and a
// waitlist offer: a listing whose buyer did not pay is offered to the
// waitlist first.
func (nb NewBooking) Validate() error {
	b := nb.Booking
	switch {
	case b == nil || len(b.SeatIDs) == 0:
		return Errorf(EINVALID, "a booking needs at least one seat")
	case b.ListingID != 0 && len(b.SeatIDs) != 1:
		return Errorf(EINVALID, "a resale purchase is of exactly one seat, the listing's")
	}
	return nil
}

// ValidateForBatch is Validate for CreateBookings, which books plain
// bookings only: a resale purchase or a waitlist offer locks rows of its
// own and is booked alone (CreateBooking); in a batch it is EINVALID.
func (nb NewBooking) ValidateForBatch() error {
	if err := nb.Validate(); err != nil {
		return err
	}
	if nb.Booking.ListingID != 0 || nb.Booking.WaitlistEntryID != 0 {
		return Errorf(EINVALID, "a resale purchase or a waitlist offer is booked on its own")
	}
	return nil
}

// CheckLimit is the per-user ticket limit. taken is the user's seats for
// the event as the store counted them inside its transaction (their valid
// tickets and the seats of their pending bookings live at
// nb.Booking.CreatedAt, and, in a batch, those of the batch's earlier
// winners); ELIMIT when this booking's seats would take the user past
// nb.TicketLimit.
func (nb NewBooking) CheckLimit(taken int) error {
	if taken+len(nb.Booking.SeatIDs) > nb.TicketLimit {
		return Errorf(ELIMIT, "at most %d tickets per user for this event: %d already held or bought", nb.TicketLimit, taken)
	}
	return nil
}

// CheckSeatsOnce refuses (EINVALID) a booking that names a seat twice. It
// is CreateBooking's last check, after the seats not in the layout: a
// store that leaves the repeat to a unique constraint answers the
// constraint's violation with it.
func (nb NewBooking) CheckSeatsOnce() error {
	seen := make(map[string]bool, len(nb.Booking.SeatIDs))
	for _, seat := range nb.Booking.SeatIDs {
		if seen[seat] {
			return Errorf(EINVALID, "a booking lists a seat twice")
		}
		seen[seat] = true
	}
	return nil
}

// ConfirmPlan is how a store carries out a ConfirmBooking, as
// ConfirmBooking.Check works it out from the booking.
type ConfirmPlan struct {
	// AlreadyConfirmed: the booking was confirmed before. The store
	// returns it as it is, with its tickets, and writes nothing.
	AlreadyConfirmed bool
	// Tickets to issue, in the order of the booking's seats (the order a
	// booking's tickets are read in): each with its ID, SeatID and Code
	// from c and the booking's event, id and user, valid, issued at c.Now.
	Tickets []Ticket
	// Payment to record: authorized, c.Payment's AuthID and amount, for
	// the booking, created at c.Payment.CreatedAt or, when that is zero,
	// at c.Now.
	Payment Payment
}

// Check applies the rules of ConfirmBooking that need no database to b,
// the booking the store has read (and locked) for c, in the port's order:
//
//  0. a booking of an event other than c.EventID (when set) is ENOTFOUND;
//  1. a booking already confirmed is answered as it is, whatever c says
//     (a retry, or a second payment the caller must void): AlreadyConfirmed,
//     nil error;
//  2. a booking that is not pending (released, expired, cancelled) is
//     ECONFLICT;
//  3. c.Fence other than b's is EHOLDLOST (the hold was taken over);
//  4. a hold that ran out at c.Now (b.HeldUntil <= c.Now, see
//     Booking.Live) is EHOLDLOST;
//  5. tickets that lack an id or a code, name a seat b does not hold or
//     name one twice, or leave a seat of b without a ticket are EINVALID;
//  6. a payment without an authorization id is EINVALID.
//
// What needs the database comes after, in the store: the fencing check
// against newer holds (EHOLDLOST), a resale purchase's listing and
// ticket (ECONFLICT), a seat already sold (ESEATTAKEN), a ticket id or
// code in use (ECONFLICT), a taken idempotency key (EIDEMINFLIGHT).
//
// A store that keeps times at a coarser precision than c.Now rounds c.Now
// before the call, so that the plan's times are the ones it writes.
func (c ConfirmBooking) Check(b *Booking) (ConfirmPlan, error) {
	if c.EventID != 0 && c.EventID != b.EventID {
		return ConfirmPlan{}, Errorf(ENOTFOUND, "event %s has no booking %s", c.EventID, b.ID)
	}
	switch b.Status {
	case BookingConfirmed:
		return ConfirmPlan{AlreadyConfirmed: true}, nil
	case BookingPending:
	default:
		return ConfirmPlan{}, Errorf(ECONFLICT, "booking %s is %s", b.ID, b.Status)
	}
	if c.Fence != b.Fence {
		return ConfirmPlan{}, Errorf(EHOLDLOST, "booking %s: the hold was taken over", b.ID)
	}
	if !c.Now.Before(b.HeldUntil) {
		return ConfirmPlan{}, Errorf(EHOLDLOST, "booking %s: the hold ran out", b.ID)
	}
	tickets, err := c.tickets(b)
	if err != nil {
		return ConfirmPlan{}, err
	}
	if c.Payment.AuthID == "" {
		return ConfirmPlan{}, Errorf(EINVALID, "booking %s: the payment has no authorization id", b.ID)
	}
	paidAt := c.Payment.CreatedAt
	if paidAt.IsZero() {
		paidAt = c.Now
	}
	return ConfirmPlan{
		Tickets: tickets,
		Payment: Payment{EventID: b.EventID, BookingID: b.ID, AuthID: c.Payment.AuthID, AmountCents: c.Payment.AmountCents,
			Status: PaymentAuthorized, CreatedAt: paidAt},
	}, nil
}

// tickets checks that c.Tickets name each seat of b exactly once, each
// with an id and a code, and returns the tickets to issue in b's seat
// order.
func (c ConfirmBooking) tickets(b *Booking) ([]Ticket, error) {
	place := make(map[string]int, len(b.SeatIDs)) // seat -> its index in b.SeatIDs
	for i, seat := range b.SeatIDs {
		place[seat] = i
	}
	out := make([]Ticket, len(b.SeatIDs))
	for _, t := range c.Tickets {
		if t.ID <= 0 || t.Code == "" {
			return nil, Errorf(EINVALID, "booking %s: every ticket needs an id and a code", b.ID)
		}
		i, ok := place[t.SeatID]
		if !ok {
			return nil, &Error{Code: EINVALID,
				Message: "a ticket names a seat the booking does not hold, or names it twice", Seats: []string{t.SeatID}}
		}
		delete(place, t.SeatID)
		out[i] = Ticket{ID: t.ID, EventID: b.EventID, BookingID: b.ID, SeatID: t.SeatID,
			UserID: b.UserID, Code: t.Code, Status: TicketValid, IssuedAt: c.Now}
	}
	if len(place) > 0 {
		return nil, Errorf(EINVALID, "booking %s: %d of its seats have no ticket", b.ID, len(place))
	}
	return out, nil
}
