package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/snowflake"
)

// PurgeDecided deletes the requests decided before the cutoff and only
// them: a live request stays however old, and so does the one holding the
// log's last place, so that requests admitted after a purge are drained in
// order, at new positions and places.
func TestPurgeDecidedKeepsTheLiveAndTheLog(t *testing.T) {
	ctx := context.Background()
	s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	q := s.Queue()
	ev := queuetest.QueuedEvent(t, s)
	day0 := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Millisecond)
	clock := day0
	ids, err := snowflake.New(1, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	admit := func(user string) *boxoffice.QueuedRequest {
		t.Helper()
		id, err := ids.NextID()
		if err != nil {
			t.Fatal(err)
		}
		r := &boxoffice.QueuedRequest{ID: id, EventID: ev, UserID: user, SeatIDs: []string{"A-A-1"},
			IdempotencyKey: "k", RequestHash: "h-" + user, EnqueuedAt: clock}
		e, replay, err := q.Admit(ctx, r, 1, false)
		if err != nil || replay {
			t.Fatalf("admit %s: %v (replay %v)", user, err, replay)
		}
		return e.Request
	}
	finish := func(r *boxoffice.QueuedRequest) {
		t.Helper()
		if _, err := q.FinishMany(ctx, []*boxoffice.QueuedRequest{r}, []boxoffice.QueueOutcome{
			{Status: boxoffice.QueueRejected, Reason: "seat_taken", FinishedAt: clock}}); err != nil {
			t.Fatal(err)
		}
	}

	old := admit("old")   // decided on day 0: purged
	live := admit("live") // still queued: kept
	last := admit("last") // decided on day 2, after the cutoff: kept
	if got := consumeOne(t, q); got.ID != old.ID {
		t.Fatalf("the drain took %d first, want %d", got.ID, old.ID)
	}
	finish(old)
	clock = day0.Add(48 * time.Hour)
	finish(last)
	recent := admit("recent") // decided after the cutoff: kept
	if got := consumeOne(t, q); got.ID != recent.ID {
		t.Fatalf("the drain took %d, want %d", got.ID, recent.ID)
	}
	finish(recent)

	n, err := q.PurgeDecided(ctx, day0.Add(24*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("purged %d requests, want 1 (the one decided before the cutoff)", n)
	}
	if _, err := q.Entry(ctx, old.ID); boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		t.Errorf("a purged request reads %v, want not found", err)
	}
	for _, r := range []*boxoffice.QueuedRequest{live, last, recent} {
		if _, err := q.Entry(ctx, r.ID); err != nil {
			t.Errorf("request of %s after the purge: %v", r.UserID, err)
		}
	}
	// The purged request's key is free again, as after production's TTL,
	// and positions go on from the counters, not from the rows left.
	again := admit("old")
	if again.Position <= recent.Position {
		t.Errorf("a request admitted after the purge has position %d, not after %d", again.Position, recent.Position)
	}
	if got := consumeOne(t, q); got.ID != again.ID {
		t.Fatalf("the drain took %d, want %d", got.ID, again.ID)
	}
	finish(live)
	finish(again)

	// Everything decided long ago goes, but for the log's last place: the
	// drain, which has taken the log up to it, takes what comes next.
	clock = day0.Add(10 * 24 * time.Hour)
	if n, err = q.PurgeDecided(ctx, clock, 10); err != nil || n != 3 {
		t.Errorf("second purge: %d, %v; want 3 (all but the log's last)", n, err)
	}
	next := admit("next")
	if got := consumeOne(t, q); got.ID != next.ID {
		t.Errorf("the drain after a purge took %d, want the request admitted after it (%d)", got.ID, next.ID)
	}
}

// consumeOne takes the next batch of the log and returns its first request.
func consumeOne(t *testing.T, q interface {
	Consume(ctx context.Context, handle func(ctx context.Context, batch []*boxoffice.QueuedRequest) error) error
}) *boxoffice.QueuedRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got *boxoffice.QueuedRequest
	_ = q.Consume(ctx, func(_ context.Context, batch []*boxoffice.QueuedRequest) error {
		got = batch[0]
		cancel()
		return nil
	})
	if got == nil {
		t.Fatal("nothing to consume")
	}
	return got
}
