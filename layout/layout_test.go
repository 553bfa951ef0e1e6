package layout

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// venue has sections of every shape: one seat, rows past Z (AA...), rows
// longer than 99 seats, features, two sections of one tier, and none.
func venue() *boxoffice.Event {
	return &boxoffice.Event{ID: 1, Name: "show", StartsAt: time.Now().Add(time.Hour), Sections: []boxoffice.Section{
		{Name: "Box", PriceTier: "vip", PriceCents: 90_00, Rows: 1, SeatsPerRow: 1},
		{Name: "Stalls", PriceTier: "std", PriceCents: 50_00, Rows: 30, SeatsPerRow: 12, Features: map[string][]boxoffice.SeatFeature{
			"A-1": {boxoffice.Wheelchair}, "A-2": {boxoffice.Companion}, "Z-12": {boxoffice.RestrictedView},
			"AA-3": {boxoffice.Wheelchair, boxoffice.RestrictedView}, "AD-12": {boxoffice.Companion},
		}},
		{Name: "Circle_2", PriceTier: "std", PriceCents: 40_00, Rows: 3, SeatsPerRow: 150, Features: map[string][]boxoffice.SeatFeature{
			"C-150": {boxoffice.RestrictedView}, "B-100": {boxoffice.Wheelchair},
		}},
		{Name: "Closed", PriceTier: "std", PriceCents: 40_00, Rows: 0, SeatsPerRow: 10}, // not valid, but no seat either
		{Name: "Gods", PriceTier: "cheap", PriceCents: 10_00, Rows: 60, SeatsPerRow: 2},
	}}
}

// A seat of the layout is exactly the seat Event.Seats has at its index,
// and its id leads back to that index.
func TestLayoutIsTheEventsSeats(t *testing.T) {
	e := venue()
	l := Of(e)
	seats := e.Seats()
	if l.Len() != len(seats) || l.Len() != e.SeatCount() {
		t.Fatalf("Len %d, the event has %d seats", l.Len(), len(seats))
	}
	for i, want := range seats {
		got := l.At(i)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("At(%d) = %+v, want %+v", i, got, want)
		}
		if len(want.Features) > 0 && &got.Features[0] != &want.Features[0] {
			t.Errorf("At(%d): features copied, not the section's", i)
		}
		if j, ok := l.Index(want.ID); !ok || j != i {
			t.Fatalf("Index(%q) = %d, %v, want %d", want.ID, j, ok, i)
		}
		if st, ok := l.Seat(want.ID); !ok || !reflect.DeepEqual(st, want) {
			t.Fatalf("Seat(%q) = %+v, %v, want %+v", want.ID, st, ok, want)
		}
		if o := l.Order(want.ID); o != i {
			t.Fatalf("Order(%q) = %d, want %d", want.ID, o, i)
		}
		if id := l.ID(i); id != want.ID {
			t.Fatalf("ID(%d) = %q, want %q", i, id, want.ID)
		}
		k, r, n := l.Locate(i)
		if s := l.Sections()[k]; s.Name != want.Section || boxoffice.RowLabel(r) != want.Row || n != want.Number ||
			!slices.Equal(s.SeatFeatures(r, n), want.Features) {
			t.Fatalf("Locate(%d) = %d, %d, %d; seat %+v", i, k, r, n, want)
		}
	}
	if !slices.Equal(l.SeatIDs(), slices.Collect(func(yield func(string) bool) {
		for _, s := range seats {
			if !yield(s.ID) {
				return
			}
		}
	})) {
		t.Error("SeatIDs are not the seats' ids in layout order")
	}
	if !reflect.DeepEqual(l.Seats(), seats) {
		t.Error("Seats is not Event.Seats")
	}
	for name, want := range map[string]int{"Box": 1, "Stalls": 12, "Circle_2": 150, "Gods": 2, "Closed": 10, "Nope": 0, "": 0} {
		if got := l.SeatsPerRow(name); got != want {
			t.Errorf("SeatsPerRow(%q) = %d, want %d", name, got, want)
		}
	}
	for _, i := range []int{-1, l.Len()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("At(%d) of %d seats did not panic", i, l.Len())
				}
			}()
			l.At(i)
		}()
	}
}

