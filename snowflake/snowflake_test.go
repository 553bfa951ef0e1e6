package snowflake

import (
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// next is NextID for a generator that must not fail.
func next(tb testing.TB, g *Generator) boxoffice.ID {
	tb.Helper()
	id, err := g.NextID()
	if err != nil {
		tb.Fatalf("NextID: %v", err)
	}
	return id
}

func TestStrictlyIncreasingWhenClockStepsBack(t *testing.T) {
	var mu sync.Mutex
	now := Epoch.Add(time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g, err := New(7, clock)
	if err != nil {
		t.Fatal(err)
	}
	var last boxoffice.ID
	for i := 0; i < 20000; i++ {
		if i == 5000 {
			mu.Lock()
			now = now.Add(-10 * time.Second) // the clock steps back
			mu.Unlock()
		}
		id := next(t, g)
		if id <= last {
			t.Fatalf("id %d after %d: not increasing (i=%d)", id, last, i)
		}
		last = id
		if _, node, _ := Parts(id); node != 7 {
			t.Fatalf("node = %d, want 7", node)
		}
	}
}

func TestUniqueAcrossGoroutinesAndNodes(t *testing.T) {
	seen := sync.Map{}
	var wg sync.WaitGroup
	for node := 0; node < 4; node++ {
		g, _ := New(node, nil)
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5000; i++ {
					id, err := g.NextID()
					if err != nil {
						t.Errorf("NextID: %v", err)
						return
					}
					if _, dup := seen.LoadOrStore(id, true); dup {
						t.Errorf("duplicate id %d", id)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}

func TestParts(t *testing.T) {
	at := Epoch.Add(1234567 * time.Millisecond)
	g, _ := New(MaxNode, func() time.Time { return at })
	next(t, g)
	id := next(t, g)
	ts, node, seq := Parts(id)
	if !ts.Equal(at) || node != MaxNode || seq != 1 {
		t.Fatalf("Parts = %v %d %d, want %v %d 1", ts, node, seq, at, MaxNode)
	}
	if IDMillis(id) != 1234567 {
		t.Fatalf("IDMillis = %d, want 1234567", IDMillis(id))
	}
	if _, err := New(MaxNode+1, nil); err == nil {
		t.Fatal("New accepted a node out of range")
	}
}

// fakeLease is a Lease the test sets by hand.
type fakeLease struct {
	mu      sync.Mutex
	grant   Grant
	valid   bool
	reached int64
}

func (l *fakeLease) Grant() (Grant, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.valid {
		return Grant{}, boxoffice.Errorf(boxoffice.EUNAVAILABLE, "no lease")
	}
	return l.grant, nil
}

func (l *fakeLease) Reached(ms int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reached = max(l.reached, ms)
}

func (l *fakeLease) set(valid bool, gr Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.valid, l.grant = valid, gr
}

// clock is a settable wall clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func TestLeasedFailsWithoutAValidLease(t *testing.T) {
	c := &clock{now: Epoch.Add(time.Hour)}
	l := &fakeLease{}
	g := NewLeased(l, c.Now)
	if _, err := g.NextID(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("NextID with no lease: %v, want unavailable", err)
	}
	ms := Millis(c.Now())
	l.set(true, Grant{Node: 3, Term: 1, Floor: 0, Ceiling: ms + 10_000})
	id := next(t, g)
	if _, node, _ := Parts(id); node != 3 {
		t.Fatalf("node %d, want 3", node)
	}
	l.set(false, Grant{Node: 3, Term: 1, Floor: 0, Ceiling: ms + 10_000}) // validity over
	if _, err := g.NextID(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("NextID after the lease ran out: %v, want unavailable", err)
	}
}

func TestLeasedNeverPassesTheCeiling(t *testing.T) {
	c := &clock{now: Epoch.Add(time.Hour)}
	ms := Millis(c.Now())
	l := &fakeLease{}
	l.set(true, Grant{Node: 1, Term: 1, Floor: ms - 5000, Ceiling: ms + 2})
	g := NewLeased(l, c.Now)

	// Burn through the window by sequence overflow: 3 ms × 4096 ids fit
	// (ms, ms+1, ms+2), not one more.
	var last boxoffice.ID
	n := 0
	for {
		id, err := g.NextID()
		if err != nil {
			if boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
				t.Fatalf("NextID: %v, want unavailable", err)
			}
			break
		}
		if IDMillis(id) > ms+2 {
			t.Fatalf("id at %d ms, past the ceiling %d", IDMillis(id), ms+2)
		}
		if id <= last {
			t.Fatalf("not increasing")
		}
		last, n = id, n+1
	}
	if n != 3*(seqMask+1) {
		t.Fatalf("%d ids fit under the ceiling, want %d", n, 3*(seqMask+1))
	}
	if l.reached != ms+3 {
		t.Fatalf("Reached %d, want %d (the lease must learn what the generator needs)", l.reached, ms+3)
	}

	// The wall clock runs ahead of the reservation: refused, never passed.
	c.Add(time.Minute)
	if _, err := g.NextID(); boxoffice.ErrorCode(err) != boxoffice.EUNAVAILABLE {
		t.Fatalf("NextID past the ceiling: %v, want unavailable", err)
	}
	// A renewal reserves further: ids flow again, at the clock's time.
	now := Millis(c.Now())
	l.set(true, Grant{Node: 1, Term: 1, Floor: ms - 5000, Ceiling: now + 10_000})
	id := next(t, g)
	if IDMillis(id) != now || id <= last {
		t.Fatalf("after the renewal: id at %d ms (want %d), increasing %v", IDMillis(id), now, id > last)
	}
}

func TestLeasedNewTermStartsAboveTheFloor(t *testing.T) {
	c := &clock{now: Epoch.Add(time.Hour)}
	ms := Millis(c.Now())
	l := &fakeLease{}
	// The previous holder of node 5 reserved up to a minute ahead of this
	// process's clock (its clock was ahead, or ours was stepped back).
	floor := ms + 60_000
	l.set(true, Grant{Node: 5, Term: 1, Floor: floor, Ceiling: floor + 10_000})
	g := NewLeased(l, c.Now)
	for range 10_000 {
		id := next(t, g)
		if IDMillis(id) <= floor {
			t.Fatalf("id at %d ms, not above the floor %d", IDMillis(id), floor)
		}
	}
	// Lost, and taken again as node 2 whose floor is below our last id:
	// ids keep increasing and stay above the new floor.
	last := next(t, g)
	l.set(true, Grant{Node: 2, Term: 2, Floor: ms, Ceiling: floor + 20_000})
	id := next(t, g)
	if _, node, _ := Parts(id); node != 2 || id <= last || IDMillis(id) <= IDMillis(last) {
		t.Fatalf("after a new term: node %d, id %d after %d", node, id, last)
	}
	// The same node again in a new term: strictly above its floor even
	// with the floor exactly at our last millisecond.
	last = next(t, g)
	l.set(true, Grant{Node: 2, Term: 3, Floor: IDMillis(last), Ceiling: IDMillis(last) + 10})
	if id := next(t, g); IDMillis(id) <= IDMillis(last) {
		t.Fatalf("same node, new term: id at %d ms, not above the floor %d", IDMillis(id), IDMillis(last))
	}
}

// TestOnDay moves ids minted over a day and more to one show day: each lands
// on that day (so in its month's range), keeps its node and sequence, and
// ids minted at different times of day stay distinct.
func TestOnDay(t *testing.T) {
	show := time.Date(2029, 2, 28, 23, 30, 0, 0, time.UTC)
	dayStart := time.Date(2029, 2, 28, 0, 0, 0, 0, time.UTC)
	clock := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	g, err := New(7, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	seen := map[boxoffice.ID]time.Time{}
	for range 5000 {
		clock = clock.Add(17*time.Second + 3*time.Millisecond) // about a day in all
		id := next(t, g)
		moved := OnDay(id, show)
		at, node, seq := Parts(moved)
		_, wantNode, wantSeq := Parts(id)
		if at.Before(dayStart) || !at.Before(dayStart.Add(24*time.Hour)) {
			t.Fatalf("OnDay(%d minted at %s) is at %s, not on %s", id, clock, at, dayStart.Format(time.DateOnly))
		}
		if node != wantNode || seq != wantSeq {
			t.Fatalf("OnDay changed node/seq: %d/%d, want %d/%d", node, seq, wantNode, wantSeq)
		}
		if prev, ok := seen[moved]; ok {
			t.Fatalf("ids minted at %s and %s both became %d", prev, clock, moved)
		}
		seen[moved] = clock
	}
}
