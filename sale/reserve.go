package sale

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
)

// ReserveRequest asks to hold seats of a direct sale, or (ListingID) to
// buy a ticket on the resale market.
type ReserveRequest struct {
	EventID        boxoffice.ID
	SeatIDs        []string
	IdempotencyKey string
	// ListingID, instead of SeatIDs, reserves a resale listing's seat at
	// its price.
	ListingID boxoffice.ID
	// Best, instead of SeatIDs, holds the best seats side by side that are
	// left.
	Best *boxoffice.BestAvailable
}

// ReserveResult is the answer to a granted reserve; it is also what a retry
// with the same idempotency key gets back.
type ReserveResult struct {
	BookingID  boxoffice.ID
	HeldUntil  time.Time
	PaymentURL string
	// SeatIDs are the seats held, for a best-available request.
	SeatIDs []string
	// Replayed is true when this is the stored answer to an earlier request
	// with the same idempotency key.
	Replayed bool
}

// PaymentURL is where the client sends the payment token for a booking.
func PaymentURL(id boxoffice.ID) string { return "/bookings/" + id.String() + "/confirm" }

// Reserve holds every requested seat for the user, or none of them, and
// writes a pending booking. Errors: EIDEMMISSING, EIDEMMISMATCH,
// EIDEMINFLIGHT, ENOTFOUND (event), EINVALID (seats), ELIMIT, ESALECLOSED,
// ESEATTAKEN (with the seats in the way), EUNAVAILABLE (the lock store or
// database is down: nothing was held).
func (s *Bookings) Reserve(ctx context.Context, u boxoffice.User, req ReserveRequest) (*ReserveResult, error) {
	if req.ListingID != 0 {
		return s.resale.reserveListing(ctx, u, req)
	}
	l, hash, err := s.checkReserve(ctx, req)
	if err != nil {
		return nil, err
	}
	if l.Event.SaleMode == boxoffice.SaleQueued {
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "this event sells through the flash-sale queue: its reserve answers 202")
	}
	now := s.now()
	if !l.Event.SaleOpen(now) {
		return nil, saleClosed(l.Event, now)
	}
	return s.reserve(ctx, u, l, req, hash, nil)
}

// checkReserve validates a reserve request against its event: the key, the
// event, the seats (or the best-available ask). hash fingerprints the
// request for idempotency.
func (s *core) checkReserve(ctx context.Context, req ReserveRequest) (l *layout.Layout, hash string, err error) {
	if err := checkKey(req.IdempotencyKey); err != nil {
		return nil, "", err
	}
	if l, err = s.Layout(ctx, req.EventID); err != nil {
		return nil, "", err
	}
	limit := min(s.cfg.MaxSeatsPerRequest, l.Event.TicketLimit)
	if b := req.Best; b != nil {
		if len(req.SeatIDs) > 0 {
			return nil, "", boxoffice.Errorf(boxoffice.EINVALID, "give either seat_ids or best_available")
		}
		if err := b.Validate(l.Event.Sections, limit); err != nil {
			return nil, "", err
		}
		return l, requestHash("reserve-best", req.EventID.String(), strconv.Itoa(b.Quantity), b.Section, b.PriceTier), nil
	}
	if _, err := l.Select(req.SeatIDs, limit); err != nil {
		return nil, "", err
	}
	sorted := slices.Clone(req.SeatIDs)
	slices.Sort(sorted)
	return l, requestHash("reserve", req.EventID.String(), strings.Join(sorted, ",")), nil
}

func saleClosed(ev *boxoffice.Event, now time.Time) error {
	if now.Before(ev.SaleOpensAt) {
		return boxoffice.Errorf(boxoffice.ESALECLOSED, "the sale opens at %s", ev.SaleOpensAt.UTC().Format(time.RFC3339))
	}
	return boxoffice.Errorf(boxoffice.ESALECLOSED, "the sale is over")
}

