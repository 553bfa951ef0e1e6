package inmem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice"
)

const event = boxoffice.ID(42)

func mustAcquire(t *testing.T, h *Holds, seats []string, owner boxoffice.ID, ttl time.Duration) boxoffice.Hold {
	t.Helper()
	hold, err := h.Acquire(context.Background(), boxoffice.HoldRequest{EventID: event, SeatIDs: seats, Owner: owner, TTL: ttl})
	if err != nil {
		t.Fatalf("Acquire(%v) = %v", seats, err)
	}
	return hold
}

// Sweep hands back each hold that ran out, once, with its seats sorted.
func TestSweepReportsExpiredHolds(t *testing.T) {
	clock := newFakeClock()
	h := NewHolds(clock.Now)
	first := mustAcquire(t, h, []string{"A-A-2", "B-A-1", "A-A-1"}, 1, time.Minute)
	second := mustAcquire(t, h, []string{"A-A-3"}, 2, 2*time.Minute)

	clock.Advance(90 * time.Second)
	want := []boxoffice.Hold{{
		EventID: event, SeatIDs: []string{"A-A-1", "A-A-2", "B-A-1"}, Owner: 1, Fence: first.Fence, ExpiresAt: first.ExpiresAt,
	}}
	if diff := cmp.Diff(want, h.Sweep()); diff != "" {
		t.Errorf("first Sweep mismatch (-want +got):\n%s", diff)
	}

	clock.Advance(time.Minute)
	want = []boxoffice.Hold{{
		EventID: event, SeatIDs: []string{"A-A-3"}, Owner: 2, Fence: second.Fence, ExpiresAt: second.ExpiresAt,
	}}
	if diff := cmp.Diff(want, h.Sweep()); diff != "" {
		t.Errorf("second Sweep mismatch (-want +got):\n%s", diff)
	}
	if got := h.Sweep(); len(got) != 0 {
		t.Errorf("third Sweep = %v, want nothing left", got)
	}
	if n := h.entries(); n != 0 {
		t.Errorf("%d entries left after every hold expired and was swept, want 0", n)
	}
}

// Seats that did not come back to the pool by expiry are not reported:
// released in time, refreshed by their owner, or taken over once expired.
func TestSweepSkipsSeatsThatDidNotReturnByExpiry(t *testing.T) {
	clock := newFakeClock()
	h := NewHolds(clock.Now)
	ctx := context.Background()
	mustAcquire(t, h, []string{"A-A-1"}, 1, time.Minute)
	mustAcquire(t, h, []string{"A-A-2"}, 2, time.Minute)
	mustAcquire(t, h, []string{"A-A-3"}, 3, time.Minute)
	if _, err := h.Release(ctx, event, []string{"A-A-1"}, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * time.Second)
	mustAcquire(t, h, []string{"A-A-2"}, 2, time.Minute) // refreshed
	clock.Advance(45 * time.Second)
	mustAcquire(t, h, []string{"A-A-3"}, 4, time.Hour) // taken over

	if got := h.Sweep(); len(got) != 0 {
		t.Errorf("Sweep = %v, want nothing", got)
	}
}

// Memory follows the live holds: once a flash sale's holds run out and
// are swept, the table is empty again.
func TestSweepReclaimsMemory(t *testing.T) {
	clock := newFakeClock()
	h := NewHolds(clock.Now)
	for i := range 10_000 {
		mustAcquire(t, h, []string{fmt.Sprintf("A-%d-1", i)}, boxoffice.ID(i+1), time.Minute)
	}
	if n := h.entries(); n != 10_000 {
		t.Fatalf("%d entries, want 10000", n)
	}
	clock.Advance(time.Minute)
	if got := len(h.Sweep()); got != 10_000 {
		t.Errorf("Sweep reported %d holds, want 10000", got)
	}
	if n := h.entries(); n != 0 {
		t.Errorf("%d entries after the sweep, want 0", n)
	}
}

// The expiry heap and the seat map agree after any mix of operations.
func TestHeapStaysConsistent(t *testing.T) {
	clock := newFakeClock()
	h := NewHolds(clock.Now)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 7))
	pool := make([]string, 200)
	for i := range pool {
		pool[i] = fmt.Sprintf("A-A-%d", i+1)
	}
	for op := range 20_000 {
		seats := []string{pool[rng.IntN(len(pool))], pool[rng.IntN(len(pool))]}
		owner := boxoffice.ID(1 + rng.IntN(5))
		switch rng.IntN(5) {
		case 0, 1:
			ttl := time.Duration(1+rng.IntN(60)) * time.Second
			_, _ = h.Acquire(ctx, boxoffice.HoldRequest{EventID: event, SeatIDs: seats, Owner: owner, TTL: ttl})
		case 2:
			_, _ = h.Release(ctx, event, seats, owner)
		case 3:
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		case 4:
			if op%50 == 0 {
				h.Sweep()
			}
		}
		if err := h.check(); err != nil {
			t.Fatalf("after op %d: %v", op, err)
		}
	}
}

// Run calls onExpire for holds as they run out.
func TestRunReportsExpiries(t *testing.T) {
	clock := newFakeClock()
	h := NewHolds(clock.Now)
	hold := mustAcquire(t, h, []string{"A-A-1"}, 1, time.Minute)

	expired := make(chan boxoffice.Hold, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.Run(ctx, time.Millisecond, func(hold boxoffice.Hold) { expired <- hold })
		close(done)
	}()
	clock.Advance(time.Minute)

	got := <-expired
	if diff := cmp.Diff(hold, got); diff != "" {
		t.Errorf("expired hold mismatch (-want +got):\n%s", diff)
	}
	cancel()
	<-done
}

