package redis

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/seatmap"
)

func TestSnapshots(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		ctx := context.Background()
		s := NewSnapshots(client, newPrefix(t, client))
		if b, err := s.PeekSnapshot(ctx, 1, 8); b != nil || err != nil {
			t.Fatalf("peek of nothing = %q, %v", b, err)
		}
		if b, err := s.LoadSnapshot(ctx, 1); b != nil || err != nil {
			t.Fatalf("load of nothing = %q, %v", b, err)
		}
		val := append([]byte("header\x00\xff"), bytes.Repeat([]byte{0, 1, 2}, 200_000)...)
		if err := s.StoreSnapshot(ctx, 1, val, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if b, err := s.PeekSnapshot(ctx, 1, 8); string(b) != "header\x00\xff" || err != nil {
			t.Errorf("peek = %q, %v", b, err)
		}
		if b, err := s.LoadSnapshot(ctx, 1); !bytes.Equal(b, val) || err != nil {
			t.Errorf("load = %d bytes, %v; want the %d stored", len(b), err, len(val))
		}
		if b, _ := s.LoadSnapshot(ctx, 2); b != nil {
			t.Error("another event's snapshot is not empty")
		}
		time.Sleep(400 * time.Millisecond)
		if b, err := s.LoadSnapshot(ctx, 1); b != nil || err != nil {
			t.Errorf("after its ttl: %d bytes, %v", len(b), err)
		}
	})
}

type soldSeats struct {
	boxoffice.EventStore
	ev *boxoffice.Event
}

func (s soldSeats) SoldSeats(context.Context, boxoffice.ID) ([]string, error) {
	return []string{"A-A-1"}, nil
}

func (s soldSeats) EventListings(context.Context, boxoffice.ID) ([]boxoffice.Listing, error) {
	return nil, nil
}

func (s soldSeats) Layout(context.Context, boxoffice.ID) (*layout.Layout, error) {
	return layout.Of(s.ev), nil
}

// Three nodes' seat-map caches on one Redis: one build for all of them,
// the same bytes from each.
func TestSharedSeatMap(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		ctx := context.Background()
		prefix := newPrefix(t, client)
		ev := &boxoffice.Event{ID: 42, Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", Rows: 100, SeatsPerRow: 100}}}
		store := soldSeats{ev: ev}
		var nodes []*seatmap.Cache
		for range 3 {
			c := seatmap.New(store, store, inmem.NewHolds(nil), time.Minute, nil)
			c.Share(NewSnapshots(client, prefix), NewLeases(client, prefix))
			nodes = append(nodes, c)
		}
		var wg sync.WaitGroup
		snaps := make([]*seatmap.Snapshot, 60)
		for i := range snaps {
			wg.Go(func() {
				s, err := nodes[i%3].Get(ctx, ev.ID)
				if err != nil {
					t.Error(err)
				}
				snaps[i] = s
			})
		}
		wg.Wait()
		builds := 0
		for _, n := range nodes {
			builds += n.Builds()
		}
		if builds != 1 {
			t.Errorf("3 nodes, 60 cold readers: %d builds, want 1", builds)
		}
		for _, s := range snaps {
			if s != nil && (s.ETag != snaps[0].ETag || s.Statuses[0] != seatmap.Sold || len(s.Statuses) != 10_000) {
				t.Fatalf("snapshot %s (%d seats, first %s) differs from %s", s.ETag, len(s.Statuses), s.Statuses[0], snaps[0].ETag)
			}
		}
	})
}
