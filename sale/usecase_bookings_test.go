package sale

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/internal/inflight"
	"github.com/boxoffice/boxoffice/testpay"
)

// A reserve of several seats of which one is held by someone else holds
// none of them: the error names the seat in the way, and the others stay
// free for the next buyer.
func TestReserveIsAllOrNothing(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	h.reserve(buyer("alice"), ev.ID, "a1", "F-A-2")

	_, err := h.svc.Reserve(h.ctx, buyer("bob"), ReserveRequest{EventID: ev.ID, SeatIDs: fseats("A", 1, 2, 3), IdempotencyKey: "b1"})
	wantCode(t, err, boxoffice.ESEATTAKEN)
	if got := boxoffice.ErrorSeats(err); !slices.Equal(got, []string{"F-A-2"}) {
		t.Errorf("seats in the way %v, want [F-A-2]", got)
	}
	h.wantHeld(ev.ID, false, "F-A-1", "F-A-3")
	// Nothing of bob's request was booked either: carol can take the rest.
	h.reserve(buyer("carol"), ev.ID, "c1", "F-A-1", "F-A-3")
	// And bob's key was not used up by the refusal.
	if _, err := h.svc.Reserve(h.ctx, buyer("bob"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-4"}, IdempotencyKey: "b1"}); err != nil {
		t.Errorf("bob's key after a refused reserve: %v", err)
	}
}

// Many buyers reserving the same seat at once: exactly one wins, every
// other is told the seat is taken, and the winner's booking holds it.
func TestReserveStormHasOneWinner(t *testing.T) {
	h := newHarness(t)
	ev := h.event(2, 4, nil)
	const n = 48
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		winners  []*ReserveResult
		refusals = map[string]int{}
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := h.svc.Reserve(h.ctx, buyer(fmt.Sprintf("u%d", i)),
				ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-B-2"}, IdempotencyKey: "storm"})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refusals[boxoffice.ErrorCode(err)]++
				return
			}
			winners = append(winners, res)
		})
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 || refusals[boxoffice.ESEATTAKEN] != n-1 {
		t.Fatalf("%d winners, refusals %v; want 1 winner and %d %s", len(winners), refusals, n-1, boxoffice.ESEATTAKEN)
	}
	b := h.booking(winners[0].BookingID)
	if b.Status != boxoffice.BookingPending || !slices.Equal(b.SeatIDs, []string{"F-B-2"}) {
		t.Errorf("winner's booking %s %v, want pending [F-B-2]", b.Status, b.SeatIDs)
	}
	h.wantHeldBy(b)
}

