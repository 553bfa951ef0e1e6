package seatmap

import (
	"context"
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/layout"
)

// fakeSold is the part of the store the seat map reads; the layout comes
// from the event itself.
type fakeSold struct {
	boxoffice.EventStore
	mu       sync.Mutex
	sold     []string
	calls    atomic.Int32
	delay    time.Duration
	event    *boxoffice.Event
	listings []boxoffice.Listing
}

func (f *fakeSold) SoldSeats(ctx context.Context, id boxoffice.ID) ([]string, error) {
	f.calls.Add(1)
	time.Sleep(f.delay) // a slow rebuild widens the window for duplicate flights
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sold...), nil
}

func (f *fakeSold) EventListings(ctx context.Context, id boxoffice.ID) ([]boxoffice.Listing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]boxoffice.Listing(nil), f.listings...), nil
}

func (f *fakeSold) Layout(ctx context.Context, id boxoffice.ID) (*layout.Layout, error) {
	return layout.Of(f.event), nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func setup(t *testing.T) (*Cache, *fakeSold, *clock, *inmem.Holds) {
	t.Helper()
	ev := &boxoffice.Event{ID: 7, Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", Rows: 2, SeatsPerRow: 5}}}
	f := &fakeSold{event: ev, delay: 20 * time.Millisecond}
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	holds := inmem.NewHolds(c.now)
	return New(f, f, holds, 10*time.Second, c.now), f, c, holds
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOneRebuildUnderConcurrentReadersAtExpiry(t *testing.T) {
	cache, f, clk, _ := setup(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	// Cold start: 100 readers, one build.
	for range 100 {
		wg.Go(func() {
			if _, err := cache.Get(ctx, 7); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := cache.Builds(); n != 1 {
		t.Fatalf("cold start with 100 readers built %d times, want 1", n)
	}
	first, _ := cache.Get(ctx, 7)
	clk.advance(6 * time.Second)
	// Past half the TTL: 100 readers all get the copy at once, and one
	// rebuild runs ahead of the TTL.
	for range 100 {
		wg.Go(func() {
			if s, err := cache.Get(ctx, 7); err != nil || s != first {
				t.Errorf("a reader past half the TTL waited or got another copy: %v", err)
			}
		})
	}
	wg.Wait()
	waitFor(t, func() bool { s, _ := cache.Get(ctx, 7); return s != first })
	if n := cache.Builds(); n != 2 {
		t.Errorf("100 readers past half the TTL caused %d rebuilds, want 1 (2 builds in all)", n-1)
	}
	// Past the TTL (a quiet spell): 100 readers wait for one rebuild and
	// all get it, none the old copy.
	second, _ := cache.Get(ctx, 7)
	clk.advance(11 * time.Second)
	for range 100 {
		wg.Go(func() {
			s, err := cache.Get(ctx, 7)
			if err != nil {
				t.Error(err)
				return
			}
			if s == second || !s.BuiltAt.Equal(clk.now()) {
				t.Error("a reader past the TTL got a copy older than the TTL")
			}
		})
	}
	wg.Wait()
	if n := cache.Builds(); n != 3 {
		t.Errorf("100 readers past the TTL caused %d rebuilds, want 1 (3 builds in all)", n-2)
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("SoldSeats called %d times, want 3", n)
	}
}

func TestStalenessBoundedByTTL(t *testing.T) {
	cache, f, clk, holds := setup(t)
	ctx := context.Background()
	s, _ := cache.Get(ctx, 7)
	if s.Counts[Available.String()] != 10 {
		t.Fatalf("counts %v", s.Counts)
	}
	if _, err := holds.Acquire(ctx, boxoffice.HoldRequest{EventID: 7, SeatIDs: []string{"A-A-1"}, Owner: 1, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.sold = []string{"A-B-5"}
	f.mu.Unlock()
	clk.advance(4 * time.Second)
	if s2, _ := cache.Get(ctx, 7); s2 != s || cache.Builds() != 1 {
		t.Fatal("rebuilt before half the TTL")
	}
	// A quiet spell past the TTL, then one read: it sees the change.
	clk.advance(30 * time.Second)
	s3, _ := cache.Get(ctx, 7)
	if s3.Statuses[0] != Held || s3.Statuses[9] != Sold || s3.Counts[Available.String()] != 8 {
		t.Errorf("after the TTL: statuses %v counts %v", s3.Statuses, s3.Counts)
	}
	if s3.ETag == s.ETag || s3.CompactETag == s.CompactETag {
		t.Error("the ETag did not change with the content")
	}
	var avail struct {
		Runs string `json:"runs"`
	}
	if err := json.Unmarshal(s3.Compact, &avail); err != nil || avail.Runs != "1h8a1s" {
		t.Errorf("compact runs %q (%v), want 1h8a1s", avail.Runs, err)
	}
	letters, err := DecodeRuns(avail.Runs)
	if err != nil || string(letters) != "haaaaaaaas" {
		t.Errorf("DecodeRuns = %q, %v", letters, err)
	}
}

// Whatever the pace of the reads, no reader gets a map older than the TTL,
// and the readers of a busy event do not wait for rebuilds.
func TestNoReaderGetsAMapOlderThanTheTTL(t *testing.T) {
	cache, f, clk, _ := setup(t)
	f.delay = 0
	ctx := context.Background()
	for i := range 300 {
		clk.advance(time.Duration(i*7919%3000) * time.Millisecond)
		s, err := cache.Get(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		if age := clk.now().Sub(s.BuiltAt); age >= cache.TTL() || cache.Age(s) != age {
			t.Fatalf("read %d: a map %s old (Age %s), TTL %s", i, age, cache.Age(s), cache.TTL())
		}
	}
}

func TestDecodeRunsRefusesGarbage(t *testing.T) {
	for _, in := range []string{"3x", "999999999a", "a-1"} {
		if _, err := DecodeRuns(in); err == nil {
			t.Errorf("DecodeRuns(%q) accepted", in)
		}
	}
}

// A sold seat whose owner lists it shows as resale with its price, in the
// full map and the compact view; once a buyer holds it, as held.
func TestListedSeatShowsAsResaleUntilABuyerHoldsIt(t *testing.T) {
	c, f, clk, holds := setup(t)
	f.delay = 0
	f.sold = []string{"A-A-1", "A-A-2"}
	f.listings = []boxoffice.Listing{{ID: 99, EventID: 7, SeatID: "A-A-2", PriceCents: 4200, Status: boxoffice.ListingActive}}
	snap, err := c.Get(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Seats []struct {
			SeatID           string       `json:"seat_id"`
			Status           string       `json:"status"`
			ListingID        boxoffice.ID `json:"listing_id"`
			ResalePriceCents int64        `json:"resale_price_cents"`
		} `json:"seats"`
	}
	if err := json.Unmarshal(snap.JSON, &m); err != nil {
		t.Fatal(err)
	}
	if s := m.Seats[0]; s.Status != "sold" || s.ListingID != 0 {
		t.Errorf("sold seat: %+v", s)
	}
	if s := m.Seats[1]; s.Status != "resale" || s.ListingID != 99 || s.ResalePriceCents != 4200 {
		t.Errorf("listed seat: %+v, want resale, listing 99 at 4200", s)
	}
	var view struct{ Runs string }
	_ = json.Unmarshal(snap.Compact, &view)
	if view.Runs != "1s1r8a" {
		t.Errorf("compact runs = %q, want 1s1r8a", view.Runs)
	}
	if _, err := holds.Acquire(context.Background(), boxoffice.HoldRequest{EventID: 7, SeatIDs: []string{"A-A-2"}, Owner: 5, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clk.advance(11 * time.Second)
	snap, err = c.Build(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Statuses[1] != Held {
		t.Errorf("listed seat a buyer holds: %s, want held", snap.Statuses[1])
	}
}

// Best available's and the inventory's fresh look: statuses older than
// maxAge are read again once for all the callers asking at the same time,
// and kept for the next fresh look.
func TestFreshStatusesRebuildOnceForConcurrentCallers(t *testing.T) {
	c, f, clk, _ := setup(t)
	if _, err := c.Statuses(context.Background(), 7, 0); err != nil {
		t.Fatal(err)
	}
	builds := c.Builds()
	f.mu.Lock()
	f.sold = []string{"A-A-1"}
	f.mu.Unlock()
	clk.advance(2 * time.Second) // within the TTL, past maxAge
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			st, err := c.Statuses(context.Background(), 7, time.Second)
			if err != nil || st[0] != Sold {
				t.Errorf("fresh statuses: %v, %v; want A-A-1 sold", st, err)
			}
		})
	}
	wg.Wait()
	if n := c.Builds() - builds; n != 1 {
		t.Errorf("%d rebuilds for 20 concurrent fresh reads, want 1", n)
	}
	if st, err := c.Statuses(context.Background(), 7, time.Second); err != nil || st[0] != Sold {
		t.Errorf("fresh statuses again: %v, %v; want A-A-1 sold", st, err)
	}
	if n := c.Builds() - builds; n != 1 {
		t.Errorf("the fresh read was not kept: %d reads in all, want 1", n)
	}
}

// With a byte bound the snapshots kept stay under it however many events
// are read, and the event read last stays.
func TestByteBoundKeepsSnapshotsUnderIt(t *testing.T) {
	ev := &boxoffice.Event{ID: 7, Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", Rows: 20, SeatsPerRow: 50}}}
	f := &fakeSold{event: ev}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cache := New(f, f, inmem.NewHolds(clk.now), 10*time.Second, clk.now)
	ctx := context.Background()
	one, err := cache.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	bound := one.Bytes() * 5 // room for about six snapshots in all
	cache.SetMaxBytes(bound)
	for id := range boxoffice.ID(100) {
		if _, err := cache.Get(ctx, id+1); err != nil {
			t.Fatal(err)
		}
		if got := cache.Bytes(); got > bound {
			t.Fatalf("after %d events: %d bytes kept, bound %d", id+1, got, bound)
		}
	}
	if got := cache.Events(); got < 2 || got > 6 {
		t.Errorf("%d events kept under a bound of about 6 snapshots", got)
	}
	builds := cache.Builds()
	if _, err := cache.Get(ctx, 100); err != nil { // the last one read is still there
		t.Fatal(err)
	}
	if cache.Builds() != builds {
		t.Error("the event read last was evicted")
	}
}

// TestStatusesHeap keeps fresh reads of 200 events of 5,000 seats (best
// available's and the inventory's view): each costs about its seat count
// in bytes, a byte a seat, not a string header a seat (80 KB).
func TestStatusesHeap(t *testing.T) {
	const events, rows, perRow = 200, 50, 100
	ev := &boxoffice.Event{ID: 7, Sections: []boxoffice.Section{{Name: "A", PriceTier: "t", Rows: rows, SeatsPerRow: perRow}}}
	f := &fakeSold{event: ev}
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	cache := New(f, f, inmem.NewHolds(c.now), 10*time.Second, c.now)
	ctx := context.Background()
	if _, err := cache.Statuses(ctx, 1, time.Second); err != nil { // warm up the layout
		t.Fatal(err)
	}
	before := heapInUse()
	for id := range events {
		if _, err := cache.Statuses(ctx, boxoffice.ID(id+2), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	per := (heapInUse() - before) / events
	t.Logf("%d events of %d seats: %d bytes kept per event", events, rows*perRow, per)
	if per > 2*rows*perRow {
		t.Errorf("%d bytes kept per event of %d seats, want at most %d (a byte a seat, and some)", per, rows*perRow, 2*rows*perRow)
	}
	if n := cache.Events(); n != events+1 {
		t.Errorf("cache keeps %d events, want %d", n, events+1)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