func TestLeasesSweep(t *testing.T) {
	clock := newFakeClock()
	l := NewLeases(clock.Now)
	ctx := context.Background()
	for i := range 100 {
		ttl := time.Minute
		if i%2 == 0 {
			ttl = time.Hour
		}
		if _, err := l.TryLease(ctx, fmt.Sprint("key", i), ttl); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	if n := l.Sweep(); n != 50 {
		t.Errorf("Sweep removed %d leases, want the 50 expired", n)
	}
	if n := l.Sweep(); n != 0 {
		t.Errorf("second Sweep removed %d leases, want 0", n)
	}
}

// entries counts the seat entries in the table, expired or not.
func (h *Holds) entries() int {
	n := 0
	h.events.Range(func(_, v any) bool {
		ev := v.(*eventHolds)
		for i := range ev.stripes {
			st := &ev.stripes[i]
			st.mu.Lock()
			n += len(st.seats)
			st.mu.Unlock()
		}
		return true
	})
	return n
}

// check verifies every stripe: the map and the heap hold the same
// entries, indexes are right, the heap is ordered, next mirrors its top.
func (h *Holds) check() error {
	var err error
	h.events.Range(func(_, v any) bool {
		ev := v.(*eventHolds)
		for i := range ev.stripes {
			st := &ev.stripes[i]
			st.mu.Lock()
			err = st.check()
			st.mu.Unlock()
			if err != nil {
				err = fmt.Errorf("stripe %d: %w", i, err)
				return false
			}
		}
		return true
	})
	return err
}

func (st *stripeState) check() error {
	if len(st.seats) != len(st.queue) {
		return fmt.Errorf("%d seats in the map, %d in the heap", len(st.seats), len(st.queue))
	}
	for i, e := range st.queue {
		if e.index != i {
			return fmt.Errorf("entry %s at %d says index %d", e.seat, i, e.index)
		}
		if st.seats[e.seat] != e {
			return fmt.Errorf("heap entry %s is not the map's", e.seat)
		}
		if p := (i - 1) / 2; i > 0 && st.queue[p].expires > e.expires {
			return fmt.Errorf("heap out of order at %d", i)
		}
	}
	want := int64(1<<63 - 1)
	if len(st.queue) > 0 {
		want = st.queue[0].expires
	}
	if got := st.next.Load(); got != want {
		return fmt.Errorf("next = %d, want %d", got, want)
	}
	return nil
}

// tables counts the events with a table.
func tables(h *Holds) int {
	n := 0
	h.events.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Memory follows the holds, not the events ever held: once an event holds
// nothing, Sweep drops its table, and the fences of a table made again
// count on from the old ones.
func TestSweepDropsEmptyEventsAndFencesGoOn(t *testing.T) {
	clock := newFakeClock()
	h := NewHolds(clock.Now)
	ctx := context.Background()
	const events = 2000
	var last int64
	for i := range events {
		hold, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: boxoffice.ID(10_000 + i), SeatIDs: []string{"A-A-1"}, Owner: 7, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, hold.Fence)
	}
	mustAcquire(t, h, []string{"A-A-1"}, 8, time.Hour) // event 42 keeps a live hold
	if n := tables(h); n != events+1 {
		t.Fatalf("%d tables with %d events held, want %d", n, events+1, events+1)
	}
	clock.Advance(2 * time.Minute)
	if got := len(h.Sweep()); got != events {
		t.Fatalf("Sweep reported %d holds, want %d", got, events)
	}
	if n := tables(h); n != 1 {
		t.Errorf("%d tables after the holds ran out, want 1 (the event still holding)", n)
	}
	if ok, _ := h.Held(ctx, event, []string{"A-A-1"}); !ok[0] {
		t.Error("the live hold was lost with the dropped tables")
	}
	again, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: 10_000, SeatIDs: []string{"A-A-1"}, Owner: 9, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if again.Fence <= last {
		t.Errorf("fence of a table made again: %d, want above %d, the largest before it was dropped", again.Fence, last)
	}
}

// Acquires racing the sweeper that drops their event's table never lose a
// hold: every one granted is held afterwards, and no seat is granted to
// two owners at once.
func TestAcquireRacingDropNeverLosesAHold(t *testing.T) {
	h := NewHolds(nil)
	ctx := context.Background()
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-stop:
				return
			default:
				h.Sweep()
			}
		}
	}()
	for round := range 200 {
		ev := boxoffice.ID(1000 + round)
		// A short hold that runs out at once, so that the table empties
		// and the sweeper drops it, then a long one that must survive.
		if _, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: ev, SeatIDs: []string{"A-A-1"}, Owner: 1, TTL: time.Nanosecond}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Microsecond)
		hold, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: ev, SeatIDs: []string{"A-A-1", "A-A-2"}, Owner: 2, TTL: time.Hour})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := h.Verify(ctx, ev, hold.SeatIDs, 2, hold.Fence); err != nil {
			t.Fatalf("round %d: a granted hold is gone: %v", round, err)
		}
		if _, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: ev, SeatIDs: []string{"A-A-2"}, Owner: 3, TTL: time.Hour}); !isTaken(err) {
			t.Fatalf("round %d: a second owner got a held seat: %v", round, err)
		}
	}
	close(stop)
	<-swept
}

func isTaken(err error) bool { return boxoffice.ErrorCode(err) == boxoffice.ESEATTAKEN }
