package sale

import (
	"context"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
)

// Seats that come back. A released, expired or cancelled booking leaves a
// SeatReturn in the store (written in the same transaction), and its hold
// outlasts it by HandoverGrace in the lock layer. The returns pass
// (ProcessReturns) offers the seats to the event's waitlist in join order,
// each offer a hold and a pending booking of its own in the waiting user's
// name (HoldRequest.Supersede moves the seats from the old hold to the
// offer without freeing them), and gives what nobody on the waitlist takes
// back to the public. Expiry is noticed by the pass itself: it expires the
// bookings whose hold ran out (an index range on held_until, never a scan
// of the seats) before it reads the returns.

// ReturnsReport says what one returns pass did.
type ReturnsReport struct {
	Expired  int // bookings whose hold ran out, expired now
	Returns  int // seat returns handled
	Offers   int // waitlist offers made
	Released int // seats given back to the public
}

// returnsLease keeps one returns pass at a time across processes: two
// passes would offer the same seats twice over (harmlessly, one offer's
// hold loses, but for nothing).
const returnsLease = "seat-returns"

// ProcessReturns runs one returns pass: expire the bookings whose hold ran
// out, then offer every pending return to the waitlist. It skips the pass
// (nil) while another process runs one. A return that cannot be handled
// now (a store unreachable) stays for the next pass.
func (s *Waitlist) ProcessReturns(ctx context.Context) (ReturnsReport, error) {
	var r ReturnsReport
	release, err := s.leases.TryLease(ctx, returnsLease, time.Minute)
	if isCode(err, boxoffice.EIDEMINFLIGHT) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	defer release()
	for {
		bs, err := s.store.ExpireBookings(ctx, s.now(), 500)
		if err != nil {
			return r, err
		}
		r.Expired += len(bs)
		if len(bs) < 500 {
			break
		}
	}
	for {
		rets, err := s.store.PendingReturns(ctx, 100)
		if err != nil {
			return r, err
		}
		for _, ret := range rets {
			offers, released, err := s.handleReturn(ctx, ret)
			if err != nil {
				return r, err
			}
			if err := s.store.DeleteReturn(ctx, ret.ID); err != nil {
				return r, err
			}
			r.Returns++
			r.Offers += offers
			r.Released += released
		}
		if len(rets) < 100 {
			return r, nil
		}
	}
}

// RunReturns runs a returns pass every interval, and at once when this
// process frees seats, until ctx ends.
func (s *Waitlist) RunReturns(ctx context.Context, interval time.Duration) {
	every(ctx, interval, s.returnsKick, func() {
		r, err := s.ProcessReturns(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "returns pass failed; the next one retries", "err", err)
		}
		if r.Returns > 0 {
			s.log.InfoContext(ctx, "seats returned", "expired", r.Expired, "returns", r.Returns, "offers", r.Offers, "released", r.Released)
		}
	})
}

// kickReturns wakes RunReturns, if it runs in this process.
func (s *core) kickReturns() {
	select {
	case s.returnsKick <- struct{}{}:
	default:
	}
}

// returnSeats hands the seats of a booking this request just released or
// cancelled to the waitlist (or the public) at once, so the caller sees
// them move before it is answered. The store wrote the SeatReturn too,
// which the next pass handles again and deletes: handling a return twice
// is safe (see handleReturn), and if this one fails the pass does the
// work.
func (s *Waitlist) returnSeats(ctx context.Context, b *boxoffice.Booking) {
	ctx, cancel := detach(ctx)
	defer cancel()
	ret := boxoffice.SeatReturn{EventID: b.EventID, BookingID: b.ID, SeatIDs: b.SeatIDs, ListingID: b.ListingID}
	if _, _, err := s.handleReturn(ctx, ret); err != nil {
		s.log.WarnContext(ctx, "return seats; the returns pass will retry", "booking", b.ID, "err", err)
	}
	s.kickReturns()
}