// Only a seat's canonical id is a seat: no other spelling of it, nothing
// outside its section.
func TestIndexTakesOnlyCanonicalIDs(t *testing.T) {
	l := Of(venue())
	for _, id := range []string{
		"Stalls-A-01", "Stalls-A-+1", "Stalls-A--1", "Stalls-A-0", "Stalls-A-13", "Stalls-A- 1", "Stalls-A-1 ", "Stalls-A-1x",
		"Stalls-A-1-", "Stalls-A-1-1", "Stalls-a-1", "Stalls-AE-1", "Stalls-0A-1", "Stalls--1", "Stalls-A", "Stalls-A-",
		"Stalls", "stalls-A-1", "-A-1", "", "-", "--", "Box-A-2", "Box-B-1", "Gods-BI-1", "Circle_2-A-151", "Circle_2-A-1e2",
		"Circle_2-A-0x10", "Circle_2-A-1_0", "Stalls-AAAAA-1", "Closed-A-1", "Stalls-A-99999999999999999999",
	} {
		if i, ok := l.Index(id); ok {
			t.Errorf("Index(%q) = %d, want no seat", id, i)
		}
		if _, ok := l.Seat(id); ok {
			t.Errorf("Seat(%q) found a seat", id)
		}
		if o := l.Order(id); o != -1 {
			t.Errorf("Order(%q) = %d, want -1", id, o)
		}
	}
	if i, ok := l.Index("Gods-BH-2"); !ok || i != l.Len()-1 {
		t.Errorf("Index of the last seat: %d, %v", i, ok)
	}
}

// Select checks a request's seats against the layout.
func TestSelect(t *testing.T) {
	l := Of(venue())
	seats, err := l.Select([]string{"Stalls-AA-3", "Box-A-1"}, 4)
	if err != nil || len(seats) != 2 || seats[0].ID != "Stalls-AA-3" || !seats[0].HasFeature(boxoffice.Wheelchair) || seats[1].PriceCents != 90_00 {
		t.Errorf("Select: %+v, %v", seats, err)
	}
	for _, tc := range []struct {
		ids  []string
		code string
		bad  []string
	}{
		{nil, boxoffice.EINVALID, nil},
		{[]string{"Box-A-1", "Box-A-1"}, boxoffice.EINVALID, []string{"Box-A-1"}},
		{[]string{"Box-A-1", "Stalls-A-01", "Gods-A-3"}, boxoffice.EINVALID, []string{"Stalls-A-01", "Gods-A-3"}},
		{[]string{"Box-A-1", "Gods-A-1", "Gods-A-2", "Gods-B-1", "Gods-B-2"}, boxoffice.ELIMIT, nil},
	} {
		_, err := l.Select(tc.ids, 4)
		if boxoffice.ErrorCode(err) != tc.code || !slices.Equal(boxoffice.ErrorSeats(err), tc.bad) {
			t.Errorf("Select(%q) = %v (seats %q), want %s naming %q", tc.ids, err, boxoffice.ErrorSeats(err), tc.code, tc.bad)
		}
	}
}

// events is a store of events of the same sections, each read anew, as a
// store hands out a new value per read.
type events struct {
	sections func() []boxoffice.Section
	starts   func(id boxoffice.ID) time.Time
	reads    atomic.Int64
}

func (s *events) Event(_ context.Context, id boxoffice.ID) (*boxoffice.Event, error) {
	s.reads.Add(1)
	starts := time.Now().Add(24 * time.Hour)
	if s.starts != nil {
		starts = s.starts(id)
	}
	return &boxoffice.Event{ID: id, Name: fmt.Sprintf("Show number %d", id), Venue: "The Arena", StartsAt: starts,
		SaleOpensAt: starts.Add(-30 * 24 * time.Hour), SaleMode: boxoffice.SaleDirect, TicketLimit: 8,
		Sections: s.sections(), CreatedAt: time.Now()}, nil
}

// grid is sections of rows x perRow seats; features puts that many
// featured seats in each.
func grid(sections, rows, perRow, features int) func() []boxoffice.Section {
	return func() []boxoffice.Section {
		out := make([]boxoffice.Section, sections)
		for k := range out {
			out[k] = boxoffice.Section{Name: fmt.Sprintf("S%02d", k), PriceTier: fmt.Sprintf("t%d", k%4), PriceCents: 50_00, Rows: rows, SeatsPerRow: perRow}
			for f := range features {
				if out[k].Features == nil {
					out[k].Features = map[string][]boxoffice.SeatFeature{}
				}
				out[k].Features[boxoffice.RowLabel(1+f%rows)+"-"+fmt.Sprint(1+f/rows)] = []boxoffice.SeatFeature{boxoffice.Wheelchair}
			}
		}
		return out
	}
}

