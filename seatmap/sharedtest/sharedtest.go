// Package sharedtest is the contract suite of seatmap.Shared, the seat
// map's snapshot store that every node sees: every implementation
// (redis.Snapshots on one server and on a cluster, inmem.Snapshots) runs
// Run and passes it.
//
//	func TestSnapshotsContract(t *testing.T) {
//		sharedtest.Run(t, func(t *testing.T) seatmap.Shared { return inmem.NewSnapshots(nil) })
//	}
//
// The suite runs on the real clock: expiry is checked with short TTLs,
// polling until the value is gone. It never asserts how soon that is, only
// that a value is there while its TTL surely has not run out (a read that
// returned before the TTL, counted from before the store) and that it
// goes in the end. Every subtest uses fresh random event ids, so the
// suite can share a server with other runs.
//
// Pinned here beyond the doc comments (every implementation keeps them):
//   - a Peek of n <= 0 bytes returns no bytes (nil or empty) and no error;
//   - a store replaces the value and its TTL, longer or shorter;
//   - values are bytes, any bytes, up to several MB, stored and returned
//     as copies: changing the slice given to StoreSnapshot, or one that
//     Load or Peek returned, changes nothing stored;
//   - concurrent stores and loads of one event never mix two values;
//   - a store that also keeps statuses (seatmap.SharedStatuses) keeps
//     them apart from the snapshot, with their own TTL.
package sharedtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/seatmap"
)

// Run runs the whole contract, one fresh store per subtest.
func Run(t *testing.T, newShared func(t *testing.T) seatmap.Shared) {
	specs := []struct {
		name string
		test func(t *testing.T, s seatmap.Shared)
	}{
		{"NothingStored", testNothing},
		{"StoreThenLoad", testStoreLoad},
		{"Peek", testPeek},
		{"Overwrite", testOverwrite},
		{"Expiry", testExpiry},
		{"OverwriteRenewsTTL", testRenew},
		{"OverwriteShortensTTL", testShorten},
		{"EventsApart", testEventsApart},
		{"LargeValue", testLarge},
		{"Copies", testCopies},
		{"Concurrent", testConcurrent},
		{"Statuses", testStatuses},
	}
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) { s.test(t, newShared(t)) })
	}
}

const (
	// long is the TTL of values a test does not let expire.
	long = time.Minute
	// short is the TTL of those it does.
	short = 300 * time.Millisecond
	// patience bounds the wait for an expiry: far beyond short, so that
	// only a value that never expires runs into it.
	patience = 30 * time.Second
)

func newID() boxoffice.ID { return boxoffice.ID(rand.Int64N(1<<62) + 1) }

// value returns n bytes that begin with a header naming tag, then every
// byte value (zeros, 0xff, invalid UTF-8) in a pattern of seed.
func value(tag string, seed byte, n int) []byte {
	b := make([]byte, n)
	h := fmt.Appendf(nil, "BOSM-%s-\x00\xff", tag)
	for i := range b {
		if i < len(h) {
			b[i] = h[i]
		} else {
			b[i] = byte(i*7) ^ seed
		}
	}
	return b
}

var ctx = context.Background()

func store(t *testing.T, s seatmap.Shared, event boxoffice.ID, b []byte, ttl time.Duration) {
	t.Helper()
	if err := s.StoreSnapshot(ctx, event, b, ttl); err != nil {
		t.Fatalf("StoreSnapshot(event %d, %d bytes, %v) = %v", event, len(b), ttl, err)
	}
}

func load(t *testing.T, s seatmap.Shared, event boxoffice.ID) []byte {
	t.Helper()
	b, err := s.LoadSnapshot(ctx, event)
	if err != nil {
		t.Fatalf("LoadSnapshot(event %d) = %v", event, err)
	}
	return b
}

func peek(t *testing.T, s seatmap.Shared, event boxoffice.ID, n int) []byte {
	t.Helper()
	b, err := s.PeekSnapshot(ctx, event, n)
	if err != nil {
		t.Fatalf("PeekSnapshot(event %d, %d) = %v", event, n, err)
	}
	return b
}

// wantLoad asserts that event's value is want.
func wantLoad(t *testing.T, s seatmap.Shared, event boxoffice.ID, want []byte) {
	t.Helper()
	if got := load(t, s, event); !bytes.Equal(got, want) {
		t.Errorf("LoadSnapshot(event %d) = %s, want %s", event, describe(got), describe(want))
	}
}

