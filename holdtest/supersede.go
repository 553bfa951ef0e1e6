package holdtest

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// Supersede is how seats that come back pass from the old booking's hold
// to a waitlist offer without being free in between.
var supersedeSpecs = []spec{
	{"TakesOverTheSupersededHold", testSupersedeTakesOver},
	{"FreeSeatsToo", testSupersedeFreeSeats},
	{"OthersStillRefuse", testSupersedeOthersRefuse},
	{"FailureAcrossSectionsGivesTheHoldBack", testSupersedeFailureAcrossSections},
	{"BackAgain", testSupersedeBackAgain},
}

func acquireSuperseding(h Harness, event boxoffice.ID, seatIDs []string, owner, old boxoffice.ID) (boxoffice.Hold, error) {
	return h.Holds.Acquire(context.Background(), boxoffice.HoldRequest{
		EventID: event, SeatIDs: seatIDs, Owner: owner, TTL: long, Supersede: old,
	})
}

func testSupersedeTakesOver(t *testing.T, h Harness) {
	event, old, offer := newID(), newID(), newID()
	want := seats("Floor", 1, 3)
	before := acquire(t, h, event, want, old, long)

	got, err := acquireSuperseding(h, event, want, offer, old)
	if err != nil {
		t.Fatalf("Acquire superseding the old hold = %v, want a hold", err)
	}
	if got.Owner != offer || got.Fence <= before.Fence {
		t.Errorf("hold = owner %v fence %d, want owner %v and a fence above %d", got.Owner, got.Fence, offer, before.Fence)
	}
	wantVerify(t, h, event, want, offer, got.Fence, "")
	wantVerify(t, h, event, want, old, before.Fence, boxoffice.EHOLDLOST)
	// The old owner's late release must not free the offer's seats.
	release(t, h, event, want, old, 0)
	wantHeld(t, h, event, want, allHeld(len(want), true))
	wantTaken(t, h, event, want, newID(), want)
}

func testSupersedeFreeSeats(t *testing.T, h Harness) {
	event, old, offer := newID(), newID(), newID()
	acquire(t, h, event, seats("Floor", 1, 2), old, long)

	got, err := acquireSuperseding(h, event, seats("Floor", 1, 4), offer, old)
	if err != nil {
		t.Fatalf("Acquire of held and free seats superseding = %v, want a hold", err)
	}
	wantVerify(t, h, event, seats("Floor", 1, 4), offer, got.Fence, "")
}

func testSupersedeOthersRefuse(t *testing.T, h Harness) {
	event, old, other, offer := newID(), newID(), newID(), newID()
	mine := acquire(t, h, event, seats("Floor", 1, 2), old, long)
	acquire(t, h, event, []string{seat("Floor", 3)}, other, long)

	_, err := acquireSuperseding(h, event, seats("Floor", 1, 3), offer, old)
	wantCode(t, err, boxoffice.ESEATTAKEN)
	if got := boxoffice.ErrorSeats(err); len(got) != 1 || got[0] != seat("Floor", 3) {
		t.Errorf("seats in the way = %v, want only %s", got, seat("Floor", 3))
	}
	// All or nothing: the old hold is as it was.
	wantVerify(t, h, event, mine.SeatIDs, old, mine.Fence, "")
}

// Across sections the hold is taken section by section; a conflict in a
// later section must give the superseded owner its seats back.
func testSupersedeFailureAcrossSections(t *testing.T, h Harness) {
	event, old, other, offer := newID(), newID(), newID(), newID()
	mine := acquire(t, h, event, []string{seat("Aisle", 1), seat("Balcony", 1)}, old, long)
	acquire(t, h, event, []string{seat("Balcony", 2)}, other, long)

	_, err := acquireSuperseding(h, event, []string{seat("Aisle", 1), seat("Balcony", 1), seat("Balcony", 2)}, offer, old)
	wantCode(t, err, boxoffice.ESEATTAKEN)
	wantVerify(t, h, event, mine.SeatIDs, old, mine.Fence, "")
	wantTaken(t, h, event, mine.SeatIDs, newID(), mine.SeatIDs)
}

// An offer that cannot be booked hands its seats back to the return's
// holder the same way.
func testSupersedeBackAgain(t *testing.T, h Harness) {
	event, old, offer := newID(), newID(), newID()
	want := seats("Floor", 1, 2)
	acquire(t, h, event, want, old, long)
	if _, err := acquireSuperseding(h, event, want, offer, old); err != nil {
		t.Fatal(err)
	}
	back, err := acquireSuperseding(h, event, want, old, offer)
	if err != nil {
		t.Fatalf("Acquire back superseding the offer = %v", err)
	}
	wantVerify(t, h, event, want, old, back.Fence, "")
	release(t, h, event, want, offer, 0)
	release(t, h, event, want, old, len(want))
}