// handleReturn offers the seats of one return to the waitlist and gives
// the rest back to the public. It is safe to run again after a crash: a
// seat already offered is held by its offer, which the next Acquire meets
// as ESEATTAKEN and leaves alone.
func (s *Waitlist) handleReturn(ctx context.Context, ret boxoffice.SeatReturn) (offers, released int, err error) {
	l, err := s.Layout(ctx, ret.EventID)
	if err != nil {
		return 0, 0, err
	}
	pool := slices.Clone(ret.SeatIDs)
	// holder is who holds the pool's seats in the lock layer: the booking
	// they came from, until an offer that could not be booked hands them
	// back under its own id.
	holder := ret.BookingID
	if s.cfg.PublicFirst {
		released = s.giveBack(ctx, ret.EventID, pool, holder)
		holder = 0
	}
	var listing *boxoffice.Listing
	if ret.ListingID != 0 {
		if listing, err = s.store.Listing(ctx, ret.ListingID); err != nil {
			return 0, 0, err
		}
		if listing.Status != boxoffice.ListingActive {
			// Withdrawn or sold meanwhile: nothing to offer.
			return 0, released + s.giveBack(ctx, ret.EventID, pool, holder), nil
		}
	}
	var after boxoffice.ID
	for len(pool) > 0 && !l.Event.StartsAt.Before(s.now()) {
		entries, err := s.store.WaitingEntries(ctx, ret.EventID, after, 100)
		if err != nil {
			return offers, released, err
		}
		for i := 0; i < len(entries) && len(pool) > 0; i++ {
			e := entries[i]
			pick := pickSeats(l, pool, &e, listing != nil)
			if pick == nil {
				continue
			}
			ok, drop, err := s.offer(ctx, l, &e, pick, holder, listing)
			if err != nil {
				return offers, released, err
			}
			if len(drop) > 0 {
				// Someone else holds these (a retried pass, or the public
				// after PublicFirst), or they went back to the public:
				// they are not ours to offer.
				n := len(pool)
				pool = slices.DeleteFunc(pool, func(id string) bool { return slices.Contains(drop, id) })
				if !ok && len(pool) < n {
					i-- // the same entry again, with what is left
				}
				continue
			}
			if ok {
				offers++
				pool = slices.DeleteFunc(pool, func(id string) bool { return slices.Contains(pick, id) })
			}
		}
		if len(entries) < 100 {
			break
		}
		after = entries[len(entries)-1].ID
	}
	if len(pool) > 0 && holder != 0 {
		released += s.giveBack(ctx, ret.EventID, pool, holder)
	}
	return offers, released, nil
}

// pickSeats chooses the seats of pool to offer e: e.Quantity seats that
// suit its section and tier, side by side in one row when the pool has
// them, else the first in layout order; nil when the pool cannot serve it.
// A listing is one seat, offered only to an entry that wants one.
func pickSeats(l *layout.Layout, pool []string, e *boxoffice.WaitlistEntry, listing bool) []string {
	if listing && e.Quantity != 1 {
		return nil
	}
	var fit []boxoffice.Seat
	for _, id := range pool {
		if st, ok := l.Seat(id); ok && e.Wants(st) {
			fit = append(fit, st)
		}
	}
	if len(fit) < e.Quantity {
		return nil
	}
	slices.SortFunc(fit, func(a, b boxoffice.Seat) int { return l.Order(a.ID) - l.Order(b.ID) })
	start := 0
	for i := 0; i+e.Quantity <= len(fit); i++ {
		first, last := fit[i], fit[i+e.Quantity-1]
		if first.Section == last.Section && first.Row == last.Row && last.Number-first.Number == e.Quantity-1 {
			start = i
			break
		}
	}
	pick := make([]string, e.Quantity)
	for i := range pick {
		pick[i] = fit[start+i].ID
	}
	return pick
}

