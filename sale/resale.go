package sale

import (
	"context"
	"errors"
	"strconv"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
)

// ListRequest puts a ticket on the resale market.
type ListRequest struct {
	TicketID       boxoffice.ID
	PriceCents     int64
	IdempotencyKey string
}

// ListingView is a resale listing as anyone sees it.
type ListingView struct {
	ListingID  boxoffice.ID
	EventID    boxoffice.ID
	SeatID     string
	Section    string
	Row        string
	Number     int
	PriceTier  string
	PriceCents int64
	// FaceValueCents is the seat's original price, for comparison.
	FaceValueCents int64
	Status         string
	CreatedAt      string
	// TicketID is shown to the seller only.
	TicketID boxoffice.ID
	Replayed bool
}

// PayoutView is what a seller is owed for a sold listing.
type PayoutView struct {
	ListingID   boxoffice.ID
	AmountCents int64
	Status      string
	CreatedAt   string
}

// ListTicket puts the user's valid ticket on the resale market at a price
// (within the event's cap, if it has one). A buyer then reserves the
// listing (ReserveRequest.ListingID) and pays as for any booking. A repeat
// with the same key returns the same listing. Errors: EIDEMMISSING,
// EIDEMMISMATCH, EIDEMINFLIGHT, ENOTFOUND (not the user's valid ticket),
// EINVALID (the price), ECONFLICT (resale closed for the event, the ticket
// checked in or listed already), ESALECLOSED (the show has started).
func (s *Resale) ListTicket(ctx context.Context, u boxoffice.User, req ListRequest) (*ListingView, error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	t, err := s.store.Ticket(ctx, req.TicketID)
	if err != nil && !isCode(err, boxoffice.ENOTFOUND) {
		return nil, err
	}
	if err != nil || t.UserID != u.ID || t.Status != boxoffice.TicketValid {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no valid ticket %s of yours", req.TicketID)
	}
	l, err := s.Layout(ctx, t.EventID)
	if err != nil {
		return nil, err
	}
	ev := l.Event
	now := s.now()
	switch {
	case ev.ResaleDisabled:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "the organiser does not allow resale for this event")
	case !now.Before(ev.StartsAt):
		return nil, boxoffice.Errorf(boxoffice.ESALECLOSED, "the show has started")
	case req.PriceCents <= 0 || req.PriceCents > boxoffice.MaxPriceCents:
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "price_cents must be between 1 and %d", boxoffice.MaxPriceCents)
	}
	seat, _ := l.Seat(t.SeatID)
	if max, capped := ev.ResaleMaxCents(seat.PriceCents); capped && req.PriceCents > max {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "this event caps resale at %d%% of face value: at most %d cents for this seat", ev.ResaleCapPercent, max)
	}
	hash := requestHash("list", req.TicketID.String(), strconv.FormatInt(req.PriceCents, 10))
	var first CreatedListing
	if err := s.replay(ctx, u.ID, req.IdempotencyKey, hash, &first); !errors.Is(err, errNoRecord) {
		if err != nil {
			return nil, err
		}
		v, err := s.Listing(ctx, u, first.ListingID)
		if err != nil {
			return nil, err
		}
		v.Replayed = true
		return v, nil
	}
	id, err := s.idFor(ctx, ev.ID)
	if err != nil {
		return nil, err
	}
	ls := &boxoffice.Listing{ID: id, TicketID: t.ID, SellerID: u.ID, PriceCents: req.PriceCents,
		CreatedAt: now, UpdatedAt: now}
	rec, err := s.record(u.ID, req.IdempotencyKey, hash, boxoffice.OutcomeListed, CreatedListing{ListingID: ls.ID})
	if err != nil {
		return nil, err
	}
	if err := s.store.CreateListing(ctx, ls, rec); err != nil {
		return nil, err
	}
	// The sale's hold may still stand in the lock layer (it outlives the
	// confirm): free the seat there, so that buyers can hold it. Check and
	// delete by the ticket's booking, so nobody else's hold is touched.
	if _, err := s.holds.Release(ctx, t.EventID, []string{t.SeatID}, t.BookingID); err != nil {
		s.log.WarnContext(ctx, "free a listed seat in the lock layer", "ticket", t.ID, "err", err)
	}
	return s.listingView(l, ls, true), nil
}

// CreatedListing is what a listing's idempotency record keeps
// (OutcomeListed): the listing, whose current state a retry reads.
// Exported for the AnswerCodec that encodes it.
type CreatedListing struct {
	ListingID boxoffice.ID
}

