package inmem

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// DefaultSnapshotBytes is the bound of a Snapshots whose MaxBytes is zero.
const DefaultSnapshotBytes = 256 << 20

// Snapshots is the seat map's shared snapshot store (seatmap.Shared, and
// seatmap.SharedStatuses for the fresh reads of statuses) in
// process memory: for a single node, whose seat-map caches it lets share
// one copy of each event's snapshot, and for tests, several caches in one
// process standing for a fleet on one Redis. It keeps the semantics of
// redis.Snapshots and passes the same contract suite (seatmap/sharedtest):
// one value per event, dropped after its ttl; the stored bytes are copies.
//
// It is bounded: its values take at most MaxBytes in all. A store that
// would go past the bound first drops the values closest to their expiry;
// a value larger than the bound is refused, and its event's older value
// dropped. Expired values are dropped when read and at every store.
//
// It is safe for concurrent use, and never blocks on I/O, so it ignores
// the contexts it is given. The zero value is not usable; call
// NewSnapshots.
type Snapshots struct {
	// MaxBytes bounds the bytes of the values kept; zero means
	// DefaultSnapshotBytes. Set it before the first store.
	MaxBytes int64

	now func() time.Time

	mu    sync.Mutex
	snaps map[valueKey]snapshot
	size  int64 // sum of len(b) over snaps
}

// valueKey names a value: an event's snapshot, or its statuses
// (seatmap.SharedStatuses).
type valueKey struct {
	event    boxoffice.ID
	statuses bool
}

type snapshot struct {
	b       []byte
	expires time.Time
}

// NewSnapshots returns an empty store on the clock now (nil means
// time.Now).
func NewSnapshots(now func() time.Time) *Snapshots {
	if now == nil {
		now = time.Now
	}
	return &Snapshots{now: now, snaps: map[valueKey]snapshot{}}
}

// get returns the live value of k, dropping an expired one. The caller
// holds s.mu.
func (s *Snapshots) get(k valueKey) ([]byte, bool) {
	e, ok := s.snaps[k]
	if !ok {
		return nil, false
	}
	if !s.now().Before(e.expires) {
		s.drop(k)
		return nil, false
	}
	return e.b, true
}

// drop forgets k's value. The caller holds s.mu.
func (s *Snapshots) drop(k valueKey) {
	if e, ok := s.snaps[k]; ok {
		s.size -= int64(len(e.b))
		delete(s.snaps, k)
	}
}

// PeekSnapshot returns (a copy of) the first n bytes of the event's
// snapshot, nil when there is none or n is not positive.
func (s *Snapshots) PeekSnapshot(ctx context.Context, eventID boxoffice.ID, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.get(valueKey{event: eventID})
	if !ok {
		return nil, nil
	}
	return bytes.Clone(b[:min(n, len(b))]), nil
}

// LoadSnapshot returns (a copy of) the event's snapshot, nil when there is
// none.
func (s *Snapshots) LoadSnapshot(ctx context.Context, eventID boxoffice.ID) ([]byte, error) {
	return s.load(valueKey{event: eventID}), nil
}

// LoadStatuses returns (a copy of) the event's statuses, nil when there
// are none (seatmap.SharedStatuses).
func (s *Snapshots) LoadStatuses(ctx context.Context, eventID boxoffice.ID) ([]byte, error) {
	return s.load(valueKey{event: eventID, statuses: true}), nil
}

func (s *Snapshots) load(k valueKey) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.get(k)
	if !ok {
		return nil
	}
	return bytes.Clone(b)
}

// StoreSnapshot stores a copy of b as the event's snapshot for ttl,
// replacing the one before. An empty b, or a ttl that is not positive,
// leaves the event without a snapshot, as in Redis. A b larger than
// MaxBytes is refused (EINVALID).
func (s *Snapshots) StoreSnapshot(ctx context.Context, eventID boxoffice.ID, b []byte, ttl time.Duration) error {
	return s.store(valueKey{event: eventID}, b, ttl)
}

// StoreStatuses stores a copy of b as the event's statuses for ttl, as
// StoreSnapshot stores a snapshot (seatmap.SharedStatuses).
func (s *Snapshots) StoreStatuses(ctx context.Context, eventID boxoffice.ID, b []byte, ttl time.Duration) error {
	return s.store(valueKey{event: eventID, statuses: true}, b, ttl)
}

func (s *Snapshots) store(k valueKey, b []byte, ttl time.Duration) error {
	limit := s.MaxBytes
	if limit <= 0 {
		limit = DefaultSnapshotBytes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(k)
	if int64(len(b)) > limit {
		return boxoffice.Errorf(boxoffice.EINVALID, "a seat-map value of %d bytes exceeds the store's %d", len(b), limit)
	}
	if len(b) == 0 || ttl <= 0 {
		return nil
	}
	now := s.now()
	for id, e := range s.snaps {
		if !now.Before(e.expires) {
			s.drop(id)
		}
	}
	for s.size+int64(len(b)) > limit {
		// The value closest to its expiry goes first: it has the least
		// left to serve.
		var (
			first   valueKey
			expires time.Time
		)
		for id, e := range s.snaps {
			if expires.IsZero() || e.expires.Before(expires) {
				first, expires = id, e.expires
			}
		}
		s.drop(first)
	}
	s.snaps[k] = snapshot{b: bytes.Clone(b), expires: now.Add(ttl)}
	s.size += int64(len(b))
	return nil
}
