package sale

import (
	"context"
	"errors"
	"strconv"

	"github.com/boxoffice/boxoffice"
)

// JoinRequest puts a user on an event's waitlist.
type JoinRequest struct {
	EventID boxoffice.ID
	// Section and PriceTier, when set, restrict the seats the user takes.
	Section, PriceTier string
	// Quantity is how many seats the user wants together (default 1).
	Quantity       int
	IdempotencyKey string
}

// WaitlistView is a waitlist entry as its user sees it.
type WaitlistView struct {
	EntryID   boxoffice.ID
	EventID   boxoffice.ID
	Status    string
	Section   string
	PriceTier string
	Quantity  int
	// Ahead is how many waiting entries joined before this one (while it
	// waits).
	Ahead    *int
	Offers   int
	Offer    *OfferView
	JoinedAt string
	// StatusURL and EventsURL: poll, or listen (Server-Sent Events) for
	// the offer.
	StatusURL string
	EventsURL string
	Replayed  bool
}

// OfferView is an open waitlist offer: seats held for the user until
// HeldUntil; paying for the booking (PaymentURL) accepts it, releasing it
// (DELETE /bookings/{id}) declines it.
type OfferView struct {
	BookingID   boxoffice.ID
	SeatIDs     []string
	AmountCents int64
	HeldUntil   string
	PaymentURL  string
	ListingID   boxoffice.ID
}

// WaitlistURL is the status URL of a waitlist entry.
func WaitlistURL(id boxoffice.ID) string { return "/waitlist/" + id.String() }

// JoinWaitlist puts the user on the event's waitlist, in join order. A
// repeat with the same key returns the same entry. Errors: EIDEMMISSING,
// EIDEMMISMATCH, EIDEMINFLIGHT, ENOTFOUND (event), EINVALID (quantity,
// section or tier), ECONFLICT (the user is on it already), ESALECLOSED
// (the show has started).
func (s *Waitlist) JoinWaitlist(ctx context.Context, u boxoffice.User, req JoinRequest) (*WaitlistView, error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	l, err := s.Layout(ctx, req.EventID)
	if err != nil {
		return nil, err
	}
	if req.Quantity == 0 {
		req.Quantity = 1
	}
	if limit := min(s.cfg.MaxSeatsPerRequest, l.Event.TicketLimit); req.Quantity < 1 || req.Quantity > limit {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "quantity must be between 1 and %d", limit)
	}
	want := boxoffice.WaitlistEntry{Section: req.Section, PriceTier: req.PriceTier}
	fits := 0
	for _, sec := range l.Sections() {
		if want.Wants(boxoffice.Seat{Section: sec.Name, PriceTier: sec.PriceTier}) {
			fits += sec.Len()
		}
	}
	if fits < req.Quantity {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "the event has no %d seats in section %q, price tier %q", req.Quantity, req.Section, req.PriceTier)
	}
	now := s.now()
	if !now.Before(l.Event.StartsAt) {
		return nil, saleClosed(l.Event, now)
	}
	hash := requestHash("waitlist", req.EventID.String(), req.Section, req.PriceTier, strconv.Itoa(req.Quantity))
	var first CreatedEntry
	if err := s.replay(ctx, u.ID, req.IdempotencyKey, hash, &first); !errors.Is(err, errNoRecord) {
		if err != nil {
			return nil, err
		}
		v, err := s.WaitlistEntry(ctx, u, first.EntryID)
		if err != nil {
			return nil, err
		}
		v.Replayed = true
		return v, nil
	}
	id, err := s.idFor(ctx, req.EventID)
	if err != nil {
		return nil, err
	}
	e := &boxoffice.WaitlistEntry{ID: id, EventID: req.EventID, UserID: u.ID, Section: req.Section,
		PriceTier: req.PriceTier, Quantity: req.Quantity, Status: boxoffice.WaitlistWaiting, JoinedAt: now, UpdatedAt: now}
	rec, err := s.record(u.ID, req.IdempotencyKey, hash, boxoffice.OutcomeJoined, CreatedEntry{EntryID: e.ID})
	if err != nil {
		return nil, err
	}
	if err := s.store.JoinWaitlist(ctx, e, rec); err != nil {
		return nil, err
	}
	return s.waitlistView(ctx, e)
}