// wantNone asserts that event has no value: nil from Load and Peek.
func wantNone(t *testing.T, s seatmap.Shared, event boxoffice.ID) {
	t.Helper()
	if got := load(t, s, event); got != nil {
		t.Errorf("LoadSnapshot(event %d) = %s, want nil", event, describe(got))
	}
	if got := peek(t, s, event, 28); got != nil {
		t.Errorf("PeekSnapshot(event %d, 28) = %s, want nil", event, describe(got))
	}
}

func describe(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) <= 40 {
		return fmt.Sprintf("%d bytes %q", len(b), b)
	}
	return fmt.Sprintf("%d bytes %q...", len(b), b[:40])
}

// waitGone polls until event has no value, failing after patience.
func waitGone(t *testing.T, s seatmap.Shared, event boxoffice.ID) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for load(t, s, event) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("event %d's value still there %v after its store", event, patience)
		}
		time.Sleep(short / 10)
	}
}

// testNothing: an event never stored has no snapshot: nil, no error.
func testNothing(t *testing.T, s seatmap.Shared) {
	event := newID()
	wantNone(t, s, event)
	for _, n := range []int{0, 1, 28, 1 << 20} {
		if got := peek(t, s, event, n); got != nil {
			t.Errorf("PeekSnapshot(nothing stored, %d) = %s, want nil", n, describe(got))
		}
	}
}

// testStoreLoad: Load returns the bytes stored, exactly.
func testStoreLoad(t *testing.T, s seatmap.Shared) {
	for _, n := range []int{1, 28, 100, 64 << 10} {
		event := newID()
		v := value("load", byte(n), n)
		store(t, s, event, v, long)
		wantLoad(t, s, event, v)
		wantLoad(t, s, event, v) // a load leaves it there
	}
}

// testPeek: Peek returns the first n bytes, all of them when n is larger,
// none when n is zero or less.
func testPeek(t *testing.T, s seatmap.Shared) {
	event := newID()
	v := value("peek", 3, 1000)
	store(t, s, event, v, long)
	for _, n := range []int{1, 4, 27, 28, 29, 999, 1000, 1001, 4096, 1 << 30} {
		if got, want := peek(t, s, event, n), v[:min(n, len(v))]; !bytes.Equal(got, want) {
			t.Errorf("PeekSnapshot(%d bytes stored, %d) = %s, want %s", len(v), n, describe(got), describe(want))
		}
	}
	for _, n := range []int{0, -1} {
		if got := peek(t, s, event, n); len(got) != 0 {
			t.Errorf("PeekSnapshot(%d) = %s, want no bytes", n, describe(got))
		}
	}
	// A peek leaves the value whole.
	wantLoad(t, s, event, v)
}

// testOverwrite: a store replaces the value, shorter or longer: no byte
// of the one before is left.
func testOverwrite(t *testing.T, s seatmap.Shared) {
	event := newID()
	first, shorter, longer := value("first", 1, 5000), value("second", 2, 40), value("third", 3, 9000)
	store(t, s, event, first, long)
	store(t, s, event, shorter, long)
	wantLoad(t, s, event, shorter)
	if got := peek(t, s, event, len(first)); !bytes.Equal(got, shorter) {
		t.Errorf("PeekSnapshot(%d) after a shorter store = %s, want the %d bytes of it", len(first), describe(got), len(shorter))
	}
	store(t, s, event, longer, long)
	wantLoad(t, s, event, longer)
	if got := peek(t, s, event, 28); !bytes.Equal(got, longer[:28]) {
		t.Errorf("PeekSnapshot(28) after a longer store = %s, want %s", describe(got), describe(longer[:28]))
	}
}

// loadBefore loads event's value and reports whether the load returned
// before deadline: only then must the value be there.
func loadBefore(t *testing.T, s seatmap.Shared, event boxoffice.ID, deadline time.Time) ([]byte, bool) {
	t.Helper()
	b := load(t, s, event)
	return b, time.Now().Before(deadline)
}

// testExpiry: a value is there until its TTL runs out, then gone for
// Load and Peek alike; a value of another event with a long TTL stays.
func testExpiry(t *testing.T, s seatmap.Shared) {
	event, other := newID(), newID()
	v := value("expiry", 4, 500)
	store(t, s, other, v, long)
	start := time.Now()
	store(t, s, event, v, short)
	if got, early := loadBefore(t, s, event, start.Add(short)); early && !bytes.Equal(got, v) {
		t.Errorf("LoadSnapshot before its TTL = %s, want the value stored", describe(got))
	} else if !early {
		t.Logf("the load came after the TTL (%v); not checked", short)
	}
	if got := peek(t, s, event, 28); time.Since(start) < short && !bytes.Equal(got, v[:28]) {
		t.Errorf("PeekSnapshot before its TTL = %s, want the first 28 bytes stored", describe(got))
	}
	waitGone(t, s, event)
	wantNone(t, s, event)
	wantLoad(t, s, other, v)
}

