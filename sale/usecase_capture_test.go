package sale

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/testpay"
)

// gatedCaptures is the test gateway with captures that wait until gate
// is closed.
type gatedCaptures struct {
	*testpay.Gateway
	gate chan struct{}
}

func (g gatedCaptures) Capture(ctx context.Context, authID string) error {
	<-g.gate
	return g.Gateway.Capture(ctx, authID)
}

func newGatedHarness(t *testing.T) (*harness, chan struct{}) {
	gate := make(chan struct{})
	h := newHarnessWith(t, harnessOptions{payments: func(g *testpay.Gateway) boxoffice.PaymentGateway {
		return gatedCaptures{Gateway: g, gate: gate}
	}})
	return h, gate
}

// liveness bounds the wait for a call that must return without anything
// else happening first: not a measure of speed, a test that fails
// instead of hanging.
const liveness = time.Minute

// A confirm answers once the tickets are written, without waiting for the
// capture; the capture still happens, and is recorded, after the answer.
func TestConfirmAnswersBeforeTheCapture(t *testing.T) {
	h, gate := newGatedHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r", "F-A-1")

	answered := make(chan *Confirmation, 1)
	go func() { answered <- h.confirm(u, res.BookingID, "p") }()
	var c *Confirmation
	select {
	case c = <-answered:
	case <-time.After(liveness):
		close(gate)
		t.Fatal("the confirm waited for the capture")
	}
	if len(c.Tickets) != 1 || h.booking(res.BookingID).Status != boxoffice.BookingConfirmed {
		t.Fatalf("confirmation %+v: want one ticket of a confirmed booking", c)
	}
	p, err := h.store.Payment(h.ctx, res.BookingID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != boxoffice.PaymentAuthorized {
		t.Errorf("payment %s while the gateway has not captured, want authorized", p.Status)
	}

	close(gate)
	auths := h.auths() // waits for the capture
	if len(auths) != 1 || auths[0].Status != testpay.Captured {
		t.Errorf("gateway after the capture: %+v, want one captured authorization", auths)
	}
	if p, err = h.store.Payment(h.ctx, res.BookingID); err != nil {
		t.Fatal(err)
	}
	if p.Status != boxoffice.PaymentCaptured {
		t.Errorf("payment %s after the capture, want captured", p.Status)
	}
}

// A cancel right after the confirm waits for that booking's capture in
// this process, so the refund finds the money taken and pays it back,
// as it would had the capture come before the answer. Without the wait
// the refund would release the uncaptured authorization (voided) and
// the capture would then fail.
func TestCancelWaitsForItsBookingsCapture(t *testing.T) {
	h, gate := newGatedHarness(t)
	ev := h.event(1, 4, func(e *boxoffice.Event) { e.Refundable, e.RefundCutoffHours = true, 24 })
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r", "F-A-1")
	h.confirm(u, res.BookingID, "p")

	type result struct {
		c   *Cancellation
		err error
	}
	cancelled := make(chan result, 1)
	go func() {
		c, err := h.svc.Cancel(h.ctx, u, CancelRequest{BookingID: res.BookingID, IdempotencyKey: "x"})
		cancelled <- result{c, err}
	}()
	// A cancel that does not wait returns at once; one that waits is still
	// waiting here (a slow machine can only hide the bug, not fail this).
	select {
	case r := <-cancelled:
		close(gate)
		t.Fatalf("the cancel answered %+v, %v before the capture ended", r.c, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	close(gate)
	var r result
	select {
	case r = <-cancelled:
	case <-time.After(liveness):
		t.Fatal("the cancel still waits after the capture")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.c.RefundStatus != "refunded" {
		t.Errorf("cancellation %+v, want refunded", r.c)
	}
	auths := h.auths()
	if len(auths) != 1 || auths[0].Status != testpay.Refunded || auths[0].RefundedCents != seatPrice {
		t.Errorf("gateway after the cancel: %+v, want one authorization captured and refunded in full", auths)
	}
}

// Past the bound of captures running (maxBackgroundCaptures; 4 here), a
// confirm captures before it answers: a gateway that stops answering
// slows confirms rather than piling up goroutines.
func TestCapturesPastTheBoundRunBeforeTheAnswer(t *testing.T) {
	const bound = 4
	h, gate := newGatedHarness(t)
	h.svc.core.captures = newCaptures(bound)
	ev := h.event(1, bound+1, nil)
	for i := range bound {
		u := buyer(fmt.Sprintf("fan-%d", i))
		res := h.reserve(u, ev.ID, "r", fseats("A", i+1)...)
		h.confirm(u, res.BookingID, "p")
	}
	last := buyer("last")
	res := h.reserve(last, ev.ID, "r", fseats("A", bound+1)...)
	answered := make(chan *Confirmation, 1)
	go func() { answered <- h.confirm(last, res.BookingID, "p") }()
	select {
	case c := <-answered:
		close(gate)
		t.Fatalf("confirm past the bound answered %+v before its capture", c)
	case <-time.After(200 * time.Millisecond):
	}
	close(gate)
	select {
	case <-answered:
	case <-time.After(liveness):
		t.Fatal("the confirm still waits after the gateway answered")
	}
	p, err := h.store.Payment(h.ctx, res.BookingID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != boxoffice.PaymentCaptured {
		t.Errorf("payment %s of the confirm past the bound, at its answer: want captured", p.Status)
	}
	for _, a := range h.auths() {
		if a.Status != testpay.Captured {
			t.Errorf("authorization %+v, want captured", a)
		}
	}
}
