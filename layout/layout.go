// Package layout is an event's seat layout, expanded and indexed, and a
// bounded cache of the layouts of the events in use. Events are immutable
// once created, so a cached layout never goes stale. The use cases (sale)
// and the seat map (seatmap) both read layouts from one Cache, which the
// node builds first and hands to each: neither builds the other.
package layout

import (
	"context"

	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
)

// Layout is an event with its seats expanded and indexed.
type Layout struct {
	Event *boxoffice.Event
	Seats []boxoffice.Seat
	index map[string]boxoffice.Seat
	order map[string]int // seat id → its place in Seats
	// seatsPerRow of each section, by name: where a row's centre is.
	seatsPerRow map[string]int
}

// Of expands and indexes e's seats.
func Of(e *boxoffice.Event) *Layout {
	seats := e.Seats()
	idx := make(map[string]boxoffice.Seat, len(seats))
	order := make(map[string]int, len(seats))
	for i, st := range seats {
		idx[st.ID] = st
		order[st.ID] = i
	}
	perRow := make(map[string]int, len(e.Sections))
	for _, sec := range e.Sections {
		perRow[sec.Name] = sec.SeatsPerRow
	}
	return &Layout{Event: e, Seats: seats, index: idx, order: order, seatsPerRow: perRow}
}

// Seat returns a seat of the layout by id.
func (l *Layout) Seat(id string) (boxoffice.Seat, bool) {
	s, ok := l.index[id]
	return s, ok
}

// Order returns the seat's place in Seats (layout order), -1 for a seat
// the layout has not.
func (l *Layout) Order(id string) int {
	if i, ok := l.order[id]; ok {
		return i
	}
	return -1
}

// SeatsPerRow returns the seats in each row of the named section, 0 for
// a section the layout has not.
func (l *Layout) SeatsPerRow(section string) int { return l.seatsPerRow[section] }

// SeatIDs returns every seat id in layout order.
func (l *Layout) SeatIDs() []string {
	ids := make([]string, len(l.Seats))
	for i, s := range l.Seats {
		ids[i] = s.ID
	}
	return ids
}

// Select checks a selection of seat ids against the layout
// (boxoffice.ValidateSeatSelection) and returns its seats.
func (l *Layout) Select(seatIDs []string, limit int) ([]boxoffice.Seat, error) {
	return boxoffice.ValidateSeatSelection(l.index, seatIDs, limit)
}

// Source reads an event: the store.
type Source interface {
	Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error)
}

// Cache holds the layouts of the events used last. Create it with
// NewCache.
type Cache struct {
	src Source
	lru *lru.Cache[boxoffice.ID, *Layout]
	sf  singleflight.Group
}

// NewCache returns a cache of at most maxEvents layouts read from src;
// the least recently used goes when one more is needed.
func NewCache(src Source, maxEvents int) *Cache {
	return &Cache{src: src, lru: lru.New[boxoffice.ID, *Layout](max(maxEvents, 1))}
}

// Get returns the event's layout, from the cache when it can; concurrent
// misses for one event read the store once. ENOTFOUND for an unknown
// event.
func (c *Cache) Get(ctx context.Context, id boxoffice.ID) (*Layout, error) {
	if l, ok := c.lru.Get(id); ok {
		return l, nil
	}
	v, err, _ := c.sf.Do(id.String(), func() (any, error) {
		e, err := c.src.Event(ctx, id)
		if err != nil {
			return nil, err
		}
		l := Of(e)
		c.lru.Add(id, l)
		return l, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Layout), nil
}

// Add caches the layout of an event just created.
func (c *Cache) Add(l *Layout) { c.lru.Add(l.Event.ID, l) }

// LayoutSeats returns an event's seats in layout order (seatmap.Layouts).
func (c *Cache) LayoutSeats(ctx context.Context, id boxoffice.ID) ([]boxoffice.Seat, error) {
	l, err := c.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.Seats, nil
}

// Len returns the number of layouts cached.
func (c *Cache) Len() int { return c.lru.Len() }