// A retry with the same key and the same seats (in any order) gets the
// first booking back and leaves its hold alone; the same key with other
// seats is refused and holds nothing.
func TestReserveIdempotencyKey(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	first := h.reserve(u, ev.ID, "k1", "F-A-1", "F-A-2")
	if first.Replayed {
		t.Error("the first reserve says it was replayed")
	}
	h.clock.Advance(time.Minute)

	again := h.reserve(u, ev.ID, "k1", "F-A-2", "F-A-1")
	if !again.Replayed || again.BookingID != first.BookingID || !again.HeldUntil.Equal(first.HeldUntil) {
		t.Errorf("retry: booking %s held until %s (replayed %v), want the first: %s until %s",
			again.BookingID, again.HeldUntil, again.Replayed, first.BookingID, first.HeldUntil)
	}
	b := h.booking(first.BookingID)
	h.wantHeldBy(b) // the retry did not take the hold over

	_, err := h.svc.Reserve(h.ctx, u, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-3"}, IdempotencyKey: "k1"})
	wantCode(t, err, boxoffice.EIDEMMISMATCH)
	h.wantHeld(ev.ID, false, "F-A-3")
	h.wantHeldBy(b)
}

// A best-available retry gets the first request's seats back, and the
// block its own attempt picked is given back.
func TestReserveBestAvailableRetryKeepsItsSeats(t *testing.T) {
	h := newHarness(t)
	ev := h.event(2, 4, nil)
	u := buyer("alice")
	req := ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 2}, IdempotencyKey: "best"}
	first, err := h.svc.Reserve(h.ctx, u, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.svc.Reserve(h.ctx, u, req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.BookingID != first.BookingID || !slices.Equal(again.SeatIDs, first.SeatIDs) {
		t.Errorf("retry: booking %s seats %v (replayed %v), want %s %v", again.BookingID, again.SeatIDs, again.Replayed, first.BookingID, first.SeatIDs)
	}
	all := append(fseats("A", 1, 2, 3, 4), fseats("B", 1, 2, 3, 4)...)
	for i, held := range h.held(ev.ID, all...) {
		if want := slices.Contains(first.SeatIDs, all[i]); held != want {
			t.Errorf("seat %s held %v after the retry, want %v (the first request's seats %v)", all[i], held, want, first.SeatIDs)
		}
	}
}

// A good card issues one ticket per seat, charges once, and a retried
// confirm (same key, or another key) answers the same confirmation.
func TestConfirmIssuesTicketsOnce(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r1", "F-A-1", "F-A-2")

	c := h.confirm(u, res.BookingID, "p1")
	if c.Replayed || c.ConfirmationCode == "" || c.AmountCents != 2*seatPrice {
		t.Errorf("confirmation %+v: want a code and %d cents", c, 2*seatPrice)
	}
	if len(c.Tickets) != 2 {
		t.Fatalf("%d tickets, want 2", len(c.Tickets))
	}
	var seats, codes []string
	for _, tk := range c.Tickets {
		seats, codes = append(seats, tk.SeatID), append(codes, tk.Code)
		if tk.Status != string(boxoffice.TicketValid) || tk.Code == "" || tk.BookingID != res.BookingID {
			t.Errorf("ticket %+v: want valid, with a code, of booking %s", tk, res.BookingID)
		}
	}
	if !sameSeats(seats, []string{"F-A-1", "F-A-2"}) || codes[0] == codes[1] {
		t.Errorf("tickets for %v with codes %v: want one per seat, distinct codes", seats, codes)
	}

	h.wantConfirmedAgain(u, res.BookingID, c)

	b := h.booking(res.BookingID)
	if b.Status != boxoffice.BookingConfirmed || b.ConfirmationCode != c.ConfirmationCode || len(b.Tickets) != 2 {
		t.Errorf("stored booking %s code %q with %d tickets, want confirmed %q with 2", b.Status, b.ConfirmationCode, len(b.Tickets), c.ConfirmationCode)
	}
	auths := h.auths()
	if len(auths) != 1 || auths[0].Status != testpay.Captured || auths[0].AmountCents != 2*seatPrice {
		t.Errorf("gateway authorizations %+v, want one captured of %d cents", auths, 2*seatPrice)
	}
	sold, err := h.store.SoldSeats(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSeats(sold, []string{"F-A-1", "F-A-2"}) {
		t.Errorf("sold seats %v, want F-A-1 and F-A-2", sold)
	}
	// Sold seats are not for sale again.
	_, err = h.svc.Reserve(h.ctx, buyer("bob"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "b1"})
	wantCode(t, err, boxoffice.ESEATTAKEN)
}

// wantConfirmedAgain checks the answers to confirms of a booking that c,
// under key "p1", confirmed: the same key's retry replays c, another key
// gets the same confirmation, and the same key with another token is a
// mismatch.
func (h *harness) wantConfirmedAgain(u boxoffice.User, bookingID boxoffice.ID, c *Confirmation) {
	h.t.Helper()
	again := h.confirm(u, bookingID, "p1")
	if !again.Replayed || again.ConfirmationCode != c.ConfirmationCode || !slices.Equal(again.Tickets, c.Tickets) {
		h.t.Errorf("retried confirm %+v, want a replay of %+v", again, c)
	}
	other := h.confirm(u, bookingID, "p2")
	if other.ConfirmationCode != c.ConfirmationCode || !slices.Equal(other.Tickets, c.Tickets) {
		h.t.Errorf("confirm with another key %+v, want the same confirmation %+v", other, c)
	}
	_, err := h.svc.Confirm(h.ctx, u, ConfirmRequest{BookingID: bookingID, PaymentToken: testpay.TokenDecline, IdempotencyKey: "p1"})
	wantCode(h.t, err, boxoffice.EIDEMMISMATCH)
}

// A confirm that meets the booking's lease held (another confirm
// finishing, a crashed process's lease running out) answers what is
// already written (the replay for the same key, the confirmation for
// another) and refuses, charging nothing, only while the booking is
// unpaid: the lease's holder may be paying.
func TestConfirmWhileTheLeaseIsHeldAnswersWhatIsWritten(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r1", "F-A-1")
	hold := func() func() { // the lease, as another confirm would hold it
		t.Helper()
		// A paid confirm releases its own after its answer: wait for that.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			release, err := h.leases.TryLease(h.ctx, confirmLease(res.BookingID, u.ID), time.Minute)
			if err == nil {
				return release
			}
			if !isCode(err, boxoffice.EIDEMINFLIGHT) || time.Now().After(deadline) {
				t.Fatalf("the confirm's lease: %v", err)
			}
		}
	}

	release := hold()
	_, err := h.svc.Confirm(h.ctx, u, ConfirmRequest{BookingID: res.BookingID, PaymentToken: testpay.TokenApprove, IdempotencyKey: "p1"})
	wantCode(t, err, boxoffice.EIDEMINFLIGHT)
	if a := h.auths(); len(a) != 0 {
		t.Fatalf("refused confirm authorized %+v", a)
	}
	release()

	c := h.confirm(u, res.BookingID, "p1")
	release = hold()
	defer release()
	h.wantConfirmedAgain(u, res.BookingID, c)
	if a := h.auths(); len(a) != 1 {
		t.Errorf("gateway authorizations %+v, want the first confirm's alone", a)
	}
}

// gatedLeases holds each release of a confirm's lease back until the test
// lets it go (a value sent on gate), saying on started that one is waiting.
type gatedLeases struct {
	*inmem.Leases
	gate, started chan struct{}
}

func (l gatedLeases) TryLease(ctx context.Context, key string, ttl time.Duration) (func(), error) {
	release, err := l.Leases.TryLease(ctx, key, ttl)
	if err != nil || !strings.HasPrefix(key, "confirm\x00") {
		return release, err
	}
	return func() {
		l.started <- struct{}{}
		<-l.gate
		release()
	}, nil
}

// A confirm that wrote an outcome answers without waiting for its lease's
// release: a confirm meeting the lease reads that outcome. One that failed
// releases the lease before answering: another card can pay at once.
func TestConfirmAnswersBeforeTheReleaseOnlyOnceAnOutcomeIsWritten(t *testing.T) {
	l := gatedLeases{gate: make(chan struct{}), started: make(chan struct{}, 1)}
	h := newHarnessWith(t, harnessOptions{leases: func(in *inmem.Leases) boxoffice.Leases {
		l.Leases = in
		return l
	}})
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r1", "F-A-1")
	confirm := func(token, key string) chan error {
		answered := make(chan error, 1)
		go func() {
			_, err := h.svc.Confirm(h.ctx, u, ConfirmRequest{BookingID: res.BookingID, PaymentToken: token, IdempotencyKey: key})
			answered <- err
		}()
		return answered
	}

	declined := confirm(testpay.TokenDecline, "p1")
	<-l.started
	select {
	case err := <-declined:
		t.Fatalf("a declined confirm answered (%v) before its lease was released", err)
	default:
	}
	l.gate <- struct{}{}
	wantCode(t, <-declined, boxoffice.EPAYMENTDECLINED)

	paid := confirm(testpay.TokenApprove, "p2")
	select {
	case err := <-paid:
		if err != nil {
			t.Fatalf("confirm with a good card: %v", err)
		}
	case <-time.After(30 * time.Second): // a deadlock guard, not a timing
		t.Fatal("a paid confirm's answer waited for its lease's release")
	}
	if b := h.booking(res.BookingID); b.Status != boxoffice.BookingConfirmed {
		t.Fatalf("booking %s after the answer, want confirmed", b.Status)
	}
	<-l.started
	l.gate <- struct{}{}
}

// A declined card charges nothing and leaves the booking pending with its
// seats held: another card can still pay for it.
func TestConfirmDeclinedKeepsTheHold(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r1", "F-A-3")

	_, err := h.svc.Confirm(h.ctx, u, ConfirmRequest{BookingID: res.BookingID, PaymentToken: testpay.TokenDecline, IdempotencyKey: "p1"})
	wantCode(t, err, boxoffice.EPAYMENTDECLINED)
	b := h.booking(res.BookingID)
	if b.Status != boxoffice.BookingPending {
		t.Errorf("booking %s after a declined card, want pending", b.Status)
	}
	h.wantHeldBy(b)
	_, err = h.svc.Reserve(h.ctx, buyer("bob"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-3"}, IdempotencyKey: "b1"})
	wantCode(t, err, boxoffice.ESEATTAKEN)
	if a := h.auths(); len(a) != 0 {
		t.Errorf("authorizations after a decline: %+v", a)
	}

	c := h.confirm(u, res.BookingID, "p2")
	if len(c.Tickets) != 1 {
		t.Errorf("confirm with a good card after the decline: %d tickets", len(c.Tickets))
	}
}

// A confirm once the hold has run out is refused, charges nothing, and
// the booking reads as expired; a confirm a moment before still works.
func TestConfirmAfterTheHoldRanOut(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	alice, bob := buyer("alice"), buyer("bob")
	late := h.reserve(alice, ev.ID, "a1", "F-A-1")
	onTime := h.reserve(bob, ev.ID, "b1", "F-A-2")
	ttl := h.svc.Config().HoldTTL
	if want := h.clock.Now().Add(ttl); !late.HeldUntil.Equal(want) {
		t.Errorf("held until %s, want %s (HoldTTL from now)", late.HeldUntil, want)
	}

	h.clock.Advance(ttl - time.Millisecond)
	h.confirm(bob, onTime.BookingID, "p1")
	h.clock.Advance(time.Millisecond) // now == HeldUntil: the hold is over

	_, err := h.svc.Confirm(h.ctx, alice, ConfirmRequest{BookingID: late.BookingID, PaymentToken: testpay.TokenApprove, IdempotencyKey: "p1"})
	wantCode(t, err, boxoffice.EHOLDLOST)
	b := h.booking(late.BookingID)
	if b.Status == boxoffice.BookingConfirmed || len(b.Tickets) != 0 {
		t.Errorf("expired booking is %s with %d tickets", b.Status, len(b.Tickets))
	}
	if v := h.svc.View(b); v.Status != string(boxoffice.BookingExpired) || v.PaymentURL != "" {
		t.Errorf("view of the expired booking: status %q, payment url %q", v.Status, v.PaymentURL)
	}
	if a := h.auths(); len(a) != 1 {
		t.Errorf("%d authorizations, want bob's alone: %+v", len(a), a)
	}
	// Past the handover grace the seat is anyone's.
	h.clock.Advance(h.svc.Config().HandoverGrace)
	h.reserve(buyer("carol"), ev.ID, "c1", "F-A-1")
}

// duringAuthorize is the test gateway running during after each
// authorization it grants, before the confirm that asked goes on.
type duringAuthorize struct {
	*testpay.Gateway
	during func()
}

func (g duringAuthorize) Authorize(ctx context.Context, req boxoffice.PaymentRequest) (boxoffice.Authorization, error) {
	a, err := g.Gateway.Authorize(ctx, req)
	if err == nil {
		g.during()
	}
	return a, err
}

// A hold that runs out while the payment is authorized, and whose seat
// goes to someone else meanwhile, is not confirmed: the store, which
// decides by the booking's fence and time, refuses it, the authorization
// is voided, and the seat stays the other buyer's. (The lock layer is
// asked once, before paying; after it the store is the arbiter.)
func TestConfirmWhoseHoldRanOutDuringThePayment(t *testing.T) {
	var during func()
	h := newHarnessWith(t, harnessOptions{payments: func(g *testpay.Gateway) boxoffice.PaymentGateway {
		return duringAuthorize{Gateway: g, during: func() { during() }}
	}})
	ev := h.event(1, 4, nil)
	alice, bob := buyer("alice"), buyer("bob")
	late := h.reserve(alice, ev.ID, "a1", "F-A-1")
	var taken *ReserveResult
	during = func() {
		during = func() {} // bob's own confirm below runs as usual
		h.clock.Advance(h.svc.Config().HoldTTL + h.svc.Config().HandoverGrace)
		taken = h.reserve(bob, ev.ID, "b1", "F-A-1")
	}

	_, err := h.svc.Confirm(h.ctx, alice, ConfirmRequest{BookingID: late.BookingID, PaymentToken: testpay.TokenApprove, IdempotencyKey: "p1"})
	wantCode(t, err, boxoffice.EHOLDLOST)
	if b := h.booking(late.BookingID); b.Status == boxoffice.BookingConfirmed || len(b.Tickets) != 0 {
		t.Errorf("alice's booking is %s with %d tickets, want neither confirmed nor ticketed", b.Status, len(b.Tickets))
	}
	h.wantHeldBy(h.booking(taken.BookingID))
	if a := h.auths(); len(a) != 1 || a[0].Status != testpay.Voided {
		t.Errorf("authorizations %+v, want alice's voided", a)
	}
	if c := h.confirm(bob, taken.BookingID, "p1"); len(c.Tickets) != 1 || c.Tickets[0].SeatID != "F-A-1" {
		t.Errorf("bob's confirmation %+v, want his ticket for F-A-1", c)
	}
}

// A confirm gives back its request's place among those the process handles
// at once (inflight) before the payment, which may take seconds.
func TestConfirmLeavesItsPlaceBeforePaying(t *testing.T) {
	left := false
	var leftBeforeAuthorize bool
	h := newHarnessWith(t, harnessOptions{payments: func(g *testpay.Gateway) boxoffice.PaymentGateway {
		return duringAuthorize{Gateway: g, during: func() { leftBeforeAuthorize = left }}
	}})
	ev := h.event(1, 4, nil)
	res := h.reserve(buyer("alice"), ev.ID, "a1", "F-A-1")
	ctx, _ := inflight.With(h.ctx, func() { left = true })
	if _, err := h.svc.Confirm(ctx, buyer("alice"), ConfirmRequest{BookingID: res.BookingID, PaymentToken: testpay.TokenApprove, IdempotencyKey: "p1"}); err != nil {
		t.Fatal(err)
	}
	if !leftBeforeAuthorize {
		t.Error("the confirm kept its place while the payment was authorized")
	}
}

// Release gives the seats back at once: another buyer can reserve them,
// and the released booking can no longer be paid for. Releasing again is
// harmless; nobody else can release it.
func TestReleaseFreesTheSeats(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	alice, bob := buyer("alice"), buyer("bob")
	res := h.reserve(alice, ev.ID, "a1", "F-A-1", "F-A-2")
	_, err := h.svc.Reserve(h.ctx, bob, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-2"}, IdempotencyKey: "b1"})
	wantCode(t, err, boxoffice.ESEATTAKEN)

	_, err = h.svc.Release(h.ctx, bob, res.BookingID)
	wantCode(t, err, boxoffice.ENOTFOUND)
	b, err := h.svc.Release(h.ctx, alice, res.BookingID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != boxoffice.BookingReleased {
		t.Errorf("released booking is %s", b.Status)
	}
	h.wantHeld(ev.ID, false, "F-A-1", "F-A-2")
	h.reserve(bob, ev.ID, "b2", "F-A-2")

	if b, err := h.svc.Release(h.ctx, alice, res.BookingID); err != nil || b.Status != boxoffice.BookingReleased {
		t.Errorf("second release: %v, %v", b, err)
	}
	_, err = h.svc.Confirm(h.ctx, alice, ConfirmRequest{BookingID: res.BookingID, PaymentToken: testpay.TokenApprove, IdempotencyKey: "p1"})
	wantCode(t, err, boxoffice.ECONFLICT)
	if a := h.auths(); len(a) != 0 {
		t.Errorf("authorizations for a released booking: %+v", a)
	}
}

// A confirmed booking cannot be released.
func TestReleaseOfAConfirmedBookingIsRefused(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "a1", "F-A-1")
	h.confirm(u, res.BookingID, "p1")
	_, err := h.svc.Release(h.ctx, u, res.BookingID)
	wantCode(t, err, boxoffice.ECONFLICT)
	if b := h.booking(res.BookingID); b.Status != boxoffice.BookingConfirmed {
		t.Errorf("booking %s after a refused release", b.Status)
	}
}

// The event's ticket limit counts a user's live holds and tickets across
// requests; a refused reserve holds nothing, and a released booking no
// longer counts.
func TestReserveTicketLimit(t *testing.T) {
	h := newHarness(t)
	ev := h.event(2, 4, func(e *boxoffice.Event) { e.TicketLimit = 3 })
	u := buyer("alice")

	_, err := h.svc.Reserve(h.ctx, u, ReserveRequest{EventID: ev.ID, SeatIDs: fseats("A", 1, 2, 3, 4), IdempotencyKey: "four"})
	wantCode(t, err, boxoffice.ELIMIT)
	h.wantHeld(ev.ID, false, fseats("A", 1, 2, 3, 4)...)

	first := h.reserve(u, ev.ID, "two", "F-A-1", "F-A-2")
	h.confirm(u, first.BookingID, "pay") // tickets count as holds did
	_, err = h.svc.Reserve(h.ctx, u, ReserveRequest{EventID: ev.ID, SeatIDs: fseats("A", 3, 4), IdempotencyKey: "two more"})
	wantCode(t, err, boxoffice.ELIMIT)
	h.wantHeld(ev.ID, false, "F-A-3", "F-A-4")
	second := h.reserve(u, ev.ID, "one more", "F-A-3")
	_, err = h.svc.Reserve(h.ctx, u, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-B-1"}, IdempotencyKey: "past"})
	wantCode(t, err, boxoffice.ELIMIT)
	h.wantHeld(ev.ID, false, "F-B-1")
	// Other users have limits of their own.
	h.reserve(buyer("bob"), ev.ID, "b1", "F-B-1", "F-B-2", "F-B-3")

	if _, err := h.svc.Release(h.ctx, u, second.BookingID); err != nil {
		t.Fatal(err)
	}
	h.reserve(u, ev.ID, "after release", "F-A-4")
}

// Best available holds the asked number of seats side by side in one row,
// the best row first, around a seat already taken and never a seat
// twice; an ask no row can meet any more is refused, one no row could
// ever meet is invalid.
func TestReserveBestAvailableHoldsAdjacentSeats(t *testing.T) {
	h := newHarness(t)
	ev := h.event(2, 4, nil)
	l, err := h.svc.Layout(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.reserve(buyer("zed"), ev.ID, "z", "F-A-2") // row A keeps F-A-1 and F-A-3..4
	taken := map[string]bool{"F-A-2": true}
	for i, u := range []string{"alice", "bob", "carol"} {
		res, err := h.svc.Reserve(h.ctx, buyer(u), ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 2}, IdempotencyKey: "best"})
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if len(res.SeatIDs) != 2 {
			t.Fatalf("%s got seats %v, want 2", u, res.SeatIDs)
		}
		a, _ := l.Seat(res.SeatIDs[0])
		b, _ := l.Seat(res.SeatIDs[1])
		if a.Section != b.Section || a.Row != b.Row || b.Number-a.Number != 1 && a.Number-b.Number != 1 {
			t.Errorf("%s got %v: not side by side", u, res.SeatIDs)
		}
		if wantRow := []string{"A", "B", "B"}[i]; a.Row != wantRow {
			t.Errorf("%s got %v in row %s, want row %s (the best row with a pair left)", u, res.SeatIDs, a.Row, wantRow)
		}
		for _, s := range res.SeatIDs {
			if taken[s] {
				t.Errorf("%s got seat %s, already taken", u, s)
			}
			taken[s] = true
		}
		bk := h.booking(res.BookingID)
		if !slices.Equal(bk.SeatIDs, res.SeatIDs) || bk.AmountCents != 2*seatPrice {
			t.Errorf("%s's booking has seats %v for %d cents, want %v for %d", u, bk.SeatIDs, bk.AmountCents, res.SeatIDs, 2*seatPrice)
		}
		h.wantHeldBy(bk)
	}
	// F-A-1 alone is left: no pair.
	_, err = h.svc.Reserve(h.ctx, buyer("dave"), ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 2}, IdempotencyKey: "two"})
	wantCode(t, err, boxoffice.ESEATTAKEN)
	h.wantHeld(ev.ID, false, "F-A-1")
	res, err := h.svc.Reserve(h.ctx, buyer("dave"), ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "one"})
	if err != nil || !slices.Equal(res.SeatIDs, []string{"F-A-1"}) {
		t.Errorf("best single seat: %+v, %v; want F-A-1", res, err)
	}
	_, err = h.svc.Reserve(h.ctx, buyer("erin"), ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 5}, IdempotencyKey: "five"})
	wantCode(t, err, boxoffice.EINVALID)
	_, err = h.svc.Reserve(h.ctx, buyer("erin"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-B-1"},
		Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "both"})
	wantCode(t, err, boxoffice.EINVALID)
}

// A direct reserve is refused before the sale opens, and for an event
// that sells through the queue.
func TestReserveOutsideADirectSale(t *testing.T) {
	h := newHarness(t)
	later := h.event(1, 2, func(e *boxoffice.Event) { e.SaleOpensAt = h.clock.Now().Add(time.Hour) })
	queued := h.event(1, 2, func(e *boxoffice.Event) { e.SaleMode = boxoffice.SaleQueued })
	_, err := h.svc.Reserve(h.ctx, buyer("alice"), ReserveRequest{EventID: later.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.ESALECLOSED)
	_, err = h.svc.Reserve(h.ctx, buyer("alice"), ReserveRequest{EventID: queued.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.ECONFLICT)
	_, err = h.svc.Reserve(h.ctx, buyer("alice"), ReserveRequest{EventID: later.ID, SeatIDs: []string{"F-A-1"}})
	wantCode(t, err, boxoffice.EIDEMMISSING)
	h.wantHeld(later.ID, false, "F-A-1")
	h.wantHeld(queued.ID, false, "F-A-1")

	h.clock.Advance(time.Hour) // the sale opens
	h.reserve(buyer("alice"), later.ID, "k2", "F-A-1")
}
