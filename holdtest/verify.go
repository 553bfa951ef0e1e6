package holdtest

import (
	"testing"

	"github.com/boxoffice/boxoffice"
)

var verifySpecs = []spec{
	{"LiveHold", testVerifyLiveHold},
	{"AfterRelease", testVerifyAfterRelease},
	{"AfterExpiry", testVerifyAfterExpiry},
	{"AfterTakeover", testVerifyAfterTakeover},
	{"AfterRefresh", testVerifyAfterRefresh},
}

func testVerifyLiveHold(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	hold := acquire(t, h, event, seats("Floor", 1, 3), owner, long)
	acquire(t, h, event, []string{seat("Floor", 4)}, newID(), long)

	tests := []struct {
		name    string
		event   boxoffice.ID
		seatIDs []string
		owner   boxoffice.ID
		fence   int64
		want    string
	}{
		{"HolderAndFence", event, hold.SeatIDs, owner, hold.Fence, ""},
		{"PartOfTheHold", event, seats("Floor", 2, 3), owner, hold.Fence, ""},
		{"OtherOwner", event, hold.SeatIDs, newID(), hold.Fence, boxoffice.EHOLDLOST},
		{"SmallerFence", event, hold.SeatIDs, owner, hold.Fence - 1, boxoffice.EHOLDLOST},
		{"LargerFence", event, hold.SeatIDs, owner, hold.Fence + 1, boxoffice.EHOLDLOST},
		{"SeatHeldByOther", event, seats("Floor", 1, 4), owner, hold.Fence, boxoffice.EHOLDLOST},
		{"SeatNotHeld", event, concat(hold.SeatIDs, seats("Floor", 9, 9)), owner, hold.Fence, boxoffice.EHOLDLOST},
		{"OtherEvent", newID(), hold.SeatIDs, owner, hold.Fence, boxoffice.EHOLDLOST},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantVerify(t, h, tt.event, tt.seatIDs, tt.owner, tt.fence, tt.want)
		})
	}
}

func testVerifyAfterRelease(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	hold := acquire(t, h, event, seats("Floor", 1, 2), owner, long)

	release(t, h, event, hold.SeatIDs, owner, 2)

	wantVerify(t, h, event, hold.SeatIDs, owner, hold.Fence, boxoffice.EHOLDLOST)
}

func testVerifyAfterExpiry(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	hold := acquire(t, h, event, seats("Floor", 1, 2), owner, short)

	h.Advance(short / 2)
	wantVerify(t, h, event, hold.SeatIDs, owner, hold.Fence, "")
	h.Advance(short/2 + short/3)
	wantVerify(t, h, event, hold.SeatIDs, owner, hold.Fence, boxoffice.EHOLDLOST)
}

func testVerifyAfterTakeover(t *testing.T, h Harness) {
	event, old, newer := newID(), newID(), newID()
	first := acquire(t, h, event, seats("Floor", 1, 2), old, short)
	h.Advance(short + short/3)

	second := acquire(t, h, event, seats("Floor", 1, 2), newer, long)

	wantVerify(t, h, event, first.SeatIDs, old, first.Fence, boxoffice.EHOLDLOST)
	wantVerify(t, h, event, first.SeatIDs, old, second.Fence, boxoffice.EHOLDLOST)
	wantVerify(t, h, event, second.SeatIDs, newer, second.Fence, "")
}

// A same-owner re-acquire is a grant of its own: its fence replaces the
// earlier one on every seat it covers.
func testVerifyAfterRefresh(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	first := acquire(t, h, event, seats("Floor", 1, 2), owner, long)

	second := acquire(t, h, event, seats("Floor", 1, 2), owner, long)

	wantVerify(t, h, event, second.SeatIDs, owner, second.Fence, "")
	wantVerify(t, h, event, first.SeatIDs, owner, first.Fence, boxoffice.EHOLDLOST)
}
