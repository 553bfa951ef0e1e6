package redis

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/rueidis"
)

// Snapshots is the seat map's shared cache (seatmap.Shared) on Redis: one
// key per event, <prefix>seatmap:{<event>}, holding the encoded snapshot
// with a PX expiry. Nodes read its header with GETRANGE to see whether it
// is newer than their own copy before they fetch the whole value. The
// fresh reads of an event's statuses (seatmap.SharedStatuses) are another
// key, <prefix>seatstatus:{<event>}, in the same slot.
type Snapshots struct {
	client rueidis.Client
	prefix string

	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
}

// NewSnapshots returns Snapshots storing its keys under prefix, which must
// not contain '{' or '}' (NewSnapshots panics if it does).
func NewSnapshots(client rueidis.Client, prefix string) *Snapshots {
	checkPrefix(prefix)
	return &Snapshots{client: client, prefix: prefix}
}

func (s *Snapshots) key(eventID boxoffice.ID) string {
	return s.prefix + "seatmap:{" + eventID.String() + "}"
}

func (s *Snapshots) statusesKey(eventID boxoffice.ID) string {
	return s.prefix + "seatstatus:{" + eventID.String() + "}"
}

func (s *Snapshots) call(ctx context.Context, cmd rueidis.Completed) ([]byte, error) {
	t := s.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	b, err := s.client.Do(ctx, cmd).AsBytes()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, boxoffice.Unavailable("the seat-map cache", err)
	}
	if len(b) == 0 {
		return nil, nil // GETRANGE of a missing key
	}
	return b, nil
}

// PeekSnapshot returns the first n bytes of the event's snapshot, nil when
// there is none.
func (s *Snapshots) PeekSnapshot(ctx context.Context, eventID boxoffice.ID, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	return s.call(ctx, s.client.B().Getrange().Key(s.key(eventID)).Start(0).End(int64(n-1)).Build())
}

// LoadSnapshot returns the event's snapshot, nil when there is none.
func (s *Snapshots) LoadSnapshot(ctx context.Context, eventID boxoffice.ID) ([]byte, error) {
	return s.call(ctx, s.client.B().Get().Key(s.key(eventID)).Build())
}

// StoreSnapshot stores b as the event's snapshot for ttl.
func (s *Snapshots) StoreSnapshot(ctx context.Context, eventID boxoffice.ID, b []byte, ttl time.Duration) error {
	return s.store(ctx, s.key(eventID), b, ttl)
}

// LoadStatuses returns the event's shared statuses, nil when there are
// none.
func (s *Snapshots) LoadStatuses(ctx context.Context, eventID boxoffice.ID) ([]byte, error) {
	return s.call(ctx, s.client.B().Get().Key(s.statusesKey(eventID)).Build())
}

// StoreStatuses stores b as the event's shared statuses for ttl.
func (s *Snapshots) StoreStatuses(ctx context.Context, eventID boxoffice.ID, b []byte, ttl time.Duration) error {
	return s.store(ctx, s.statusesKey(eventID), b, ttl)
}

func (s *Snapshots) store(ctx context.Context, key string, b []byte, ttl time.Duration) error {
	ms := max(int64(ttl/time.Millisecond), 1)
	_, err := s.call(ctx, s.client.B().Set().Key(key).Value(rueidis.BinaryString(b)).PxMilliseconds(ms).Build())
	return err
}
