package sale

import (
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// join puts u on the event's waitlist for quantity seats.
func (h *harness) join(u boxoffice.User, eventID boxoffice.ID, quantity int, key string) *WaitlistView {
	h.t.Helper()
	v, err := h.svc.JoinWaitlist(h.ctx, u, JoinRequest{EventID: eventID, Quantity: quantity, IdempotencyKey: key})
	if err != nil {
		h.t.Fatalf("%s joins the waitlist: %v", u.ID, err)
	}
	return v
}

// entry reads a waitlist entry as its user sees it.
func (h *harness) entry(u boxoffice.User, id boxoffice.ID) *WaitlistView {
	h.t.Helper()
	v, err := h.svc.WaitlistEntry(h.ctx, u, id)
	if err != nil {
		h.t.Fatalf("waitlist entry %s: %v", id, err)
	}
	return v
}

// soldOutForWaitlist creates an event of two seats, F-A-1 and F-A-2,
// held by two bookings (alice's first, bob's five minutes later), and puts
// wendy then walter on its waitlist for one seat each.
func soldOutForWaitlist(t *testing.T) (h *harness, ev *boxoffice.Event, first, second *ReserveResult, wendy, walter *WaitlistView) {
	h = newHarness(t)
	ev = h.event(1, 2, nil)
	first = h.reserve(buyer("alice"), ev.ID, "a", "F-A-1")
	h.clock.Advance(5 * time.Minute)
	second = h.reserve(buyer("bob"), ev.ID, "b", "F-A-2")
	_, err := h.svc.Reserve(h.ctx, buyer("wendy"), ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "w"})
	wantCode(t, err, boxoffice.ESEATTAKEN)

	wendy = h.join(buyer("wendy"), ev.ID, 1, "wl")
	walter = h.join(buyer("walter"), ev.ID, 1, "wl")
	if wendy.Status != string(boxoffice.WaitlistWaiting) || wendy.Ahead == nil || *wendy.Ahead != 0 {
		t.Fatalf("wendy's entry %+v: want waiting, nobody ahead", wendy)
	}
	if walter.Ahead == nil || *walter.Ahead != 1 {
		t.Fatalf("walter's entry %+v: want waiting, one ahead", walter)
	}
	return h, ev, first, second, wendy, walter
}

