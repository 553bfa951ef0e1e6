package inmem

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// A hold given back after a restart keeps its seats, owner and fence, and
// later grants get larger fences.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	h := NewHolds(nil)
	h.Restore(boxoffice.Hold{EventID: 5, SeatIDs: []string{"A-A-1", "A-A-2"}, Owner: 77, Fence: 900, ExpiresAt: time.Now().Add(time.Minute)})
	h.Restore(boxoffice.Hold{EventID: 5, SeatIDs: []string{"A-A-9"}, Owner: 78, Fence: 5, ExpiresAt: time.Now().Add(-time.Second)}) // ran out: ignored
	if err := h.Verify(ctx, 5, []string{"A-A-1", "A-A-2"}, 77, 900); err != nil {
		t.Fatalf("restored hold: %v", err)
	}
	if _, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: 5, SeatIDs: []string{"A-A-2"}, Owner: 80, TTL: time.Minute}); boxoffice.ErrorCode(err) != boxoffice.ESEATTAKEN {
		t.Fatalf("another owner on a restored seat: %v, want ESEATTAKEN", err)
	}
	got, err := h.Acquire(ctx, boxoffice.HoldRequest{EventID: 5, SeatIDs: []string{"A-A-9"}, Owner: 80, TTL: time.Minute})
	if err != nil || got.Fence <= 900 {
		t.Fatalf("next grant: %+v, %v; want a fence above 900", got, err)
	}
}
