package holdtest

import (
	"testing"

	"github.com/boxoffice/boxoffice"
)

var expirySpecs = []spec{
	{"FreesSeatsAfterTTL", testExpiryFreesSeats},
	{"EachHoldHasItsOwnTTL", testExpiryPerHold},
}

// A hold lasts its TTL and not longer: then its seats are anybody's.
func testExpiryFreesSeats(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := seats("Floor", 1, 3)
	hold := acquire(t, h, event, want, owner, short)

	h.Advance(short / 2)
	wantHeld(t, h, event, want, allHeld(len(want), true))
	wantTaken(t, h, event, want, newID(), want)

	h.Advance(short/2 + short/3)
	wantHeld(t, h, event, want, allHeld(len(want), false))
	wantVerify(t, h, event, want, owner, hold.Fence, boxoffice.EHOLDLOST)
	acquire(t, h, event, want, newID(), long)
}

func testExpiryPerHold(t *testing.T, h Harness) {
	event := newID()
	brief := acquire(t, h, event, seats("Floor", 1, 2), newID(), short)
	lasting := acquire(t, h, event, seats("Floor", 3, 4), newID(), long)

	h.Advance(short + short/3)

	wantHeld(t, h, event, seats("Floor", 1, 4), []bool{false, false, true, true})
	wantVerify(t, h, event, brief.SeatIDs, brief.Owner, brief.Fence, boxoffice.EHOLDLOST)
	wantVerify(t, h, event, lasting.SeatIDs, lasting.Owner, lasting.Fence, "")
}
