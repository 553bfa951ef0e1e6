package holdtest

import (
	"context"
	"sync"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// Fences are compared within one section of an event: the fence is what
// the Store compares between holds on the same seat, and in Redis Cluster
// the counter lives in the section's slot ({event_id:section}) next to the
// seats.
var fenceSpecs = []spec{
	{"GrowsWithEveryGrant", testFenceGrows},
	{"LaterHoldOnASeatIsLarger", testFenceLaterHoldOnSeat},
	{"UniqueUnderConcurrency", testFenceUnique},
}

// Every granted hold, whoever asks and whatever the seats, gets a larger
// fence than every hold granted before it; refused requests and releases
// in between change nothing.
func testFenceGrows(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	var fences []int64
	grant := func(seatIDs []string, who boxoffice.ID) {
		t.Helper()
		fences = append(fences, acquire(t, h, event, seatIDs, who, long).Fence)
	}

	grant(seats("Floor", 1, 1), owner)
	grant(seats("Floor", 2, 5), newID())
	grant(seats("Floor", 1, 1), owner) // a refresh is a grant too
	wantTaken(t, h, event, seats("Floor", 2, 2), newID(), seats("Floor", 2, 2))
	grant(seats("Floor", 6, 6), newID())
	release(t, h, event, seats("Floor", 1, 1), owner, 1)
	grant(seats("Floor", 1, 1), newID())

	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences %v: grant %d got %d after %d, want strictly increasing", fences, i, fences[i], fences[i-1])
		}
	}
}

// Whoever holds a seat next, after a release or an expiry, holds it under
// a larger fence than everyone before: in every section of the event.
func testFenceLaterHoldOnSeat(t *testing.T, h Harness) {
	event := newID()
	sections := []string{"Floor", "Balcony"}
	last := map[string]int64{}
	check := func(hold boxoffice.Hold) {
		t.Helper()
		s := hold.SeatIDs[0]
		if hold.Fence <= last[s] {
			t.Errorf("hold on %s got fence %d after an earlier hold's %d, want larger", s, hold.Fence, last[s])
		}
		last[s] = hold.Fence
	}

	var expiring []boxoffice.Hold
	for _, sec := range sections {
		a := acquire(t, h, event, []string{seat(sec, 1)}, newID(), long)
		check(a)
		release(t, h, event, a.SeatIDs, a.Owner, 1)
		acquire(t, h, event, []string{seat(sec, 2)}, newID(), long) // grants elsewhere in between
		b := acquire(t, h, event, []string{seat(sec, 1)}, newID(), short)
		check(b)
		expiring = append(expiring, b)
	}
	h.Advance(short + short/3)
	for _, b := range expiring {
		check(acquire(t, h, event, b.SeatIDs, newID(), long))
	}
}

// Holds granted at the same moment on different seats never share a
// fence.
func testFenceUnique(t *testing.T, h Harness) {
	event := newID()
	fences := make([]int64, racers)
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			hold, err := h.Holds.Acquire(context.Background(), boxoffice.HoldRequest{
				EventID: event, SeatIDs: []string{seat("Floor", i+1)}, Owner: newID(), TTL: long,
			})
			fences[i], errs[i] = hold.Fence, err
		})
	}
	close(start)
	wg.Wait()

	seen := map[int64]int{}
	for i, f := range fences {
		if errs[i] != nil {
			t.Errorf("Acquire(%s) = %v, want a hold on a free seat", seat("Floor", i+1), errs[i])
			continue
		}
		if j, ok := seen[f]; ok {
			t.Errorf("holds on %s and %s share fence %d", seat("Floor", j+1), seat("Floor", i+1), f)
		}
		seen[f] = i
	}
}
