package sale

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/sqlite"
)

// queuedEvent creates an event that sells through the queue, open now.
func (h *harness) queuedEvent(rows, perRow int) *boxoffice.Event {
	h.t.Helper()
	return h.event(rows, perRow, func(e *boxoffice.Event) { e.SaleMode = boxoffice.SaleQueued })
}

// enqueue queues a reserve for u and fails the test if it is refused.
func (h *harness) enqueue(u boxoffice.User, req ReserveRequest) *QueueTicket {
	h.t.Helper()
	qt, err := h.svc.Enqueue(h.ctx, u, req)
	if err != nil {
		h.t.Fatalf("%s enqueues %+v: %v", u.ID, req, err)
	}
	return qt
}

// logged reads the requests of tickets back as the log holds them.
func (h *harness) logged(tickets ...*QueueTicket) []*boxoffice.QueuedRequest {
	h.t.Helper()
	out := make([]*boxoffice.QueuedRequest, len(tickets))
	for i, qt := range tickets {
		e, err := h.queue.Entry(h.ctx, qt.RequestID)
		if err != nil {
			h.t.Fatal(err)
		}
		out[i] = e.Request
	}
	return out
}

// status reads a queued request as its owner sees it.
func (h *harness) status(u boxoffice.User, id boxoffice.ID) *QueueTicket {
	h.t.Helper()
	qt, err := h.svc.QueueStatus(h.ctx, u, id)
	if err != nil {
		h.t.Fatalf("status of %s: %v", id, err)
	}
	return qt
}