// A hold that runs out comes back through the returns pass to the first
// waiting entry, as an offer: a pending booking in its user's name that
// holds the seat, which nobody else can take meanwhile. The next entry
// waits on.
func TestProcessReturnsOffersToTheFirstEntry(t *testing.T) {
	h, ev, first, second, wendy, walter := soldOutForWaitlist(t)

	// alice's hold runs out; bob's has five minutes left.
	h.clock.Advance(h.svc.Config().HoldTTL - 5*time.Minute)
	r, err := h.svc.ProcessReturns(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Expired != 1 || r.Returns != 1 || r.Offers != 1 || r.Released != 0 {
		t.Errorf("returns pass %+v: want alice's booking expired, its seat offered", r)
	}
	if b := h.booking(first.BookingID); b.Status != boxoffice.BookingExpired {
		t.Errorf("alice's booking is %s, want expired", b.Status)
	}
	h.wantHeldBy(h.booking(second.BookingID))

	v := h.entry(buyer("wendy"), wendy.EntryID)
	if v.Status != string(boxoffice.WaitlistOffered) || v.Offer == nil || v.Offers != 1 {
		t.Fatalf("wendy's entry %+v: want offered", v)
	}
	if !slices.Equal(v.Offer.SeatIDs, []string{"F-A-1"}) || v.Offer.AmountCents != seatPrice {
		t.Errorf("offer %+v: want F-A-1 at %d", v.Offer, seatPrice)
	}
	offer := h.booking(v.Offer.BookingID)
	if offer.UserID != "wendy" || offer.Status != boxoffice.BookingPending || offer.WaitlistEntryID != wendy.EntryID {
		t.Errorf("offer booking %+v: want wendy's pending offer for entry %s", offer, wendy.EntryID)
	}
	if want := h.clock.Now().Add(h.svc.Config().OfferWindow); !offer.HeldUntil.Equal(want) {
		t.Errorf("offer held until %s, want %s (the offer window)", offer.HeldUntil, want)
	}
	h.wantHeldBy(offer)
	if w := h.entry(buyer("walter"), walter.EntryID); w.Status != string(boxoffice.WaitlistWaiting) || w.Ahead == nil || *w.Ahead != 0 {
		t.Errorf("walter's entry %+v: want still waiting, first in line now", w)
	}
	// The public cannot take the offered seat.
	_, err = h.svc.Reserve(h.ctx, buyer("carol"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "c"})
	wantCode(t, err, boxoffice.ESEATTAKEN)

	// A second pass has nothing more to do, and wendy keeps her offer.
	if r, err := h.svc.ProcessReturns(h.ctx); err != nil || r != (ReturnsReport{}) {
		t.Errorf("second pass: %+v, %v; want nothing done", r, err)
	}
	h.wantHeldBy(offer)

	// Paying for the offer fulfils the entry.
	c := h.confirm(buyer("wendy"), offer.ID, "pay")
	if len(c.Tickets) != 1 || c.Tickets[0].SeatID != "F-A-1" {
		t.Errorf("wendy's confirmation %+v", c)
	}
	if v := h.entry(buyer("wendy"), wendy.EntryID); v.Status != string(boxoffice.WaitlistFulfilled) {
		t.Errorf("wendy's entry after paying: %s, want fulfilled", v.Status)
	}
}

// Leaving the waitlist with an open offer declines it: the offer's booking
// is released, and its seat moves on to the next waiting entry; when
// nobody is left waiting, the seat goes back to the public.
func TestLeaveWaitlistReleasesTheOffer(t *testing.T) {
	h, ev, first, _, wendy, walter := soldOutForWaitlist(t)

	// alice releases her booking: the seat goes to wendy at once.
	if _, err := h.svc.Release(h.ctx, buyer("alice"), first.BookingID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.ProcessReturns(h.ctx); err != nil {
		t.Fatal(err)
	}
	v := h.entry(buyer("wendy"), wendy.EntryID)
	if v.Status != string(boxoffice.WaitlistOffered) || v.Offer == nil {
		t.Fatalf("wendy's entry %+v: want offered", v)
	}
	offerID := v.Offer.BookingID

	left, err := h.svc.LeaveWaitlist(h.ctx, buyer("wendy"), wendy.EntryID)
	if err != nil {
		t.Fatal(err)
	}
	if left.Status != string(boxoffice.WaitlistLeft) || left.Offer != nil {
		t.Errorf("wendy's entry after leaving %+v: want left, no offer", left)
	}
	if b := h.booking(offerID); b.Status != boxoffice.BookingReleased {
		t.Errorf("wendy's offer is %s, want released", b.Status)
	}
	w := h.entry(buyer("walter"), walter.EntryID)
	if w.Status != string(boxoffice.WaitlistOffered) || w.Offer == nil || !slices.Equal(w.Offer.SeatIDs, []string{"F-A-1"}) {
		t.Fatalf("walter's entry %+v: want offered F-A-1", w)
	}
	h.wantHeldBy(h.booking(w.Offer.BookingID))
	_, err = h.svc.Confirm(h.ctx, buyer("wendy"), ConfirmRequest{BookingID: offerID, PaymentToken: "tok_visa", IdempotencyKey: "late"})
	wantCode(t, err, boxoffice.ECONFLICT)

	// Leaving twice is harmless; someone else cannot make anyone leave.
	if again, err := h.svc.LeaveWaitlist(h.ctx, buyer("wendy"), wendy.EntryID); err != nil || again.Status != string(boxoffice.WaitlistLeft) {
		t.Errorf("leaving again: %+v, %v", again, err)
	}
	_, err = h.svc.LeaveWaitlist(h.ctx, buyer("wendy"), walter.EntryID)
	wantCode(t, err, boxoffice.ENOTFOUND)

	// walter leaves too: nobody waits, the seat is the public's.
	if _, err := h.svc.LeaveWaitlist(h.ctx, buyer("walter"), walter.EntryID); err != nil {
		t.Fatal(err)
	}
	h.wantHeld(ev.ID, false, "F-A-1")
	h.reserve(buyer("carol"), ev.ID, "c", "F-A-1")
}

// Joining is idempotent by key; a user has one live entry per event.
func TestJoinWaitlistOncePerUser(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 2, nil)
	u := buyer("wendy")
	first := h.join(u, ev.ID, 2, "k")
	again := h.join(u, ev.ID, 2, "k")
	if !again.Replayed || again.EntryID != first.EntryID {
		t.Errorf("retry %+v: want entry %s replayed", again, first.EntryID)
	}
	_, err := h.svc.JoinWaitlist(h.ctx, u, JoinRequest{EventID: ev.ID, Quantity: 1, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.EIDEMMISMATCH)
	_, err = h.svc.JoinWaitlist(h.ctx, u, JoinRequest{EventID: ev.ID, Quantity: 1, IdempotencyKey: "k2"})
	wantCode(t, err, boxoffice.ECONFLICT)
	_, err = h.svc.JoinWaitlist(h.ctx, buyer("walter"), JoinRequest{EventID: ev.ID, Quantity: 3, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.EINVALID) // the event has two seats
}
