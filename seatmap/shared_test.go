package seatmap

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/layout"
)

// twoNodeEvent is event 7, ten seats, whose store answers slowly (a slow
// read widens the window for duplicate flights), on a clock of its own.
func twoNodeEvent() (*fakeSold, *clock) {
	ev := &boxoffice.Event{ID: 7, Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", Rows: 2, SeatsPerRow: 5}}}
	return &fakeSold{event: ev, delay: 20 * time.Millisecond}, &clock{t: time.Unix(1_800_000_000, 0)}
}

// sharingNodes are two caches of f, standing for two nodes: one lock
// layer, shared and one lease store between them.
func sharingNodes(f *fakeSold, clk *clock, shared Shared) []*Cache {
	holds, leases := inmem.NewHolds(clk.now), inmem.NewLeases(clk.now)
	nodes := []*Cache{New(f, f, holds, 10*time.Second, clk.now), New(f, f, holds, 10*time.Second, clk.now)}
	for _, n := range nodes {
		n.Share(shared, leases)
	}
	return nodes
}

// countingShared is the in-process Shared, counting the full loads.
type countingShared struct {
	*inmem.Snapshots
	loads atomic.Int64
}

func (c *countingShared) LoadSnapshot(ctx context.Context, id boxoffice.ID) ([]byte, error) {
	c.loads.Add(1)
	return c.Snapshots.LoadSnapshot(ctx, id)
}

func TestEncodedSnapshotRoundTrips(t *testing.T) {
	cache, f, _, holds := setup(t)
	ctx := context.Background()
	f.sold = []string{"A-B-5"}
	if _, err := holds.Acquire(ctx, boxoffice.HoldRequest{EventID: 7, SeatIDs: []string{"A-A-1", "A-A-2"}, Owner: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	s, err := cache.Build(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSnapshot(encodeSnapshot(s), 7)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.JSON, s.JSON) || got.ETag != s.ETag || got.CompactETag != s.CompactETag ||
		!got.BuiltAt.Equal(s.BuiltAt) || len(got.Statuses) != 10 || got.Statuses[0] != Held || got.Statuses[9] != Sold ||
		got.Counts[Held.String()] != 2 || got.Counts[Sold.String()] != 1 {
		t.Errorf("decoded %+v, want the same as built", got)
	}
	if _, err := decodeSnapshot(encodeSnapshot(s), 8); err == nil {
		t.Error("a snapshot of event 7 decoded as event 8")
	}
	enc := encodeSnapshot(s)
	if _, err := decodeSnapshot(enc[:headerLen+3], 7); err == nil {
		t.Error("a truncated snapshot decoded")
	}
}

// Two nodes sharing one store: one rebuild per TTL for both, and the same
// bytes (so the same ETag) from each.
func TestSharedCacheOneRebuildAcrossNodes(t *testing.T) {
	f, clk := twoNodeEvent()
	shared := &countingShared{Snapshots: inmem.NewSnapshots(clk.now)}
	nodes := sharingNodes(f, clk, shared)
	ctx := context.Background()
	builds := func() int { return nodes[0].Builds() + nodes[1].Builds() }

	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if _, err := nodes[i%2].Get(ctx, 7); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := builds(); n != 1 {
		t.Fatalf("cold start, 100 readers on 2 nodes: %d builds, want 1", n)
	}
	a, _ := nodes[0].Get(ctx, 7)
	b, _ := nodes[1].Get(ctx, 7)
	if a.ETag != b.ETag || !bytes.Equal(a.Gzip, b.Gzip) {
		t.Errorf("nodes serve different copies: %s vs %s", a.ETag, b.ETag)
	}

	// A sale lands; at expiry 100 readers on both nodes cause one rebuild
	// in all, and both nodes then show it.
	f.mu.Lock()
	f.sold = []string{"A-A-1"}
	f.mu.Unlock()
	clk.advance(11 * time.Second)
	for i := range 100 {
		wg.Go(func() {
			if _, err := nodes[i%2].Get(ctx, 7); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, n := range nodes {
		waitFor(t, func() bool { s, _ := n.Get(ctx, 7); return s.Statuses[0] == Sold })
	}
	if n := builds(); n != 2 {
		t.Errorf("100 readers on 2 nodes at expiry: %d rebuilds, want 1", n-1)
	}
	a, _ = nodes[0].Get(ctx, 7)
	b, _ = nodes[1].Get(ctx, 7)
	if a.ETag != b.ETag {
		t.Errorf("after the rebuild nodes serve different copies: %s vs %s", a.ETag, b.ETag)
	}
	if n := shared.loads.Load(); n > 4 {
		t.Errorf("%d full loads of the shared copy, want one per node per rebuild", n)
	}
}

// The fresh reads of statuses (the inventory's, once a second) are shared
// too: one node reads an event's holds and sold seats for the fleet, the
// other loads its reading, also when 100 callers on both nodes ask at
// once; an Invalidate on a node is not undone by a reading from before it.
func TestSharedFreshStatusesOneReadAcrossNodes(t *testing.T) {
	f, clk := twoNodeEvent()
	nodes := sharingNodes(f, clk, inmem.NewSnapshots(clk.now))
	ctx := context.Background()
	reads := func() int { return nodes[0].Builds() + nodes[1].Builds() }
	fresh := func(n *Cache) layout.Statuses {
		t.Helper()
		st, err := n.Statuses(ctx, 7, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	if st := fresh(nodes[0]); st[0] != Available {
		t.Fatalf("first read: A-A-1 %c, want available", st[0])
	}
	if st := fresh(nodes[1]); st[0] != Available || reads() != 1 {
		t.Fatalf("the other node: A-A-1 %c after %d reads, want available after 1", st[0], reads())
	}

	// A sale lands; past maxAge 100 callers on both nodes cause one read
	// in all, and both see the sale.
	f.mu.Lock()
	f.sold = []string{"A-A-1"}
	f.mu.Unlock()
	clk.advance(2 * time.Second)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			st, err := nodes[i%2].Statuses(ctx, 7, time.Second)
			if err != nil || st[0] != Sold {
				t.Errorf("fresh statuses: %v, %v; want A-A-1 sold", st, err)
			}
		})
	}
	wg.Wait()
	if n := reads(); n != 2 {
		t.Errorf("100 callers on 2 nodes past maxAge: %d reads, want 1", n-1)
	}

	// A reading from before a node's Invalidate is not adopted there.
	f.mu.Lock()
	f.sold = []string{"A-A-1", "A-A-2"}
	f.mu.Unlock()
	clk.advance(time.Millisecond)
	nodes[1].Invalidate(7)
	if st := fresh(nodes[1]); st[1] != Sold {
		t.Errorf("after Invalidate: A-A-2 %c, want sold (read again, not the shared reading)", st[1])
	}
	if n := reads(); n != 3 {
		t.Errorf("after Invalidate: %d reads in all, want 3", n)
	}
}

// Encoded statuses come back as they went in, and only for their own
// event: another event's, a cut header or a byte that is no status is not
// taken.
func TestEncodedStatusesRoundTrip(t *testing.T) {
	at := time.Unix(1_800_000_000, 123)
	st := layout.Statuses{Available, Held, Sold, Resale, Available}
	b := encodeStatuses(7, at, st)
	gotAt, got, ok := decodeStatuses(b, 7)
	if !ok || !gotAt.Equal(at) || string(got) != string(st) {
		t.Fatalf("decode: %v %v %q, want %v %q", ok, gotAt, got, at, st)
	}
	if _, _, ok := decodeStatuses(b, 8); ok {
		t.Error("another event's statuses taken")
	}
	if _, _, ok := decodeStatuses(b[:statusesHeaderLen-1], 7); ok {
		t.Error("a cut header taken")
	}
	bad := bytes.Clone(b)
	bad[statusesHeaderLen+2] = 'x'
	if _, _, ok := decodeStatuses(bad, 7); ok {
		t.Error("a byte that is no status taken")
	}
	if _, got, ok := decodeStatuses(encodeStatuses(7, at, nil), 7); !ok || len(got) != 0 {
		t.Errorf("no seats: %v %q", ok, got)
	}
}
