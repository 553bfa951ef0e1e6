package holdtest

import "testing"

var releaseSpecs = []spec{
	{"ByOwnerFreesSeats", testReleaseByOwner},
	{"PartOfAHold", testReleasePart},
	{"ByOtherOwnerFreesNothing", testReleaseByOther},
	{"OnlyTheOwnersSeats", testReleaseOnlyOwners},
	{"Twice", testReleaseTwice},
	{"SeatsNeverHeld", testReleaseNeverHeld},
	{"LateReleaseAfterExpiry", testReleaseAfterExpiry},
	{"LateReleaseNeverFreesNewerHold", testReleaseLate},
}

func testReleaseByOwner(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := seats("Floor", 1, 3)
	acquire(t, h, event, want, owner, long)

	release(t, h, event, want, owner, 3)

	wantHeld(t, h, event, want, allHeld(3, false))
	acquire(t, h, event, want, newID(), long)
}

func testReleasePart(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	acquire(t, h, event, seats("Floor", 1, 3), owner, long)

	release(t, h, event, []string{seat("Floor", 2)}, owner, 1)

	wantHeld(t, h, event, seats("Floor", 1, 3), []bool{true, false, true})
}

func testReleaseByOther(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := seats("Floor", 1, 3)
	hold := acquire(t, h, event, want, owner, long)

	release(t, h, event, want, newID(), 0)

	wantHeld(t, h, event, want, allHeld(3, true))
	wantVerify(t, h, event, want, owner, hold.Fence, "")
}

// Releasing a list that also names someone else's seats frees only one's
// own.
func testReleaseOnlyOwners(t *testing.T, h Harness) {
	event, mine, theirs := newID(), newID(), newID()
	acquire(t, h, event, seats("Floor", 1, 2), mine, long)
	other := acquire(t, h, event, []string{seat("Floor", 3)}, theirs, long)

	release(t, h, event, seats("Floor", 1, 3), mine, 2)

	wantHeld(t, h, event, seats("Floor", 1, 3), []bool{false, false, true})
	wantVerify(t, h, event, other.SeatIDs, theirs, other.Fence, "")
}

func testReleaseTwice(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := seats("Floor", 1, 2)
	acquire(t, h, event, want, owner, long)

	release(t, h, event, want, owner, 2)
	release(t, h, event, want, owner, 0)
}

func testReleaseNeverHeld(t *testing.T, h Harness) {
	release(t, h, newID(), seats("Floor", 1, 2), newID(), 0)
}

// A hold that ran out is no longer the owner's to release.
func testReleaseAfterExpiry(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := seats("Floor", 1, 2)
	acquire(t, h, event, want, owner, short)

	h.Advance(short + short/3)

	release(t, h, event, want, owner, 0)
	wantHeld(t, h, event, want, allHeld(2, false))
}

// The old owner, back after its hold expired and someone else took the
// seats, must not free the new holder's seats (check-and-delete).
func testReleaseLate(t *testing.T, h Harness) {
	event, late, newer := newID(), newID(), newID()
	want := seats("Floor", 1, 3)
	acquire(t, h, event, want, late, short)
	h.Advance(short + short/3)
	hold := acquire(t, h, event, want, newer, long)

	release(t, h, event, want, late, 0)

	wantHeld(t, h, event, want, allHeld(3, true))
	wantVerify(t, h, event, want, newer, hold.Fence, "")
}
