package seatmap

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
)

// Shared is a snapshot store every node sees (Redis in production). With
// one, a rebuild made by any node serves the whole fleet until its TTL runs
// out: a hot event costs one rebuild per TTL, not one per node, and every
// node answers with the same bytes and so the same strong ETag, which a CDN
// in front of several nodes needs for its 304s.
type Shared interface {
	// PeekSnapshot returns the first n bytes of the event's stored
	// snapshot, nil when there is none.
	PeekSnapshot(ctx context.Context, eventID boxoffice.ID, n int) ([]byte, error)
	// LoadSnapshot returns the stored snapshot, nil when there is none.
	LoadSnapshot(ctx context.Context, eventID boxoffice.ID) ([]byte, error)
	// StoreSnapshot stores b as the event's snapshot, dropped after ttl.
	StoreSnapshot(ctx context.Context, eventID boxoffice.ID, b []byte, ttl time.Duration) error
}

// SharedStatuses is what a Shared may also keep: the fresh reads of an
// event's statuses (Cache.Statuses, the inventory's once a second), so
// that one node reads the event's holds and sold seats for the fleet and
// the others load its reading. Without it every node reads its own: on
// Redis, 70 MGETs of 1,000 keys for a 70,000-seat event, about 75 ms of
// Redis CPU, per node and second (docs/benchmarks.md).
type SharedStatuses interface {
	// LoadStatuses returns the stored statuses, nil when there are none.
	LoadStatuses(ctx context.Context, eventID boxoffice.ID) ([]byte, error)
	// StoreStatuses stores b as the event's statuses, dropped after ttl.
	StoreStatuses(ctx context.Context, eventID boxoffice.ID, b []byte, ttl time.Duration) error
}

// Share makes the cache read and write snapshots through shared and take
// the fleet-wide right to rebuild an event as a lease, so that one node
// rebuilds while the others keep serving; and, when shared is also a
// SharedStatuses, share the fresh reads of statuses the same way. Call it
// before the first Get.
func (c *Cache) Share(shared Shared, leases boxoffice.Leases) {
	c.shared, c.leases = shared, leases
	c.sharedStatuses, _ = shared.(SharedStatuses)
}

// Encoded statuses: a header, then a byte a seat in layout order.
//
//	magic "BOST" | version 1 | 3 zero | read at (unix ns, 8) | event (8)
const statusesHeaderLen = 24

var statusesMagic = []byte("BOST")

func encodeStatuses(eventID boxoffice.ID, at time.Time, st layout.Statuses) []byte {
	b := make([]byte, statusesHeaderLen, statusesHeaderLen+len(st))
	copy(b, statusesMagic)
	b[4] = encodeVersion
	binary.BigEndian.PutUint64(b[8:], uint64(at.UnixNano()))
	binary.BigEndian.PutUint64(b[16:], uint64(eventID))
	for _, x := range st {
		b = append(b, byte(x))
	}
	return b
}

// decodeStatuses reads encoded statuses of eventID; ok is false for
// anything else, or a status that is none of the four.
func decodeStatuses(b []byte, eventID boxoffice.ID) (at time.Time, st layout.Statuses, ok bool) {
	if len(b) < statusesHeaderLen || !bytes.Equal(b[:4], statusesMagic) || b[4] != encodeVersion ||
		boxoffice.ID(binary.BigEndian.Uint64(b[16:])) != eventID {
		return time.Time{}, nil, false
	}
	st = make(layout.Statuses, len(b)-statusesHeaderLen)
	for i, x := range b[statusesHeaderLen:] {
		if st[i] = layout.Status(x); !st[i].Valid() {
			return time.Time{}, nil, false
		}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[8:]))), st, true
}

// Encoded snapshot: a fixed header that PeekSnapshot can read alone to tell
// whether the stored copy is newer than the one in hand, then the compact
// view and the gzipped map. The JSON and the ETags are derived from these.
//
//	magic "BOSM" | version 1 | flags (bit 0 degraded) | 2 zero | built at (unix ns, 8) | event (8) | len(compact) (4)
const (
	headerLen     = 28
	encodeVersion = 1
)

var magic = []byte("BOSM")

func encodeSnapshot(s *Snapshot) []byte {
	b := make([]byte, headerLen, headerLen+len(s.Compact)+len(s.Gzip))
	copy(b, magic)
	b[4] = encodeVersion
	if s.Degraded {
		b[5] = 1
	}
	binary.BigEndian.PutUint64(b[8:], uint64(s.BuiltAt.UnixNano()))
	binary.BigEndian.PutUint64(b[16:], uint64(s.EventID))
	binary.BigEndian.PutUint32(b[24:], uint32(len(s.Compact)))
	b = append(b, s.Compact...)
	return append(b, s.Gzip...)
}

// peekBuiltAt reads the build time of an encoded snapshot of eventID from
// its header; ok is false for anything else.
func peekBuiltAt(h []byte, eventID boxoffice.ID) (time.Time, bool) {
	if len(h) < headerLen || !bytes.Equal(h[:4], magic) || h[4] != encodeVersion ||
		boxoffice.ID(binary.BigEndian.Uint64(h[16:])) != eventID {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(h[8:]))), true
}

func decodeSnapshot(b []byte, eventID boxoffice.ID) (*Snapshot, error) {
	builtAt, ok := peekBuiltAt(b, eventID)
	if !ok {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "not an encoded seat map of event %d", eventID)
	}
	n := int(binary.BigEndian.Uint32(b[24:]))
	if len(b) < headerLen+n {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "encoded seat map cut short")
	}
	s := &Snapshot{EventID: eventID, BuiltAt: builtAt, Degraded: b[5]&1 != 0}
	// Copies: the caller's buffer may be reused.
	s.Compact = bytes.Clone(b[headerLen : headerLen+n])
	s.Gzip = bytes.Clone(b[headerLen+n:])
	var view struct {
		SeatCount int            `json:"seat_count"`
		Counts    map[string]int `json:"counts"`
		Runs      string         `json:"runs"`
	}
	if err := json.Unmarshal(s.Compact, &view); err != nil {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "encoded seat map: %v", err)
	}
	letters, err := DecodeRuns(view.Runs)
	if err != nil {
		return nil, err
	}
	if len(letters) != view.SeatCount {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "encoded seat map: %d statuses for %d seats", len(letters), view.SeatCount)
	}
	s.Statuses = make(layout.Statuses, len(letters))
	for i, l := range letters {
		s.Statuses[i] = layout.Status(l) // DecodeRuns let only the four letters through
	}
	s.Counts = view.Counts
	zr, err := gzip.NewReader(bytes.NewReader(s.Gzip))
	if err != nil {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "encoded seat map: %v", err)
	}
	if s.JSON, err = io.ReadAll(zr); err != nil {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "encoded seat map: %v", err)
	}
	s.ETag = etag(s.JSON)
	s.CompactETag = etag(s.Compact)
	return s, nil
}
