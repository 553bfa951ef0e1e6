package holdtest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/boxoffice/boxoffice"
)

var acquireSpecs = []spec{
	{"OneSeat", testAcquireOneSeat},
	{"SeveralSeats", testAcquireSeveralSeats},
	{"AllOrNothing", testAcquireAllOrNothing},
	{"SameOwnerRefreshesExpiry", testAcquireSameOwnerRefreshes},
	{"SameOwnerGrowsHold", testAcquireSameOwnerGrows},
	{"FailedRetryKeepsEarlierHold", testAcquireFailedRetryKeepsHold},
	{"InvalidRequest", testAcquireInvalid},
}

// ignoreGrant leaves out the parts of a Hold the implementation picks.
var ignoreGrant = cmpopts.IgnoreFields(boxoffice.Hold{}, "Fence", "ExpiresAt")

func testAcquireOneSeat(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	s := seat("Floor", 1)

	got := acquire(t, h, event, []string{s}, owner, long)

	want := boxoffice.Hold{EventID: event, SeatIDs: []string{s}, Owner: owner}
	if diff := cmp.Diff(want, got, ignoreGrant); diff != "" {
		t.Errorf("Acquire mismatch (-want +got):\n%s", diff)
	}
	if got.Fence <= 0 {
		t.Errorf("Fence = %d, want a positive fencing token", got.Fence)
	}
	if got.ExpiresAt.IsZero() {
		t.Errorf("ExpiresAt is zero, want the end of the hold")
	}
	wantHeld(t, h, event, []string{s, seat("Floor", 2)}, []bool{true, false})
	wantTaken(t, h, event, []string{s}, newID(), []string{s})
}

func testAcquireSeveralSeats(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := []string{seat("Floor", 7), seat("Floor", 3), seat("Floor", 4), seat("Floor", 12)}

	got := acquire(t, h, event, want, owner, long)

	if diff := cmp.Diff(want, got.SeatIDs); diff != "" {
		t.Errorf("Hold.SeatIDs mismatch (-want +got):\n%s", diff)
	}
	wantHeld(t, h, event, concat(want, seats("Floor", 5, 6)), []bool{true, true, true, true, false, false})
	wantVerify(t, h, event, want, owner, got.Fence, "")
}

// A request that meets one seat held by someone else gets none of its
// seats, and learns exactly which seats were in the way.
func testAcquireAllOrNothing(t *testing.T, h Harness) {
	tests := []struct {
		name    string
		taken   [][]string // earlier holds, one owner each
		request []string
		want    []string // the conflicting seats
	}{
		{
			name:    "OneOfFourTaken",
			taken:   [][]string{{seat("Floor", 2)}},
			request: seats("Floor", 1, 4),
			want:    []string{seat("Floor", 2)},
		},
		{
			name:    "FirstAndLastTakenByTwoOwners",
			taken:   [][]string{{seat("Floor", 1)}, {seat("Floor", 4)}},
			request: seats("Floor", 1, 4),
			want:    []string{seat("Floor", 1), seat("Floor", 4)},
		},
		{
			name:    "OverlapsALargerHold",
			taken:   [][]string{seats("Floor", 3, 8)},
			request: seats("Floor", 1, 4),
			want:    seats("Floor", 3, 4),
		},
		{
			name:    "AllTaken",
			taken:   [][]string{seats("Floor", 1, 2)},
			request: seats("Floor", 1, 2),
			want:    seats("Floor", 1, 2),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := newID()
			var holds []boxoffice.Hold
			takenSet := map[string]bool{}
			for _, seatIDs := range tt.taken {
				holds = append(holds, acquire(t, h, event, seatIDs, newID(), long))
				for _, s := range seatIDs {
					takenSet[s] = true
				}
			}

			wantTaken(t, h, event, tt.request, newID(), tt.want)

			// None of the request's free seats was left held...
			var held []bool
			var free []string
			for _, s := range tt.request {
				held = append(held, takenSet[s])
				if !takenSet[s] {
					free = append(free, s)
				}
			}
			wantHeld(t, h, event, tt.request, held)
			if len(free) > 0 {
				acquire(t, h, event, free, newID(), long)
			}
			// ...and the holds in the way were not disturbed.
			for _, hold := range holds {
				wantVerify(t, h, event, hold.SeatIDs, hold.Owner, hold.Fence, "")
			}
		})
	}
}

// A retried request of the same owner succeeds and starts its TTL again.
func testAcquireSameOwnerRefreshes(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	want := seats("Floor", 1, 3)
	first := acquire(t, h, event, want, owner, short)

	h.Advance(short * 2 / 3)
	second := acquire(t, h, event, want, owner, short)
	if !second.ExpiresAt.After(first.ExpiresAt) {
		t.Errorf("refreshed ExpiresAt = %v, want after the first hold's %v", second.ExpiresAt, first.ExpiresAt)
	}

	h.Advance(short * 2 / 3) // the first TTL is over, the refreshed one is not
	wantHeld(t, h, event, want, allHeld(len(want), true))
	wantTaken(t, h, event, want, newID(), want)
	wantVerify(t, h, event, want, owner, second.Fence, "")

	h.Advance(short * 2 / 3) // and now it is over too
	wantHeld(t, h, event, want, allHeld(len(want), false))
}

// The same owner asking for more seats than it holds gets them all.
func testAcquireSameOwnerGrows(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	acquire(t, h, event, seats("Floor", 1, 2), owner, long)

	grown := acquire(t, h, event, seats("Floor", 1, 3), owner, long)

	wantHeld(t, h, event, seats("Floor", 1, 4), []bool{true, true, true, false})
	wantVerify(t, h, event, seats("Floor", 1, 3), owner, grown.Fence, "")
}

// An owner's retry that now meets someone else's seat fails and leaves the
// owner's earlier hold exactly as it was.
func testAcquireFailedRetryKeepsHold(t *testing.T, h Harness) {
	event, owner := newID(), newID()
	mine := acquire(t, h, event, seats("Floor", 1, 2), owner, long)
	acquire(t, h, event, []string{seat("Floor", 3)}, newID(), long)

	wantTaken(t, h, event, seats("Floor", 1, 3), owner, []string{seat("Floor", 3)})

	wantVerify(t, h, event, mine.SeatIDs, owner, mine.Fence, "")
	wantHeld(t, h, event, seats("Floor", 1, 3), []bool{true, true, true})
}

func testAcquireInvalid(t *testing.T, h Harness) {
	tests := []struct {
		name    string
		seatIDs []string
		ttl     time.Duration
	}{
		{"NoSeats", nil, long},
		{"ZeroTTL", seats("Floor", 1, 1), 0},
		{"NegativeTTL", seats("Floor", 1, 1), -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := newID()
			_, err := h.Holds.Acquire(context.Background(), boxoffice.HoldRequest{
				EventID: event, SeatIDs: tt.seatIDs, Owner: newID(), TTL: tt.ttl,
			})
			wantCode(t, err, boxoffice.EINVALID)
			if len(tt.seatIDs) > 0 {
				wantHeld(t, h, event, tt.seatIDs, allHeld(len(tt.seatIDs), false))
			}
		})
	}
}