// reserve holds the seats and writes the pending booking with its
// idempotency record, under a new booking id. A resale purchase passes its
// listing: one seat, at the listing's price.
func (s *Bookings) reserve(ctx context.Context, u boxoffice.User, l *layout.Layout, req ReserveRequest, hash string, listing *boxoffice.Listing) (*ReserveResult, error) {
	ev := l.Event
	// The lease first: a running first request holds it, and this retry
	// gets 409; a finished one has left its record. A lock layer that
	// takes it with the seats (boxoffice.LeasedHolds) does so for named
	// seats, in the hold's own round trip; that lease outlives a granted
	// request, so a retry meeting it reads the record first.
	leased, _ := s.holds.(boxoffice.LeasedHolds)
	if listing != nil || req.Best != nil {
		leased = nil
	}
	if leased == nil {
		release, err := s.lease(ctx, "reserve", u.ID, req.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	// The record is looked up first only for a resale purchase, whose
	// retry must get its answer although the listing it sold is no longer
	// active. A seat reserve saves the database read: a retry of one that
	// succeeded finds its seats held by its own first booking (or, for a
	// best-available ask, its key taken when the booking is written), and
	// only then is the record read (replayIfAnswered).
	var res ReserveResult
	if listing != nil {
		if err := s.replay(ctx, u.ID, req.IdempotencyKey, hash, &res); !errors.Is(err, errNoRecord) {
			if err != nil {
				return nil, err
			}
			res.Replayed = true
			return &res, nil
		}
	}

	var amount int64
	var listingID boxoffice.ID
	if listing != nil {
		if listing.Status != boxoffice.ListingActive {
			return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "this listing is no longer on sale")
		}
		amount, listingID = listing.PriceCents, listing.ID
	}
	id, err := s.idFor(ctx, ev.ID)
	if err != nil {
		return nil, err
	}
	// The hold starts when the lock store runs the acquire, after this;
	// counting from here, the booking never claims a hold longer than the
	// lock store gives. The lock outlasts the booking by HandoverGrace, so
	// the seats are still held when the returns pass hands them on.
	start := s.now()
	ttl := s.cfg.HoldTTL + s.cfg.HandoverGrace
	var hold boxoffice.Hold
	endLease := func() {} // a lease taken with the seats, ended if no booking is written
	hr := boxoffice.HoldRequest{EventID: ev.ID, SeatIDs: req.SeatIDs, Owner: id, TTL: ttl}
	switch {
	case req.Best != nil:
		hold, err = s.holdBest(ctx, l, req.Best, id, ttl)
		req.SeatIDs = hold.SeatIDs
	case leased != nil:
		hr.Remember = s.markTTL()
		hold, endLease, err = leased.AcquireLeased(ctx, hr, leaseKey("reserve", u.ID, req.IdempotencyKey), s.cfg.LeaseTTL())
	default:
		hold, err = s.holds.Acquire(ctx, hr)
	}
	if err != nil {
		// A refusal that the lock layer vouches was never granted under
		// this key has no answer to replay: an answered request was.
		if errors.Is(err, boxoffice.ErrNeverGranted) {
			return nil, err
		}
		if won, ok := s.replayIfAnswered(ctx, u.ID, req.IdempotencyKey, hash); ok {
			return won.res, won.err
		}
		return nil, err
	}
	if listing == nil {
		amount = s.seatsAmount(l, req.SeatIDs)
	}
	b, resp := s.newBooking(l, u.ID, hold, start, req.Best != nil, amount, listingID)
	res = *resp
	rec, err := s.record(u.ID, req.IdempotencyKey, hash, boxoffice.OutcomeHeld, &res)
	if err != nil {
		s.releaseHold(ctx, ev.ID, req.SeatIDs, id)
		endLease()
		return nil, err
	}
	if err := s.store.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: ev.TicketLimit, Idempotency: rec}); err != nil {
		s.releaseHold(ctx, ev.ID, req.SeatIDs, id)
		endLease()
		// An earlier request with this key was answered (a retry whose
		// seats were free again, or another attempt that won once our
		// lease ran out): its answer is ours.
		if won, ok := s.replayIfAnswered(ctx, u.ID, req.IdempotencyKey, hash); ok {
			return won.res, won.err
		}
		return nil, err
	}
	return &res, nil
}

// markTTL is how long the lock layer keeps the mark of a leased grant
// (boxoffice.HoldRequest.Remember): as long as the grant's idempotency
// record and an hour more, for the clocks of this process and of the lock
// store to differ.
func (s *core) markTTL() time.Duration { return s.cfg.IdempotencyTTL + time.Hour }

// seatsAmount is what the seats cost at their sections' prices.
func (s *core) seatsAmount(l *layout.Layout, seats []string) int64 {
	var amount int64
	for _, seat := range seats {
		st, _ := l.Seat(seat)
		amount += st.PriceCents
	}
	return amount
}

// newBooking is the pending booking of a granted hold (its owner is the
// booking's id) asked for at start, and the answer to its reserve; best
// says the seats were picked for the buyer, who is then told which.
func (s *core) newBooking(l *layout.Layout, userID string, hold boxoffice.Hold, start time.Time, best bool, amount int64, listingID boxoffice.ID) (*boxoffice.Booking, *ReserveResult) {
	now := s.now()
	b := &boxoffice.Booking{
		ID: hold.Owner, EventID: l.Event.ID, UserID: userID, SeatIDs: hold.SeatIDs, Status: boxoffice.BookingPending,
		Fence: hold.Fence, AmountCents: amount, HeldUntil: start.Add(s.cfg.HoldTTL), CreatedAt: now, UpdatedAt: now,
		ListingID: listingID,
	}
	res := &ReserveResult{BookingID: b.ID, HeldUntil: b.HeldUntil, PaymentURL: PaymentURL(b.ID)}
	if best {
		res.SeatIDs = b.SeatIDs
	}
	return b, res
}

// answer is the stored answer to an earlier request with the same key.
type answer struct {
	res *ReserveResult
	err error
}

// replayIfAnswered reads the record of (user, key) after a failed hold: ok
// when an earlier request with this key was answered (its answer, or
// EIDEMMISMATCH if it was another request), so that a retry gets the
// first answer rather than the failure its own attempt met.
func (s *Bookings) replayIfAnswered(ctx context.Context, userID, key, hash string) (answer, bool) {
	var res ReserveResult
	switch err := s.replay(ctx, userID, key, hash, &res); {
	case errors.Is(err, errNoRecord):
		return answer{}, false
	case isCode(err, boxoffice.EIDEMMISMATCH):
		return answer{err: err}, true
	case err != nil:
		return answer{}, false // the store's failure: the hold's error stands
	}
	res.Replayed = true
	return answer{res: &res}, true
}

// releaseHold gives seats back to the lock layer on a failed path. A failure
// here is logged, not returned: the hold expires by itself anyway.
func (s *core) releaseHold(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID) {
	ctx, cancel := detach(ctx)
	defer cancel()
	if _, err := s.holds.Release(ctx, eventID, seatIDs, owner); err != nil {
		s.log.WarnContext(ctx, "release hold", "event", eventID, "booking", owner, "err", err)
	}
}