// CreatedEntry is what a join's idempotency record keeps (OutcomeJoined):
// the entry, whose current state a retry reads. Exported for the
// AnswerCodec that encodes it.
type CreatedEntry struct {
	EntryID boxoffice.ID
}

// WaitlistEntry returns an entry as its user (or an admin) sees it; anyone
// else gets ENOTFOUND.
func (s *Waitlist) WaitlistEntry(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*WaitlistView, error) {
	e, err := s.store.WaitlistEntry(ctx, id)
	if err != nil {
		return nil, noSuch("waitlist entry", err)
	}
	if e.UserID != u.ID && !(u.IsAdmin() && u.InScope(e.EventID)) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such waitlist entry")
	}
	return s.waitlistView(ctx, e)
}

// MyWaitlist returns the user's entries, newest first.
func (s *Waitlist) MyWaitlist(ctx context.Context, u boxoffice.User) ([]*WaitlistView, error) {
	es, err := s.store.UserWaitlist(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]*WaitlistView, 0, len(es))
	for i := range es {
		v, err := s.waitlistView(ctx, &es[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// LeaveWaitlist takes the user off the waitlist; an open offer is
// declined (its seats move on to the next entry). Leaving twice is
// harmless.
func (s *Waitlist) LeaveWaitlist(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*WaitlistView, error) {
	e, err := s.store.WaitlistEntry(ctx, id)
	if err != nil {
		return nil, noSuch("waitlist entry", err)
	}
	if e.UserID != u.ID {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no such waitlist entry")
	}
	offered := e.Status == boxoffice.WaitlistOffered
	if e, err = s.store.LeaveWaitlist(ctx, id, s.now()); err != nil {
		return nil, err
	}
	if offered {
		if _, err := s.bookings.Release(ctx, u, e.BookingID); err != nil && !isCode(err, boxoffice.ECONFLICT) {
			return nil, err
		}
	}
	return s.waitlistView(ctx, e)
}

// WaitlistLive reports whether a view is still waiting for something:
// its stream goes on while it is.
func WaitlistLive(v *WaitlistView) bool {
	return boxoffice.WaitlistStatus(v.Status).Live()
}

func (s *Waitlist) waitlistView(ctx context.Context, e *boxoffice.WaitlistEntry) (*WaitlistView, error) {
	v := &WaitlistView{EntryID: e.ID, EventID: e.EventID, Status: string(e.Status), Section: e.Section,
		PriceTier: e.PriceTier, Quantity: e.Quantity, Offers: e.Offers, JoinedAt: e.JoinedAt.UTC().Format(TimeFormat),
		StatusURL: WaitlistURL(e.ID), EventsURL: WaitlistURL(e.ID) + "/events"}
	switch e.Status {
	case boxoffice.WaitlistWaiting:
		n, err := s.store.WaitlistAhead(ctx, e.EventID, e.ID)
		if err != nil {
			return nil, err
		}
		v.Ahead = &n
	case boxoffice.WaitlistOffered:
		b, err := s.store.Booking(ctx, e.BookingID)
		if err != nil {
			return nil, err
		}
		if b.Live(s.now()) {
			v.Offer = &OfferView{BookingID: b.ID, SeatIDs: b.SeatIDs, AmountCents: b.AmountCents,
				HeldUntil: b.HeldUntil.UTC().Format(TimeFormat), PaymentURL: PaymentURL(b.ID), ListingID: b.ListingID}
		} else {
			// Ran out; the returns pass has not written it down yet.
			v.Status = string(boxoffice.WaitlistLapsed)
		}
	}
	return v, nil
}