// What a cached layout weighs: the heap it keeps after GC (its event
// included), O(sections), within the bounds of issue 18: 100 KB for a
// 5,000-seat event, 1 MB for 70,000 seats (it was ~1.9 MB per 5,000 seats
// with every seat expanded and indexed twice). Bytes, the cost a byte
// bound counts, is within a factor of 2 of it.
func TestLayoutHeap(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		src      *events
		max      float64 // bytes per layout
		seats, n int
	}{
		{"5,000 seats (50 rows x 100)", &events{sections: grid(1, 50, 100, 0)}, 100 << 10, 5_000, 2000},
		{"70,000 seats (14 sections of 50 x 100)", &events{sections: grid(14, 50, 100, 0)}, 1 << 20, 70_000, 1000},
		{"70,000 seats, 40 featured seats a section", &events{sections: grid(14, 50, 100, 40)}, 1 << 20, 70_000, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache(tc.src, tc.n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var bytes int64
			for i := range tc.n {
				l, err := c.Get(ctx, boxoffice.ID(i+1))
				if err != nil {
					t.Fatal(err)
				}
				if l.Len() != tc.seats {
					t.Fatalf("%d seats, want %d", l.Len(), tc.seats)
				}
				bytes += l.Bytes()
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			if c.Len() != tc.n {
				t.Fatalf("%d layouts cached, want %d", c.Len(), tc.n)
			}
			runtime.KeepAlive(c)
			per := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(tc.n)
			est := float64(bytes) / float64(tc.n)
			t.Logf("%d layouts: %.0f bytes each on the heap after GC, Bytes %.0f", tc.n, per, est)
			if per > tc.max {
				t.Errorf("%.0f bytes per cached layout, want at most %.0f", per, tc.max)
			}
			if est > 2*per || per > 2*est {
				t.Errorf("Bytes %.0f, not within a factor of 2 of the %.0f measured", est, per)
			}
		})
	}
}

// The cache keeps no layout of a show that is over, and drops one that
// is over since it was cached; a byte bound evicts the least recently
// used.
func TestCache(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 6, 1, 20, 0, 0, 0, time.UTC)
	src := &events{sections: grid(1, 10, 10, 0), starts: func(id boxoffice.ID) time.Time {
		return now.Add(time.Duration(id) * time.Hour) // event 1 starts in an hour, 2 in two...
	}}
	c := NewCache(src, 10)
	clock := now
	c.SetClock(func() time.Time { return clock })

	get := func(id boxoffice.ID) *Layout {
		t.Helper()
		l, err := c.Get(ctx, id)
		if err != nil || l.Event.ID != id {
			t.Fatalf("Get(%d): %v, %v", id, l, err)
		}
		return l
	}
	a, b := get(1), get(2)
	if get(1) != a || get(2) != b || src.reads.Load() != 2 || c.Len() != 2 {
		t.Fatalf("layouts not cached: %d reads, %d cached", src.reads.Load(), c.Len())
	}
	// Event 1 is over 24 hours after it starts, event 2 an hour later.
	clock = now.Add(time.Hour + boxoffice.ShowOver)
	if a.Event.Over(clock) || !a.Event.Over(clock.Add(time.Nanosecond)) {
		t.Fatalf("Over: the show starting at %v is over after %v", a.Event.StartsAt, boxoffice.ShowOver)
	}
	clock = clock.Add(time.Minute)
	if get(1) != a || c.Len() != 1 {
		t.Errorf("the layout of a show over since it was cached: still returned, no longer kept (%d cached)", c.Len())
	}
	if get(1) == a || src.reads.Load() != 3 || c.Len() != 1 {
		t.Errorf("a show that is over: read anew (%d reads), not kept (%d cached)", src.reads.Load(), c.Len())
	}
	c.Add(Of(&boxoffice.Event{ID: 99, StartsAt: now}))
	if c.Len() != 1 {
		t.Errorf("Add kept a show that is over: %d cached", c.Len())
	}
	clock = clock.Add(time.Hour) // event 2 is over too: adding another drops it
	c.Add(get(5))
	if c.Len() != 1 {
		t.Errorf("after event 2's show: %d cached, want event 5 alone", c.Len())
	}

	// A byte bound of three layouts.
	c = NewCache(src, 100)
	c.SetClock(func() time.Time { return now })
	one := get(1).Bytes()
	c.SetMaxBytes(3 * one)
	if c.Bytes() != one {
		t.Errorf("Bytes %d, want %d", c.Bytes(), one)
	}
	for id := range boxoffice.ID(6) {
		get(id + 1)
	}
	if c.Len() != 3 || c.Bytes() != 3*one {
		t.Errorf("bound of %d bytes: %d layouts, %d bytes cached", 3*one, c.Len(), c.Bytes())
	}
}