// testRenew: a store with a long TTL over one with a short TTL keeps the
// value past the first TTL. A twin event stored with the short TTL at the
// same time tells when that has passed.
func testRenew(t *testing.T, s seatmap.Shared) {
	event, twin := newID(), newID()
	first, second := value("first", 5, 300), value("second", 6, 200)
	store(t, s, event, first, short)
	store(t, s, twin, first, short)
	store(t, s, event, second, long)
	waitGone(t, s, twin) // stored after event's first value, so it expires after it
	wantLoad(t, s, event, second)
}

// testShorten: a store with a short TTL over one with a long TTL expires
// after the short one.
func testShorten(t *testing.T, s seatmap.Shared) {
	event := newID()
	first, second := value("first", 7, 300), value("second", 8, 200)
	store(t, s, event, first, long)
	start := time.Now()
	store(t, s, event, second, short)
	if got, early := loadBefore(t, s, event, start.Add(short)); early && !bytes.Equal(got, second) {
		t.Errorf("LoadSnapshot before the new TTL = %s, want the second value", describe(got))
	}
	waitGone(t, s, event)
	wantNone(t, s, event)
}

// testEventsApart: each event has its own value and TTL: storing,
// overwriting or expiring one changes nothing of another.
func testEventsApart(t *testing.T, s seatmap.Shared) {
	a, b, c, d := newID(), newID(), newID(), newID()
	va, vb, vd := value("a", 9, 300), value("b", 10, 301), value("d", 11, 302)
	store(t, s, a, va, long)
	store(t, s, b, vb, long)
	wantLoad(t, s, a, va)
	wantLoad(t, s, b, vb)
	wantNone(t, s, c)
	if got := peek(t, s, b, 28); !bytes.Equal(got, vb[:28]) {
		t.Errorf("PeekSnapshot(b, 28) = %s, want b's", describe(got))
	}

	va2 := value("a2", 12, 100)
	store(t, s, a, va2, long)
	wantLoad(t, s, a, va2)
	wantLoad(t, s, b, vb)

	store(t, s, d, vd, short)
	waitGone(t, s, d)
	wantLoad(t, s, a, va2)
	wantLoad(t, s, b, vb)

	// Neighbouring ids are different events too.
	n := newID()
	store(t, s, n, va, long)
	store(t, s, n+1, vb, long)
	wantLoad(t, s, n, va)
	wantLoad(t, s, n+1, vb)
	wantNone(t, s, n-1)
}

// testLarge: a snapshot of a large venue, a few MB of any bytes, is
// stored and returned whole, and its header can be peeked alone.
func testLarge(t *testing.T, s seatmap.Shared) {
	event := newID()
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]byte, 4<<20+123)
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	copy(v, "BOSM")
	store(t, s, event, v, long)
	if got := load(t, s, event); !bytes.Equal(got, v) {
		t.Fatalf("LoadSnapshot of a %d-byte value = %s", len(v), describe(got))
	}
	if got := peek(t, s, event, 28); !bytes.Equal(got, v[:28]) {
		t.Errorf("PeekSnapshot(28) of a large value = %s, want %s", describe(got), describe(v[:28]))
	}
	if got := peek(t, s, event, len(v)+1); !bytes.Equal(got, v) {
		t.Errorf("PeekSnapshot(%d) of a %d-byte value = %s", len(v)+1, len(v), describe(got))
	}
	// And replaced by another large one.
	w := bytes.Clone(v)
	for i := range w {
		w[i] ^= 0x5a
	}
	store(t, s, event, w, long)
	if got := load(t, s, event); !bytes.Equal(got, w) {
		t.Fatalf("LoadSnapshot after replacing a large value = %s", describe(got))
	}
}

