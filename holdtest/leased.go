package holdtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The lease taken with a hold (boxoffice.LeasedHolds), for the
// implementations that have one; the others skip these specs.
var leasedSpecs = []spec{
	{"InFlightHoldsNothing", testLeasedInFlight},
	{"RefusedSeatsKeepNoLease", testLeasedRefused},
	{"ReleaseEndsIt", testLeasedRelease},
	{"ExpiresAfterTTL", testLeasedExpires},
	{"OneWinnerUnderConcurrency", testLeasedOneWinner},
	{"StormOnOneSeat", testLeasedStorm},
}

// leasedHolds returns h's LeasedHolds, skipping the test without one.
func leasedHolds(t *testing.T, h Harness) boxoffice.LeasedHolds {
	t.Helper()
	lh, ok := h.Holds.(boxoffice.LeasedHolds)
	if !ok {
		t.Skip("these Holds take no lease with a hold")
	}
	return lh
}

// acquireLeased holds seatIDs for a new owner under the lease key.
func acquireLeased(h boxoffice.LeasedHolds, event boxoffice.ID, seatIDs []string, key string, ttl time.Duration) (boxoffice.Hold, func(), error) {
	return h.AcquireLeased(context.Background(), boxoffice.HoldRequest{
		EventID: event, SeatIDs: seatIDs, Owner: newID(), TTL: long,
	}, key, ttl)
}

// mustLease holds seatIDs under key, failing the test if it cannot.
func mustLease(t *testing.T, h boxoffice.LeasedHolds, event boxoffice.ID, seatIDs []string, key string, ttl time.Duration) func() {
	t.Helper()
	_, release, err := acquireLeased(h, event, seatIDs, key, ttl)
	if err != nil || release == nil {
		t.Fatalf("AcquireLeased(%v, %q) = %v, want a hold", seatIDs, key, err)
	}
	return release
}

// A request whose key is leased holds nothing, whichever seats it asks
// for: those of the lease's section, free ones elsewhere, or several
// sections; the lease taken with a hold over several sections counts too.
func testLeasedInFlight(t *testing.T, h Harness) {
	lh := leasedHolds(t, h)
	ev, key := newID(), newKey("in-flight")
	mustLease(t, lh, ev, seats("A", 1, 2), key, long)
	for _, ask := range [][]string{seats("A", 3, 4), concat(seats("A", 5, 5), seats("B", 1, 1))} {
		_, _, err := acquireLeased(lh, ev, ask, key, long)
		wantCode(t, err, boxoffice.EIDEMINFLIGHT)
		wantHeld(t, h, ev, ask, allHeld(len(ask), false))
	}
	over := newKey("over-sections")
	mustLease(t, lh, ev, concat(seats("C", 1, 1), seats("D", 1, 1)), over, long)
	_, _, err := acquireLeased(lh, ev, seats("C", 2, 2), over, long)
	wantCode(t, err, boxoffice.EIDEMINFLIGHT)
	// Another key is another lease.
	mustLease(t, lh, ev, seats("A", 3, 4), newKey("other"), long)
}

// When the seats are refused, in the lease's section or in a later one,
// the lease is not kept: the next request with the key goes ahead.
func testLeasedRefused(t *testing.T, h Harness) {
	lh := leasedHolds(t, h)
	ev := newID()
	acquire(t, h, ev, concat(seats("A", 1, 1), seats("B", 1, 1)), newID(), long)
	for i, ask := range [][]string{seats("A", 1, 2), concat(seats("A", 2, 2), seats("B", 1, 1))} {
		key := newKey("refused")
		_, _, err := acquireLeased(lh, ev, ask, key, long)
		wantCode(t, err, boxoffice.ESEATTAKEN)
		wantHeld(t, h, ev, seats("A", 2, 2), []bool{false})
		mustLease(t, lh, ev, seats("A", 3+i, 3+i), key, long)
	}
}

// release ends the lease (any number of times), not the hold.
func testLeasedRelease(t *testing.T, h Harness) {
	lh := leasedHolds(t, h)
	ev, key := newID(), newKey("release")
	end := mustLease(t, lh, ev, seats("A", 1, 1), key, long)
	end()
	end()
	wantHeld(t, h, ev, seats("A", 1, 1), []bool{true})
	mustLease(t, lh, ev, seats("A", 2, 2), key, long)
}

// A lease nobody ends runs out with its ttl.
func testLeasedExpires(t *testing.T, h Harness) {
	lh := leasedHolds(t, h)
	ev, key := newID(), newKey("expires")
	mustLease(t, lh, ev, seats("A", 1, 1), key, short)
	h.Advance(short / 3)
	_, _, err := acquireLeased(lh, ev, seats("A", 2, 2), key, long)
	wantCode(t, err, boxoffice.EIDEMINFLIGHT)
	h.Advance(short)
	mustLease(t, lh, ev, seats("A", 2, 2), key, long)
}

// Of many requests racing with one key for free seats, one is granted
// and the others are in flight, holding nothing.
func testLeasedOneWinner(t *testing.T, h Harness) {
	lh := leasedHolds(t, h)
	ev, key := newID(), newKey("race")
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, _, errs[i] = acquireLeased(lh, ev, seats("A", i+1, i+1), key, long) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch boxoffice.ErrorCode(err) {
		case "":
			won++
		case boxoffice.EIDEMINFLIGHT:
			wantHeld(t, h, ev, seats("A", i+1, i+1), []bool{false})
		default:
			t.Errorf("request %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d requests granted under one lease, want 1", won)
	}
}

// Of many requests with keys of their own racing for two seats (decided
// together where the implementation batches them), one is granted; each
// other is refused with the seat in the way, holds nothing and keeps no
// lease, so its key goes ahead at once on a free seat.
func testLeasedStorm(t *testing.T, h Harness) {
	lh := leasedHolds(t, h)
	ev := newID()
	const n = 32
	keys := make([]string, n)
	for i := range keys {
		keys[i] = newKey("storm")
	}
	holds, errs := Race(n, func(i int) (boxoffice.Hold, error) {
		hold, _, err := acquireLeased(lh, ev, seats("A", 1, 2), keys[i], long)
		return hold, err
	})
	winner := OneWinner(t, errs, seats("A", 1, 2))
	w := holds[winner]
	if err := h.Holds.Verify(context.Background(), ev, seats("A", 1, 2), w.Owner, w.Fence); err != nil {
		t.Errorf("the winner does not hold its seats: %v", err)
	}
	for i, key := range keys {
		if i != winner {
			mustLease(t, lh, ev, seats("B", i+1, i+1), key, long)
		}
	}
}