// The front door answers a queued reserve with a ticket: a position in
// arrival order and the status URL. The same key again replays the same
// ticket; the same key with another body is a mismatch; a second live
// request of the same user is refused.
func TestEnqueueGivesAPositionAndReplays(t *testing.T) {
	h := newHarness(t)
	ev := h.queuedEvent(1, 4)
	alice, bob := buyer("alice"), buyer("bob")
	req := ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "q1"}

	first := h.enqueue(alice, req)
	if first.Status != boxoffice.QueueQueued || first.QueuePosition != 1 || first.Ahead != 0 || first.Replayed ||
		first.EventID != ev.ID || first.StatusURL != QueueURL(first.RequestID) || first.EstimatedWaitSeconds == nil {
		t.Errorf("first ticket %+v: want queued at position 1, nobody ahead, with a wait estimate", first)
	}
	second := h.enqueue(bob, ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 2}, IdempotencyKey: "q1"})
	if second.QueuePosition != 2 || second.Ahead != 1 || second.RequestID == first.RequestID {
		t.Errorf("second ticket %+v: want position 2, one ahead", second)
	}

	again := h.enqueue(alice, req)
	if !again.Replayed || again.RequestID != first.RequestID || again.QueuePosition != first.QueuePosition {
		t.Errorf("retry %+v: want the first ticket (%s at %d) replayed", again, first.RequestID, first.QueuePosition)
	}
	_, err := h.svc.Enqueue(h.ctx, alice, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-2"}, IdempotencyKey: "q1"})
	wantCode(t, err, boxoffice.EIDEMMISMATCH)
	_, err = h.svc.Enqueue(h.ctx, alice, ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-2"}, IdempotencyKey: "q2"})
	wantCode(t, err, boxoffice.ECONFLICT) // one live request per user (MaxLivePerUser)

	p, err := h.queue.Progress(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Admitted != 2 || p.Served != 0 {
		t.Errorf("progress %+v: want 2 admitted, none served", p)
	}
	// The front door holds nothing: only the drain does.
	h.wantHeld(ev.ID, false, fseats("A", 1, 2, 3, 4)...)
	if qt := h.status(alice, first.RequestID); qt.Status != boxoffice.QueueQueued || qt.QueuePosition != 1 {
		t.Errorf("status before the drain %+v", qt)
	}
	// Another user does not see it.
	_, err = h.svc.QueueStatus(h.ctx, bob, first.RequestID)
	wantCode(t, err, boxoffice.ENOTFOUND)
}

// The front door refuses what the queue does not take: a direct event, a
// sale over, invalid seats.
func TestEnqueueRefusals(t *testing.T) {
	h := newHarness(t)
	direct := h.event(1, 4, nil)
	queued := h.queuedEvent(1, 4)
	_, err := h.svc.Enqueue(h.ctx, buyer("alice"), ReserveRequest{EventID: direct.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.ECONFLICT)
	_, err = h.svc.Enqueue(h.ctx, buyer("alice"), ReserveRequest{EventID: queued.ID, SeatIDs: []string{"F-Z-1"}, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.EINVALID)
	h.clock.Advance(queued.StartsAt.Sub(h.clock.Now()))
	_, err = h.svc.Enqueue(h.ctx, buyer("alice"), ReserveRequest{EventID: queued.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.ESALECLOSED)
}

// The drain serves a batch in position order whatever order the log
// hands it in: the first requests get held bookings (the request's id is
// the booking's), and once the seats have run out the rest are refused;
// QueueStatus shows each outcome, and a redelivered batch changes nothing.
func TestServeBatchHoldsInPositionOrder(t *testing.T) {
	h := newHarness(t)
	ev := h.queuedEvent(1, 3)
	users := []boxoffice.User{buyer("u1"), buyer("u2"), buyer("u3"), buyer("u4"), buyer("u5")}
	reqs := []ReserveRequest{
		{EventID: ev.ID, SeatIDs: []string{"F-A-2"}, IdempotencyKey: "k"},
		{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "k"},
		{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "k"},
		{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"},
		{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "k"},
	}
	tickets := make([]*QueueTicket, len(users))
	for i, u := range users {
		tickets[i] = h.enqueue(u, reqs[i])
		if tickets[i].QueuePosition != int64(i+1) {
			t.Fatalf("%s at position %d, want %d", u.ID, tickets[i].QueuePosition, i+1)
		}
	}
	batch := h.logged(tickets...)
	slices.Reverse(batch) // the last first: the drain must not serve in this order
	if err := h.svc.ServeBatch(h.ctx, batch); err != nil {
		t.Fatal(err)
	}

	seats := map[string]string{}
	for i, u := range users[:3] {
		qt := h.status(u, tickets[i].RequestID)
		if qt.Status != boxoffice.QueueHeld || qt.BookingID != tickets[i].RequestID || qt.PaymentURL != PaymentURL(qt.BookingID) {
			t.Errorf("%s (position %d): %+v, want held as booking %s", u.ID, i+1, qt, tickets[i].RequestID)
			continue
		}
		if want := h.clock.Now().Add(h.svc.Config().HoldTTL); qt.HeldUntil == nil || !qt.HeldUntil.Equal(want) {
			t.Errorf("%s held until %v, want %s", u.ID, qt.HeldUntil, want)
		}
		b := h.booking(qt.BookingID)
		if b.Status != boxoffice.BookingPending || b.UserID != u.ID || len(b.SeatIDs) != 1 {
			t.Errorf("%s's booking: %s of %s, seats %v", u.ID, b.Status, b.UserID, b.SeatIDs)
			continue
		}
		if other, ok := seats[b.SeatIDs[0]]; ok {
			t.Errorf("seat %s given to %s and %s", b.SeatIDs[0], other, u.ID)
		}
		seats[b.SeatIDs[0]] = u.ID
		h.wantHeldBy(b)
	}
	if seats["F-A-2"] != "u1" {
		t.Errorf("F-A-2 went to %q, want u1 (position 1 asked for it)", seats["F-A-2"])
	}
	for i, u := range users[3:] {
		qt := h.status(u, tickets[3+i].RequestID)
		if qt.Status != boxoffice.QueueRejected || qt.Reason != boxoffice.ESEATTAKEN || qt.BookingID != 0 {
			t.Errorf("%s (position %d): %+v, want rejected, %s", u.ID, 4+i, qt, boxoffice.ESEATTAKEN)
		}
		if _, err := h.store.Booking(h.ctx, tickets[3+i].RequestID); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
			t.Errorf("%s's request has a booking (err %v)", u.ID, err)
		}
	}
	p, err := h.queue.Progress(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Served != 5 {
		t.Errorf("progress %+v: want 5 served", p)
	}

	// Redelivery: every request has its outcome, nothing moves.
	if err := h.svc.ServeBatch(h.ctx, h.logged(tickets...)); err != nil {
		t.Fatal(err)
	}
	for i, u := range users[:3] {
		h.wantHeldBy(h.booking(tickets[i].RequestID))
		if qt := h.status(u, tickets[i].RequestID); qt.Status != boxoffice.QueueHeld {
			t.Errorf("%s after redelivery: %+v", u.ID, qt)
		}
	}
	// A held booking of the queue is paid for as any other.
	c := h.confirm(users[0], tickets[0].RequestID, "pay")
	if len(c.Tickets) != 1 || c.Tickets[0].SeatID != "F-A-2" {
		t.Errorf("u1's confirmation %+v, want one ticket for F-A-2", c)
	}
}

// A queued request retried after its outcome replays its ticket, now
// with the outcome.
func TestEnqueueRetryAfterTheDrainShowsTheOutcome(t *testing.T) {
	h := newHarness(t)
	ev := h.queuedEvent(1, 2)
	u := buyer("alice")
	req := ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1", "F-A-2"}, IdempotencyKey: "k"}
	first := h.enqueue(u, req)
	if err := h.svc.ServeBatch(h.ctx, h.logged(first)); err != nil {
		t.Fatal(err)
	}
	again := h.enqueue(u, req)
	if !again.Replayed || again.RequestID != first.RequestID || again.Status != boxoffice.QueueHeld || again.BookingID != first.RequestID {
		t.Errorf("retry after the drain %+v, want the held outcome of %s", again, first.RequestID)
	}
}

// The worker drains the log by itself: requests queued while it runs get
// their outcomes, announced on the notifier, and it stops with its
// context.
func TestRunWorkerDrainsTheLog(t *testing.T) {
	h := newHarness(t)
	ev := h.queuedEvent(1, 2)

	notices := make(chan boxoffice.QueueNotice, 16)
	lctx, stopListening := context.WithCancel(h.ctx)
	defer stopListening()
	go h.notifier.Listen(lctx, func(n boxoffice.QueueNotice) { notices <- n })
	// Wait until the listener is in (a probe comes through).
	for probed := false; !probed; {
		if err := h.notifier.Notify(h.ctx, boxoffice.QueueNotice{EventID: -1}); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-notices:
			probed = n.EventID == -1
		case <-time.After(time.Millisecond): // a poll, not a deadline
		}
	}

	wctx, stopWorker := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- h.svc.RunWorker(wctx) }()
	defer func() {
		stopWorker()
		if err := <-done; err != nil {
			t.Errorf("RunWorker: %v", err)
		}
	}()

	var tickets []*QueueTicket
	users := []boxoffice.User{buyer("u1"), buyer("u2"), buyer("u3")}
	for _, u := range users {
		tickets = append(tickets, h.enqueue(u, ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "k"}))
	}
	got := map[boxoffice.ID]boxoffice.QueueStatus{}
	for len(got) < len(tickets) {
		n := <-notices // bounded by the test binary's timeout
		if n.EventID == ev.ID {
			got[n.RequestID] = n.Status
		}
	}
	want := []boxoffice.QueueStatus{boxoffice.QueueHeld, boxoffice.QueueHeld, boxoffice.QueueRejected}
	for i, u := range users {
		if got[tickets[i].RequestID] != want[i] {
			t.Errorf("%s (position %d) was announced %q, want %q", u.ID, i+1, got[tickets[i].RequestID], want[i])
		}
		if qt := h.status(u, tickets[i].RequestID); qt.Status != want[i] {
			t.Errorf("%s (position %d): %+v, want %s", u.ID, i+1, qt, want[i])
		}
	}
}

// When the seat map shows nothing left, the front door answers sold out
// at once, pointing at the waitlist, and queues nothing.
func TestEnqueueSoldOutAtTheDoor(t *testing.T) {
	m := &emptyingMap{}
	m.empty.Store(true)
	h := newHarnessWith(t, harnessOptions{avail: m})
	m.h = h
	ev := h.queuedEvent(1, 2)
	_, err := h.svc.Enqueue(h.ctx, buyer("alice"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	wantCode(t, err, boxoffice.ESOLDOUT)
	if w := boxoffice.ErrorWaitlist(err); w != ev.ID {
		t.Errorf("sold out points at waitlist %s, want %s", w, ev.ID)
	}
	p, err := h.queue.Progress(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Admitted != 0 {
		t.Errorf("progress %+v: nothing should be admitted", p)
	}
	_, err = h.queue.EntryByKey(h.ctx, ev.ID, "alice", "k")
	wantCode(t, err, boxoffice.ENOTFOUND)
}

// emptyingMap is a seat map whose seats are all available until empty is
// set, then all held: the last seats taken.
type emptyingMap struct {
	h     *harness
	empty atomic.Bool
}

func (m *emptyingMap) Statuses(ctx context.Context, eventID boxoffice.ID, maxAge time.Duration) (layout.Statuses, error) {
	l, err := m.h.svc.Layout(ctx, eventID)
	if err != nil {
		return nil, err
	}
	st := layout.Available
	if m.empty.Load() {
		st = layout.Held
	}
	out := make(layout.Statuses, l.Len())
	for i := range out {
		out[i] = st
	}
	return out, nil
}

// queuedPair queues alice's request for both seats of a two-seat event,
// then bob's for one of them, on a seat map that empties when told.
func queuedPair(t *testing.T, o harnessOptions) (h *harness, m *emptyingMap, a, b *QueueTicket) {
	m = &emptyingMap{}
	o.avail = m
	h = newHarnessWith(t, o)
	m.h = h
	ev := h.queuedEvent(1, 2)
	a = h.enqueue(buyer("alice"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1", "F-A-2"}, IdempotencyKey: "k"})
	b = h.enqueue(buyer("bob"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	return h, m, a, b
}

// finishHeld records the outcome a worker gives a request it held.
func (h *harness) finishHeld(qt *QueueTicket) {
	h.t.Helper()
	now := h.clock.Now()
	o := boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: qt.RequestID, HeldUntil: now.Add(10 * time.Minute), FinishedAt: now}
	if _, err := h.queue.FinishMany(h.ctx, h.logged(qt), []boxoffice.QueueOutcome{o}); err != nil {
		h.t.Fatal(err)
	}
}

// The seats a worker is holding count as taken before it records their
// outcomes, so the sold-out mark covers the worker's own requests too. A
// request whose worker is at it (its lease held) is not told sold out by
// the holds its own seats emptied the map with: it stays queued, then is
// told its outcome. A request nobody is at is told sold out, and the drain
// decides it as told.
func TestStatusDoesNotTellARequestBeingHeldSoldOut(t *testing.T) {
	h, m, a, b := queuedPair(t, harnessOptions{})
	release, err := h.leases.TryLease(h.ctx, requestLease(h.logged(a)[0]), queuedLease)
	if err != nil {
		t.Fatal(err)
	}
	m.empty.Store(true) // alice's worker has held the event's last seats
	other := h.node()   // counts the seat map afresh
	status := func(u string, qt *QueueTicket) *QueueTicket {
		t.Helper()
		got, err := other.QueueStatus(h.ctx, buyer(u), qt.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := status("alice", a); got.Status != boxoffice.QueueQueued {
		t.Errorf("alice, being held: %+v, want queued", got)
	}
	if got := status("bob", b); got.Status != boxoffice.QueueRejected || got.Reason != boxoffice.ESOLDOUT {
		t.Errorf("bob, behind the sell-out: %+v, want rejected sold_out", got)
	}
	h.finishHeld(a)
	release()
	if got := status("alice", a); got.Status != boxoffice.QueueHeld {
		t.Errorf("alice, held: %+v", got)
	}
	if err := h.svc.ServeBatch(h.ctx, h.logged(b)); err != nil {
		t.Fatal(err)
	}
	if e, err := h.queue.Entry(h.ctx, b.RequestID); err != nil || e.Status != boxoffice.QueueRejected || e.Reason != boxoffice.ESOLDOUT {
		t.Errorf("bob decided: %+v %v, want rejected sold_out as told", e, err)
	}
}

// finishingState is a queue state on which a worker records a held outcome
// for the request of the entry read first, just after that read.
type finishingState struct {
	boxoffice.QueueState
	h    *harness
	qt   *QueueTicket
	done bool
}

func (f *finishingState) Entry(ctx context.Context, id boxoffice.ID) (*boxoffice.QueueEntry, error) {
	e, err := f.QueueState.Entry(ctx, id)
	if !f.done && id == f.qt.RequestID {
		f.done = true
		f.h.finishHeld(f.qt)
	}
	return e, err
}

// A request a worker finishes between the status's read and its verdict is
// told its outcome, not the sell-out its seats made.
func TestStatusTellsTheOutcomeRecordedMeanwhile(t *testing.T) {
	f := &finishingState{}
	h, m, a, _ := queuedPair(t, harnessOptions{queue: func(q *sqlite.Queue) boxoffice.QueueState {
		f.QueueState = q
		return f
	}})
	f.h, f.qt = h, a
	m.empty.Store(true)
	got, err := h.node().QueueStatus(h.ctx, buyer("alice"), a.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != boxoffice.QueueHeld {
		t.Errorf("alice, held while her status was read: %+v", got)
	}
}

// unrecordedState is a queue state that cannot record outcomes: a worker
// that dies between its bookings and their outcomes.
type unrecordedState struct{ boxoffice.QueueState }

func (unrecordedState) FinishMany(context.Context, []*boxoffice.QueuedRequest, []boxoffice.QueueOutcome) ([]bool, error) {
	return nil, boxoffice.Errorf(boxoffice.EUNAVAILABLE, "the worker died")
}

// A request a worker booked but died before recording (its lease run out)
// is not told sold out by the seats its booking holds: the next delivery
// gives it that booking.
func TestStatusDoesNotTellARequestBookedUnrecordedSoldOut(t *testing.T) {
	var real boxoffice.QueueState
	h, m, a, _ := queuedPair(t, harnessOptions{queue: func(q *sqlite.Queue) boxoffice.QueueState {
		real = q
		return unrecordedState{q}
	}})
	if err := h.svc.ServeBatch(h.ctx, h.logged(a)); err == nil {
		t.Fatal("the batch of a worker that died was served")
	}
	// Alice's booking holds the event's seats; another node counts the
	// seat map afresh.
	m.empty.Store(true)
	got, err := h.node().QueueStatus(h.ctx, buyer("alice"), a.RequestID)
	if err != nil || got.Status != boxoffice.QueueQueued {
		t.Errorf("alice, booked, outcome not recorded: %+v %v, want queued", got, err)
	}
	// The next delivery gives her the booking, as the status promised.
	h.deps.Queue = real
	if err := h.node().ServeBatch(h.ctx, h.logged(a)); err != nil {
		t.Fatal(err)
	}
	if got := h.status(buyer("alice"), a.RequestID); got.Status != boxoffice.QueueHeld {
		t.Errorf("alice redelivered: %+v, want held", got)
	}
}

// Positions follow arrival across many buyers, each request its own.
func TestEnqueuePositionsAreDistinct(t *testing.T) {
	h := newHarness(t)
	ev := h.queuedEvent(2, 10)
	seen := map[int64]bool{}
	for i := range 20 {
		qt := h.enqueue(buyer(fmt.Sprintf("u%d", i)), ReserveRequest{EventID: ev.ID, Best: &boxoffice.BestAvailable{Quantity: 1}, IdempotencyKey: "k"})
		if seen[qt.QueuePosition] || qt.QueuePosition != int64(i+1) {
			t.Errorf("request %d at position %d", i, qt.QueuePosition)
		}
		seen[qt.QueuePosition] = true
	}
}

// The wait a 202 tells is kept with the request in the log, where the
// worker that decides it measures it against the real wait: the same
// figure, growing with the place in line. A replay tells the wait as it
// is now and keeps the first; the pre-queue, told the opening time, keeps
// none.
func TestEnqueueKeepsTheToldWait(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{cfg: Config{DrainPrior: 2}}) // 2 requests/s: waits of 0.5 s, 1 s, ...
	ev := h.queuedEvent(1, 8)
	var told []float64
	var tickets []*QueueTicket
	for i, u := range []string{"ann", "ben", "cat"} {
		qt := h.enqueue(buyer(u), ReserveRequest{EventID: ev.ID, SeatIDs: []string{fmt.Sprintf("F-A-%d", i+1)}, IdempotencyKey: "k"})
		if qt.EstimatedWaitSeconds == nil {
			t.Fatalf("%s: no wait told", u)
		}
		told, tickets = append(told, *qt.EstimatedWaitSeconds), append(tickets, qt)
	}
	for i, r := range h.logged(tickets...) {
		if r.EstimatedWait == nil || *r.EstimatedWait != told[i] {
			t.Errorf("request %d keeps wait %v, its 202 told %v", i+1, r.EstimatedWait, told[i])
		}
	}
	if !(told[0] < told[1] && told[1] < told[2]) {
		t.Errorf("waits told %v: want them to grow with the place in line", told)
	}
	if again := h.enqueue(buyer("ann"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"}); !again.Replayed {
		t.Errorf("retry %+v: want a replay", again)
	}
	if r := h.logged(tickets[0])[0]; r.EstimatedWait == nil || *r.EstimatedWait != told[0] {
		t.Errorf("after a replay the request keeps %v, want %v", r.EstimatedWait, told[0])
	}

	later := h.event(1, 4, func(e *boxoffice.Event) {
		e.SaleMode, e.SaleOpensAt = boxoffice.SaleQueued, h.clock.Now().Add(time.Minute)
	})
	qt := h.enqueue(buyer("dan"), ReserveRequest{EventID: later.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	if qt.Status != boxoffice.QueueWaiting {
		t.Fatalf("before the opening: %+v, want waiting", qt)
	}
	if r := h.logged(qt)[0]; r.EstimatedWait != nil {
		t.Errorf("a pre-queued request keeps wait %v, want none", *r.EstimatedWait)
	}
}

// The opener finds a sale that opens among many events: it asks for the
// draws due, not for a page of the newest events (a page of 200 once hid
// every event but the 200 with the latest shows, and their waiting rooms
// never opened). An event nobody waited for is opened too, with an empty
// draw, so that it is no longer due.
func TestOpenerOpensEverySaleThatOpens(t *testing.T) {
	h := newHarness(t)
	opens := h.clock.Now().Add(time.Minute)
	queuedAt := func(opens time.Time, startsIn time.Duration) *boxoffice.Event {
		return h.event(1, 4, func(e *boxoffice.Event) {
			e.SaleMode, e.SaleOpensAt, e.StartsAt = boxoffice.SaleQueued, opens, h.clock.Now().Add(startsIn)
		})
	}
	// The shows soonest: the smallest ids, last on a page of newest events.
	waited := queuedAt(opens, 48*time.Hour)
	nobody := queuedAt(opens, 49*time.Hour)
	for range 210 {
		queuedAt(opens.Add(time.Hour), 30*24*time.Hour)
	}
	dan := h.enqueue(buyer("dan"), ReserveRequest{EventID: waited.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	if dan.Status != boxoffice.QueueWaiting {
		t.Fatalf("before the opening: %+v, want waiting", dan)
	}
	h.svc.openDue(h.ctx)
	if st := h.status(buyer("dan"), dan.RequestID); st.Status != boxoffice.QueueWaiting {
		t.Fatalf("opened before its time: %+v", st)
	}

	h.clock.Advance(time.Minute)
	h.svc.openDue(h.ctx)
	if st := h.status(buyer("dan"), dan.RequestID); st.Status != boxoffice.QueueQueued || st.QueuePosition != 1 {
		t.Errorf("after the opening: %+v, want queued at position 1", st)
	}
	for ev, want := range map[*boxoffice.Event][]boxoffice.ID{waited: {dan.RequestID}, nobody: {}} {
		d, err := h.store.Draw(h.ctx, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Drawn() || !slices.Equal(d.Order, want) {
			t.Errorf("draw of event %s: drawn %v, order %v; want drawn, %v", ev.ID, d.Drawn(), d.Order, want)
		}
	}
	if due, err := h.store.DrawsDue(h.ctx, h.clock.Now(), 100); err != nil || len(due) != 0 {
		t.Errorf("due after the opener's pass: %v, %v; want none", due, err)
	}
	// Whoever comes to the empty room next is queued at once.
	eve := h.enqueue(buyer("eve"), ReserveRequest{EventID: nobody.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	if eve.Status != boxoffice.QueueQueued || eve.QueuePosition != 1 {
		t.Errorf("first request after an empty opening: %+v, want queued at 1", eve)
	}
}

// An opener that died after recording the draw, before the release, is
// finished by the next pass: the draw stays due until the drawn requests
// are in the log, and the draw recorded is kept.
func TestOpenerFinishesACrashedOpening(t *testing.T) {
	h := newHarness(t)
	ev := h.event(1, 4, func(e *boxoffice.Event) {
		e.SaleMode, e.SaleOpensAt = boxoffice.SaleQueued, h.clock.Now().Add(time.Minute)
	})
	dan := h.enqueue(buyer("dan"), ReserveRequest{EventID: ev.ID, SeatIDs: []string{"F-A-1"}, IdempotencyKey: "k"})
	h.clock.Advance(time.Minute)
	// What the crashed opener did: the draw, and its record.
	d, err := h.store.Draw(h.ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	drawn, err := h.queue.Open(h.ctx, ev.ID, func(ids []boxoffice.ID) []boxoffice.ID { return boxoffice.DrawOrder(d.Seed, ids) })
	if err != nil || len(drawn) != 1 {
		t.Fatalf("open: %v, %v", drawn, err)
	}
	drawnAt := h.clock.Now()
	if err := h.store.RecordDraw(h.ctx, &boxoffice.Draw{EventID: ev.ID, DrawnAt: drawnAt, FirstPosition: 1, Order: []boxoffice.ID{dan.RequestID}}); err != nil {
		t.Fatal(err)
	}
	if due, _ := h.store.DrawsDue(h.ctx, h.clock.Now(), 10); !slices.Equal(due, []boxoffice.ID{ev.ID}) {
		t.Fatalf("due after a crash between the draw and the release: %v, want the event", due)
	}
	h.clock.Advance(time.Second)
	h.svc.openDue(h.ctx)
	if due, err := h.store.DrawsDue(h.ctx, h.clock.Now(), 10); err != nil || len(due) != 0 {
		t.Errorf("due after the next pass: %v, %v; want none", due, err)
	}
	if got, err := h.store.Draw(h.ctx, ev.ID); err != nil || !got.DrawnAt.Equal(drawnAt) || !slices.Equal(got.Order, []boxoffice.ID{dan.RequestID}) {
		t.Errorf("draw after the next pass: %+v, %v; want the crashed opener's", got, err)
	}
	if st := h.status(buyer("dan"), dan.RequestID); st.Status != boxoffice.QueueQueued || st.QueuePosition != 1 {
		t.Errorf("after the next pass: %+v, want queued at position 1", st)
	}
}

// entriesOnce is a queue state that takes the entries its caller read
// (boxoffice.EntriesFinisher) and records what it was asked.
type entriesOnce struct {
	*sqlite.Queue
	reads int                                    // Entries calls
	read  map[boxoffice.ID]*boxoffice.QueueEntry // what they returned
	given [][]*boxoffice.QueueEntry              // FinishEntries's es, call by call
	ids   [][]boxoffice.ID                       // and its requests
}

func (q *entriesOnce) Entries(ctx context.Context, rs []*boxoffice.QueuedRequest) ([]*boxoffice.QueueEntry, error) {
	es, err := q.Queue.Entries(ctx, rs)
	q.reads++
	for i, e := range es {
		q.read[rs[i].ID] = e
	}
	return es, err
}

func (q *entriesOnce) FinishEntries(ctx context.Context, rs []*boxoffice.QueuedRequest, es []*boxoffice.QueueEntry, os []boxoffice.QueueOutcome) ([]bool, error) {
	ids := make([]boxoffice.ID, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	q.given, q.ids = append(q.given, es), append(q.ids, ids)
	return q.Queue.FinishMany(ctx, rs, os)
}

// The drain reads a batch's entries once: where the state takes them, the
// outcomes are finished with the very entries the first read returned,
// each beside its own request.
func TestServeBatchReadsTheEntriesOnce(t *testing.T) {
	rec := &entriesOnce{read: map[boxoffice.ID]*boxoffice.QueueEntry{}}
	h := newHarnessWith(t, harnessOptions{queue: func(q *sqlite.Queue) boxoffice.QueueState {
		rec.Queue = q
		return rec
	}})
	ev := h.queuedEvent(1, 2)
	var tickets []*QueueTicket
	for i := range 5 {
		tickets = append(tickets, h.enqueue(buyer(fmt.Sprint("u", i)),
			ReserveRequest{EventID: ev.ID, SeatIDs: []string{fmt.Sprint("F-A-", i%2+1)}, IdempotencyKey: "k"}))
	}
	// The first is decided by an earlier delivery: the batch skips it.
	if err := h.svc.ServeBatch(h.ctx, h.logged(tickets[0])); err != nil {
		t.Fatal(err)
	}
	rec.reads, rec.given, rec.ids = 0, nil, nil
	batch := h.logged(tickets...)
	slices.Reverse(batch)
	if err := h.svc.ServeBatch(h.ctx, batch); err != nil {
		t.Fatal(err)
	}
	if rec.reads != 1 || len(rec.given) != 1 {
		t.Fatalf("the batch read its entries %d times and finished %d times, want once each", rec.reads, len(rec.given))
	}
	if len(rec.ids[0]) != 4 {
		t.Fatalf("finished %d requests, want the 4 undecided", len(rec.ids[0]))
	}
	for i, id := range rec.ids[0] {
		e := rec.given[0][i]
		if id == tickets[0].RequestID {
			t.Errorf("the request decided before was finished again")
		}
		if e == nil || e != rec.read[id] || e.Request.ID != id || e.Status != boxoffice.QueueQueued {
			t.Errorf("request %s finished with entry %+v, want the queued one the batch read", id, e)
		}
	}
	// And the outcomes are those of the drain: u1 gets F-A-2, the rest
	// are refused.
	for i, qt := range tickets[1:] {
		want := boxoffice.QueueRejected
		if i == 0 {
			want = boxoffice.QueueHeld
		}
		if got := h.status(buyer(fmt.Sprint("u", i+1)), qt.RequestID); got.Status != want {
			t.Errorf("u%d: %s, want %s", i+1, got.Status, want)
		}
	}
}