// testCopies: the store keeps the bytes as they were stored, whatever
// the caller later does with its slices.
func testCopies(t *testing.T, s seatmap.Shared) {
	event := newID()
	v := value("copies", 13, 200)
	want := bytes.Clone(v)
	store(t, s, event, v, long)
	for i := range v {
		v[i] = 'x'
	}
	wantLoad(t, s, event, want)
	got := load(t, s, event)
	for i := range got {
		got[i] = 'y'
	}
	wantLoad(t, s, event, want)
	p := peek(t, s, event, 50)
	for i := range p {
		p[i] = 'z'
	}
	wantLoad(t, s, event, want)
	// Appending to a peek must not write into the stored value either.
	p = append(p[:10], bytes.Repeat([]byte{'w'}, 100)...)
	if len(p) != 110 {
		t.Fatalf("append gave %d bytes", len(p))
	}
	wantLoad(t, s, event, want)
}

// testConcurrent: while writers store and readers load one event, every
// load returns one of the stored values whole (or nil before the first),
// and every peek the head of one.
func testConcurrent(t *testing.T, s seatmap.Shared) {
	event := newID()
	const writers, readers, rounds = 4, 4, 30
	values := make([][]byte, writers)
	for i := range values {
		// Different lengths and contents: a mix of two is caught.
		values[i] = value(fmt.Sprintf("w%d", i), byte(20+i), 20_000+i*997)
	}
	known := func(b []byte) bool {
		for _, v := range values {
			if bytes.Equal(b, v) {
				return true
			}
		}
		return false
	}
	known28 := func(b []byte) bool {
		for _, v := range values {
			if bytes.Equal(b, v[:28]) {
				return true
			}
		}
		return false
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for range rounds {
				if err := s.StoreSnapshot(ctx, event, values[i], long); err != nil {
					t.Errorf("StoreSnapshot = %v", err)
					return
				}
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for range rounds {
				b, err := s.LoadSnapshot(ctx, event)
				if err != nil {
					t.Errorf("LoadSnapshot = %v", err)
					return
				}
				if b != nil && !known(b) {
					t.Errorf("LoadSnapshot during concurrent stores = %s, none of the values stored", describe(b))
					return
				}
				p, err := s.PeekSnapshot(ctx, event, 28)
				if err != nil {
					t.Errorf("PeekSnapshot = %v", err)
					return
				}
				if p != nil && !known28(p) {
					t.Errorf("PeekSnapshot during concurrent stores = %s, the head of none of the values stored", describe(p))
					return
				}
			}
		})
	}
	wg.Wait()
	if b := load(t, s, event); !known(b) {
		t.Errorf("after concurrent stores LoadSnapshot = %s, want one of the values stored", describe(b))
	}
}

// testStatuses: a store that also keeps an event's statuses
// (seatmap.SharedStatuses) keeps them apart from its snapshot, replaces
// them, returns copies and drops them after their TTL. A store without
// them is skipped.
func testStatuses(t *testing.T, s seatmap.Shared) {
	ss, ok := s.(seatmap.SharedStatuses)
	if !ok {
		t.Skip("this store keeps no statuses")
	}
	ev := newID()
	loadSt := func() []byte {
		t.Helper()
		b, err := ss.LoadStatuses(ctx, ev)
		if err != nil {
			t.Fatalf("LoadStatuses(event %d) = %v", ev, err)
		}
		return b
	}
	storeSt := func(b []byte, ttl time.Duration) {
		t.Helper()
		if err := ss.StoreStatuses(ctx, ev, b, ttl); err != nil {
			t.Fatalf("StoreStatuses(event %d) = %v", ev, err)
		}
	}
	if got := loadSt(); got != nil {
		t.Fatalf("nothing stored: LoadStatuses = %s, want nil", describe(got))
	}
	snap, st := value("snap", 1, 500), value("statuses", 2, 70_000)
	store(t, s, ev, snap, long)
	if got := loadSt(); got != nil {
		t.Fatalf("a snapshot stored: LoadStatuses = %s, want nil", describe(got))
	}
	storeSt(st, long)
	if got := loadSt(); !bytes.Equal(got, st) {
		t.Fatalf("LoadStatuses = %s, want %s", describe(got), describe(st))
	}
	wantLoad(t, s, ev, snap) // the snapshot untouched
	got := loadSt()
	got[0] ^= 0xff
	if again := loadSt(); !bytes.Equal(again, st) {
		t.Fatalf("changing a loaded copy changed what is stored: %s", describe(again))
	}
	newer := value("statuses", 3, 1_000)
	storeSt(newer, short)
	if got := loadSt(); !bytes.Equal(got, newer) {
		t.Fatalf("after a second store: %s, want %s", describe(got), describe(newer))
	}
	deadline := time.Now().Add(patience)
	for loadSt() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("statuses stored for %v still there after %v", short, patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantLoad(t, s, ev, snap) // still there: the statuses' expiry is their own
}