// offer holds pick for the entry's user and writes the offer's pending
// booking; ok reports that the offer was made. drop lists seats the pool
// lost: held by someone else (nothing was done), or given to the public
// because they could not be handed back. An offer that cannot be booked
// (the user's ticket limit, an entry that moved on, a seat sold under it)
// hands its seats back to holder, and the pass goes on with the next
// entry.
func (s *Waitlist) offer(ctx context.Context, l *layout.Layout, e *boxoffice.WaitlistEntry, pick []string, holder boxoffice.ID, listing *boxoffice.Listing) (ok bool, drop []string, _ error) {
	id, err := s.idFor(ctx, e.EventID)
	if err != nil {
		return false, nil, err
	}
	start := s.now()
	hold, err := s.holds.Acquire(ctx, boxoffice.HoldRequest{EventID: l.Event.ID, SeatIDs: pick, Owner: id,
		TTL: s.cfg.OfferWindow + s.cfg.HandoverGrace, Supersede: holder})
	if isCode(err, boxoffice.ESEATTAKEN) {
		return false, boxoffice.ErrorSeats(err), nil
	}
	if err != nil {
		return false, nil, err
	}
	var amount int64
	for _, seat := range pick {
		st, _ := l.Seat(seat)
		amount += st.PriceCents
	}
	b := &boxoffice.Booking{ID: id, EventID: l.Event.ID, UserID: e.UserID, SeatIDs: pick, Status: boxoffice.BookingPending,
		Fence: hold.Fence, AmountCents: amount, HeldUntil: start.Add(s.cfg.OfferWindow), CreatedAt: start, UpdatedAt: start,
		WaitlistEntryID: e.ID}
	if listing != nil {
		b.ListingID, b.AmountCents = listing.ID, listing.PriceCents
	}
	err = s.store.CreateBooking(ctx, boxoffice.NewBooking{Booking: b, TicketLimit: l.Event.TicketLimit})
	switch boxoffice.ErrorCode(err) {
	case "":
		s.log.InfoContext(ctx, "waitlist offer", "event", l.Event.ID, "entry", e.ID, "booking", id, "seats", len(pick))
		if s.notifier != nil {
			if err := s.notifier.Notify(ctx, boxoffice.QueueNotice{RequestID: e.ID, EventID: e.EventID, UserID: e.UserID}); err != nil {
				s.log.WarnContext(ctx, "waitlist notice", "entry", e.ID, "err", err)
			}
		}
		return true, nil, nil
	case boxoffice.ELIMIT, boxoffice.ECONFLICT, boxoffice.ESEATTAKEN, boxoffice.EINVALID:
		s.log.InfoContext(ctx, "waitlist entry skipped", "entry", e.ID, "reason", boxoffice.ErrorCode(err))
		if holder != 0 {
			if _, err := s.holds.Acquire(ctx, boxoffice.HoldRequest{EventID: l.Event.ID, SeatIDs: pick, Owner: holder,
				TTL: s.cfg.HandoverGrace, Supersede: id}); err == nil {
				return false, nil, nil
			}
		}
		s.giveBack(ctx, l.Event.ID, pick, id)
		return false, pick, nil
	default:
		// Undecided (a store unreachable): leave the hold to run out and
		// the return for the next pass.
		return false, nil, err
	}
}

// giveBack releases seats held by holder to the public and returns how
// many it freed (seats whose hold ran out free themselves). A failure is
// logged: the holds run out by themselves.
func (s *core) giveBack(ctx context.Context, eventID boxoffice.ID, seatIDs []string, holder boxoffice.ID) int {
	if holder == 0 || len(seatIDs) == 0 {
		return 0
	}
	ctx, cancel := detach(ctx)
	defer cancel()
	n, err := s.holds.Release(ctx, eventID, seatIDs, holder)
	if err != nil {
		s.log.WarnContext(ctx, "give seats back", "event", eventID, "holder", holder, "err", err)
	}
	return n
}
