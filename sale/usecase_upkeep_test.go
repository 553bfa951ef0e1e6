package sale

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The reconciler expires a pending booking once its hold has been over
// for PendingGrace, not before, reports it once, and leaves a booking
// still held alone; its seats are anyone's after.
func TestReconcileExpiresAfterThePendingGrace(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	cfg := h.svc.Config()
	stale := h.reserve(buyer("alice"), ev.ID, "a", "F-A-1")
	h.clock.Advance(cfg.PendingGrace + time.Minute) // bob's hold outlasts the grace of alice's
	fresh := h.reserve(buyer("bob"), ev.ID, "b", "F-A-2")

	// Up to a millisecond before the grace is over: nothing to do.
	h.clock.Advance(cfg.HoldTTL - time.Minute - time.Millisecond)
	r, err := h.svc.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Expired != 0 {
		t.Errorf("reconciled %+v within the grace: want nothing expired", r)
	}
	if b := h.booking(stale.BookingID); b.Status != boxoffice.BookingPending {
		t.Errorf("alice's booking is %s within the grace, want still pending", b.Status)
	}

	h.clock.Advance(time.Millisecond) // the hold ran out PendingGrace ago
	r, err = h.svc.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Expired != 1 {
		t.Errorf("reconciled %+v: want alice's booking expired", r)
	}
	if b := h.booking(stale.BookingID); b.Status != boxoffice.BookingExpired {
		t.Errorf("alice's booking is %s, want expired", b.Status)
	}
	if b := h.booking(fresh.BookingID); b.Status != boxoffice.BookingPending {
		t.Errorf("bob's booking is %s, want pending (its hold runs on)", b.Status)
	}
	h.wantHeldBy(h.booking(fresh.BookingID))

	if r, err := h.svc.Reconcile(h.ctx); err != nil || r.Expired != 0 {
		t.Errorf("second pass %+v, %v: want nothing more expired", r, err)
	}
	_, err = h.svc.Confirm(h.ctx, buyer("alice"), ConfirmRequest{BookingID: stale.BookingID, PaymentToken: "tok_visa", IdempotencyKey: "p"})
	wantCode(t, err, boxoffice.EHOLDLOST)
	h.wantHeld(ev.ID, false, "F-A-1")
	h.reserve(buyer("carol"), ev.ID, "c", "F-A-1")
}

// The reconciler purges idempotency records once they expire: the key is
// free again afterwards.
func TestReconcilePurgesIdempotencyRecords(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, nil)
	u := buyer("alice")
	first := h.reserve(u, ev.ID, "k", "F-A-1")
	if r, err := h.svc.Reconcile(h.ctx); err != nil || r.Purged != 0 {
		t.Fatalf("reconciled %+v, %v: want nothing purged yet", r, err)
	}
	h.clock.Advance(h.svc.Config().IdempotencyTTL + time.Millisecond)
	r, err := h.svc.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Purged != 1 || r.Expired != 1 {
		t.Errorf("reconciled %+v: want alice's booking expired and its key purged", r)
	}
	again := h.reserve(u, ev.ID, "k", "F-A-1")
	if again.Replayed || again.BookingID == first.BookingID {
		t.Errorf("reserve with a purged key %+v: want a new booking", again)
	}
}

// The reconciler purges the queued requests decided QueueRetention ago
// from a queue that keeps them (the embedded one), not before, and never a
// live one; their bookings stay.
func TestReconcilePurgesDecidedQueuedRequests(t *testing.T) {
	h := newHarness(t)
	ev := h.queuedEvent(1, 4)
	alice, bob, carol := buyer("alice"), buyer("bob"), buyer("carol")
	held := h.enqueue(alice, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	refused := h.enqueue(bob, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	if err := h.svc.ServeBatch(h.ctx, h.logged(held, refused)); err != nil {
		t.Fatal(err)
	}
	if qt := h.status(bob, refused.RequestID); qt.Status != boxoffice.QueueRejected {
		t.Fatalf("bob's request is %s, want rejected", qt.Status)
	}
	h.clock.Advance(QueueRetention - time.Second)
	waiting := h.enqueue(carol, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-2"}, IdempotencyKey: "k"})
	if r, err := h.svc.Reconcile(h.ctx); err != nil || r.PurgedRequests != 0 {
		t.Fatalf("reconciled %+v, %v within the retention: want no request purged", r, err)
	}

	h.clock.Advance(2 * time.Second)
	r, err := h.svc.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.PurgedRequests != 2 {
		t.Errorf("reconciled %+v: want alice's and bob's requests purged", r)
	}
	_, err = h.svc.QueueStatus(h.ctx, alice, held.RequestID)
	wantCode(t, err, boxoffice.ENOTFOUND)
	_, err = h.svc.QueueStatus(h.ctx, bob, refused.RequestID)
	wantCode(t, err, boxoffice.ENOTFOUND)
	if qt := h.status(carol, waiting.RequestID); qt.Status != boxoffice.QueueQueued {
		t.Errorf("carol's request is %s after the purge, want still queued", qt.Status)
	}
	if b := h.booking(held.RequestID); b.UserID != alice.ID {
		t.Errorf("alice's booking after the purge: %+v", b)
	}
}