// Listing returns a listing; its ticket id is shown to its seller only.
func (s *Resale) Listing(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*ListingView, error) {
	ls, err := s.store.Listing(ctx, id)
	if err != nil {
		return nil, err
	}
	l, err := s.Layout(ctx, ls.EventID)
	if err != nil {
		return nil, err
	}
	return s.listingView(l, ls, ls.SellerID == u.ID), nil
}

// EventListings returns the event's active listings, by seat.
func (s *Resale) EventListings(ctx context.Context, eventID boxoffice.ID) ([]*ListingView, error) {
	l, err := s.Layout(ctx, eventID)
	if err != nil {
		return nil, err
	}
	ls, err := s.store.EventListings(ctx, eventID)
	if err != nil {
		return nil, err
	}
	out := make([]*ListingView, len(ls))
	for i := range ls {
		out[i] = s.listingView(l, &ls[i], false)
	}
	return out, nil
}

// MyListings returns the user's listings, newest first.
func (s *Resale) MyListings(ctx context.Context, u boxoffice.User) ([]*ListingView, error) {
	ls, err := s.store.UserListings(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]*ListingView, 0, len(ls))
	for i := range ls {
		l, err := s.Layout(ctx, ls[i].EventID)
		if err != nil {
			return nil, err
		}
		out = append(out, s.listingView(l, &ls[i], true))
	}
	return out, nil
}

// WithdrawListing takes the user's listing off the market, unless a buyer
// holds it (ECONFLICT). Withdrawing twice is harmless.
func (s *Resale) WithdrawListing(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*ListingView, error) {
	ls, err := s.store.WithdrawListing(ctx, id, u.ID, s.now())
	if err != nil {
		return nil, err
	}
	l, err := s.Layout(ctx, ls.EventID)
	if err != nil {
		return nil, err
	}
	return s.listingView(l, ls, true), nil
}

// MyPayouts returns what the user is owed for sold listings.
func (s *Resale) MyPayouts(ctx context.Context, u boxoffice.User) ([]PayoutView, error) {
	ps, err := s.store.UserPayouts(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]PayoutView, len(ps))
	for i, p := range ps {
		out[i] = PayoutView{ListingID: p.ListingID, AmountCents: p.AmountCents, Status: string(p.Status),
			CreatedAt: p.CreatedAt.UTC().Format(TimeFormat)}
	}
	return out, nil
}

func (s *Resale) listingView(l *layout.Layout, ls *boxoffice.Listing, seller bool) *ListingView {
	st, _ := l.Seat(ls.SeatID)
	v := &ListingView{ListingID: ls.ID, EventID: ls.EventID, SeatID: ls.SeatID, Section: st.Section, Row: st.Row,
		Number: st.Number, PriceTier: st.PriceTier, PriceCents: ls.PriceCents, FaceValueCents: st.PriceCents,
		Status: string(ls.Status), CreatedAt: ls.CreatedAt.UTC().Format(TimeFormat)}
	if seller {
		v.TicketID = ls.TicketID
	}
	return v
}

// reserveListing holds a listed ticket's seat for the buyer and writes a
// resale booking at the listing's price: the same hold, booking and
// confirm as a primary sale, so two buyers cannot pay for one listing.
func (s *Resale) reserveListing(ctx context.Context, u boxoffice.User, req ReserveRequest) (*ReserveResult, error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	if len(req.SeatIDs) > 0 {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "give either seat_ids or listing_id")
	}
	ls, err := s.store.Listing(ctx, req.ListingID)
	if err != nil {
		return nil, err
	}
	if req.EventID != 0 && req.EventID != ls.EventID {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "listing %s is for another event", ls.ID)
	}
	l, err := s.Layout(ctx, ls.EventID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	switch {
	case l.Event.ResaleDisabled:
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "the organiser does not allow resale for this event")
	case !now.Before(l.Event.StartsAt):
		return nil, boxoffice.Errorf(boxoffice.ESALECLOSED, "the show has started")
	case ls.SellerID == u.ID:
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "this is your own listing")
	}
	hash := requestHash("reserve-listing", ls.ID.String())
	// An inactive listing is refused inside reserve, after the replay: a
	// retry of the purchase that sold it must get its answer back.
	return s.bookings.reserve(ctx, u, l, ReserveRequest{EventID: ls.EventID, SeatIDs: []string{ls.SeatID},
		IdempotencyKey: req.IdempotencyKey, ListingID: ls.ID}, hash, ls)
}
