package sale

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/testpay"
)

// Venue staff admit a valid ticket once: the second scan of its code is
// refused as already checked in. Customers cannot check in, and an
// unknown code admits nobody.
func TestCheckInOnce(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	c := h.confirm(u, h.reserve(u, ev.ID, "r", "F-A-1", "F-A-2").BookingID, "p")
	code := c.Tickets[0].Code

	_, err := h.svc.CheckIn(h.ctx, u, ev.ID, code)
	wantCode(t, err, boxoffice.EFORBIDDEN)
	v, err := h.svc.CheckIn(h.ctx, testStaff, ev.ID, code)
	if err != nil {
		t.Fatal(err)
	}
	if v.TicketID != c.Tickets[0].TicketID || v.SeatID != c.Tickets[0].SeatID || v.CheckedInAt == "" {
		t.Errorf("check-in answer %+v: want ticket %s admitted", v, c.Tickets[0].TicketID)
	}
	if want := h.clock.Now().UTC().Format(TimeFormat); v.CheckedInAt != want {
		t.Errorf("checked in at %s, want %s", v.CheckedInAt, want)
	}
	_, err = h.svc.CheckIn(h.ctx, testStaff, ev.ID, code)
	wantCode(t, err, boxoffice.ECHECKEDIN)
	_, err = h.svc.CheckIn(h.ctx, testStaff, 0, code) // at any door
	wantCode(t, err, boxoffice.ECHECKEDIN)

	// The booking's other ticket is still good, at its own event's doors.
	other := h.event(1, 1, nil)
	_, err = h.svc.CheckIn(h.ctx, testStaff, other.ID, c.Tickets[1].Code)
	wantCode(t, err, boxoffice.ECONFLICT)
	if _, err := h.svc.CheckIn(h.ctx, testAdmin, ev.ID, c.Tickets[1].Code); err != nil {
		t.Errorf("organiser checks in the second ticket: %v", err)
	}
	_, err = h.svc.CheckIn(h.ctx, testStaff, ev.ID, "NO-SUCH-CODE")
	wantCode(t, err, boxoffice.ENOTFOUND)
}

// Cancelling a confirmed booking of a refundable event refunds the
// payment in full at the gateway, voids its tickets and frees its seats
// for another buyer; a retry answers the same cancellation.
func TestCancelRefundsAndFreesTheSeats(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, func(e *boxoffice.Event) { e.Refundable, e.RefundCutoffHours = true, 24 })
	u := buyer("alice")
	res := h.reserve(u, ev.ID, "r", "F-A-1", "F-A-2")
	c := h.confirm(u, res.BookingID, "p")

	got, err := h.svc.Cancel(h.ctx, u, CancelRequest{BookingID: res.BookingID, IdempotencyKey: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != string(boxoffice.BookingCancelled) || got.RefundCents != 2*seatPrice || got.RefundStatus != "refunded" {
		t.Errorf("cancellation %+v: want cancelled, %d cents refunded", got, 2*seatPrice)
	}
	auths := h.auths()
	if len(auths) != 1 || auths[0].Status != testpay.Refunded || auths[0].RefundedCents != 2*seatPrice {
		t.Errorf("gateway after the cancel: %+v, want one authorization refunded in full", auths)
	}
	if charged := h.pay.Charged(); len(charged) != 0 {
		t.Errorf("still charged: %v", charged)
	}
	p, err := h.store.Payment(h.ctx, res.BookingID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != boxoffice.PaymentRefunded {
		t.Errorf("payment %s, want refunded", p.Status)
	}
	b := h.booking(res.BookingID)
	if b.Status != boxoffice.BookingCancelled {
		t.Errorf("booking %s, want cancelled", b.Status)
	}
	for _, tk := range b.Tickets {
		if tk.Status != boxoffice.TicketVoid || tk.VoidReason != boxoffice.VoidCancelled {
			t.Errorf("ticket %s is %s (%s), want void (cancelled)", tk.ID, tk.Status, tk.VoidReason)
		}
	}
	_, err = h.svc.CheckIn(h.ctx, testStaff, ev.ID, c.Tickets[0].Code)
	wantCode(t, err, boxoffice.ETICKETVOID)

	// The seats are anyone's again.
	h.wantHeld(ev.ID, false, "F-A-1", "F-A-2")
	sold, err := h.store.SoldSeats(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sold) != 0 {
		t.Errorf("sold seats after the cancel: %v", sold)
	}
	h.reserve(buyer("bob"), ev.ID, "b", "F-A-1", "F-A-2")

	// A retry replays; the money goes back once.
	again, err := h.svc.Cancel(h.ctx, u, CancelRequest{BookingID: res.BookingID, IdempotencyKey: "x"})
	if err != nil || !again.Replayed || again.RefundStatus != "refunded" {
		t.Errorf("retried cancel: %+v, %v", again, err)
	}
	if a := h.auths(); len(a) != 1 || a[0].RefundedCents != 2*seatPrice {
		t.Errorf("gateway after the retry: %+v", a)
	}
}

// A booking is cancelled only if it is confirmed, by its owner, under a
// refund policy that allows it now.
func TestCancelRefusals(t *testing.T) {
	h := newHarness(t)
	firm := h.event(1, 2, nil)
	flexible := h.event(1, 2, func(e *boxoffice.Event) { e.Refundable, e.RefundCutoffHours = true, 24 })
	u := buyer("alice")

	pending := h.reserve(u, flexible.ID, "r1", "F-A-1")
	_, err := h.svc.Cancel(h.ctx, u, CancelRequest{BookingID: pending.BookingID, IdempotencyKey: "x1"})
	wantCode(t, err, boxoffice.ECONFLICT)
	h.confirm(u, pending.BookingID, "p1")
	_, err = h.svc.Cancel(h.ctx, buyer("bob"), CancelRequest{BookingID: pending.BookingID, IdempotencyKey: "x1"})
	wantCode(t, err, boxoffice.ENOTFOUND)

	sold := h.reserve(u, firm.ID, "r2", "F-A-1")
	h.confirm(u, sold.BookingID, "p2")
	_, err = h.svc.Cancel(h.ctx, u, CancelRequest{BookingID: sold.BookingID, IdempotencyKey: "x2"})
	wantCode(t, err, boxoffice.ECANCELCLOSED)

	// Within a day of the show the flexible event's refunds are closed too.
	h.clock.Advance(flexible.StartsAt.Sub(h.clock.Now()) - 23*time.Hour)
	_, err = h.svc.Cancel(h.ctx, u, CancelRequest{BookingID: pending.BookingID, IdempotencyKey: "x3"})
	wantCode(t, err, boxoffice.ECANCELCLOSED)
	for _, a := range h.auths() {
		if a.RefundedCents != 0 || a.Status != testpay.Captured {
			t.Errorf("authorization %+v after refused cancels, want captured, nothing refunded", a)
		}
	}
}
