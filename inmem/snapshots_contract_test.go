package inmem

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/seatmap/sharedtest"
)

var _ seatmap.Shared = (*Snapshots)(nil)

func TestSnapshotsContract(t *testing.T) {
	sharedtest.Run(t, func(t *testing.T) seatmap.Shared { return NewSnapshots(nil) })
}

// The bound: a store past MaxBytes drops the values closest to their
// expiry first, one larger than the bound is refused and drops its
// event's older value, and expired values make room.
func TestSnapshotsBound(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := NewSnapshots(clock.Now)
	s.MaxBytes = 1000
	val := func(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
	store := func(id boxoffice.ID, b []byte, ttl time.Duration) {
		t.Helper()
		if err := s.StoreSnapshot(ctx, id, b, ttl); err != nil {
			t.Fatalf("StoreSnapshot(%d, %d bytes) = %v", id, len(b), err)
		}
	}
	has := func(id boxoffice.ID, want []byte) {
		t.Helper()
		got, err := s.LoadSnapshot(ctx, id)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("LoadSnapshot(%d) = %d bytes, %v; want %d bytes", id, len(got), err, len(want))
		}
	}
	store(1, val('a', 400), 3*time.Minute)
	store(2, val('b', 400), time.Minute) // expires first
	store(3, val('c', 400), 2*time.Minute)
	has(1, val('a', 400))
	has(2, nil)
	has(3, val('c', 400))
	if s.size != 800 {
		t.Errorf("size = %d, want 800", s.size)
	}

	// Replacing a value counts its new size, not both.
	store(3, val('C', 600), 2*time.Minute)
	has(1, val('a', 400))
	has(3, val('C', 600))

	// Too large for the store: refused, and the older value is stale.
	if err := s.StoreSnapshot(ctx, 1, val('x', 1001), time.Minute); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
		t.Errorf("StoreSnapshot(1001 bytes, bound 1000) = %v, want EINVALID", err)
	}
	has(1, nil)

	// Expired values make room without evicting live ones.
	clock.Advance(2*time.Minute + time.Second)
	has(3, nil)
	store(4, val('d', 1000), time.Minute)
	has(4, val('d', 1000))
	if s.size != 1000 || len(s.snaps) != 1 {
		t.Errorf("size = %d in %d values, want 1000 in 1", s.size, len(s.snaps))
	}

	// An empty value or a TTL that is not positive leaves nothing.
	store(4, nil, time.Minute)
	has(4, nil)
	store(5, val('e', 10), 0)
	has(5, nil)
	if s.size != 0 {
		t.Errorf("size = %d with nothing stored", s.size)
	}
}

// Expiry on the store's clock, to the nanosecond: there until its TTL,
// gone at it.
func TestSnapshotsClock(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := NewSnapshots(clock.Now)
	if err := s.StoreSnapshot(ctx, 7, []byte("header and body"), time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second - time.Nanosecond)
	if b, _ := s.PeekSnapshot(ctx, 7, 6); string(b) != "header" {
		t.Errorf("a nanosecond before its TTL: peek %q", b)
	}
	clock.Advance(time.Nanosecond)
	if b, _ := s.LoadSnapshot(ctx, 7); b != nil {
		t.Errorf("at its TTL: load %q, want nil", b)
	}
}

// Many events stored, loaded and replaced at once (run with -race).
func TestSnapshotsManyEvents(t *testing.T) {
	ctx := context.Background()
	s := NewSnapshots(nil)
	s.MaxBytes = 64 << 10
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				id := boxoffice.ID(g*1000 + i%50)
				b := bytes.Repeat([]byte{byte(id)}, 100+i%7)
				if err := s.StoreSnapshot(ctx, id, b, time.Minute); err != nil {
					t.Error(err)
					return
				}
				if got, _ := s.LoadSnapshot(ctx, id); got != nil && (len(got) < 100 || got[0] != byte(id)) {
					t.Errorf("event %d: a value of %d bytes not its own", id, len(got))
					return
				}
			}
		})
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size > s.MaxBytes {
		t.Errorf("size %d past the bound %d", s.size, s.MaxBytes)
	}
	var sum int64
	for _, e := range s.snaps {
		sum += int64(len(e.b))
	}
	if sum != s.size {
		t.Errorf("size %d, values hold %d", s.size, sum)
	}
}
