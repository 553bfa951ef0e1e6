// Package layout is an event's seat layout and a bounded cache of the
// layouts of the events in use. A layout is compact: it keeps the event
// and each section's geometry, and a seat's layout index, row and number
// are arithmetic on its section's (seats per row, row labels), so a
// cached layout costs O(sections), not O(seats). Events are immutable
// once created, so a cached layout never goes stale. The use cases (sale)
// and the seat map (seatmap) both read layouts from one Cache, which the
// node builds first and hands to each: neither builds the other.
package layout

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
)

// Layout is an event's seats in layout order (boxoffice.Event.Seats):
// section by section as the organiser listed them, row by row, seat by
// seat. It is immutable and safe for concurrent use. Create it with Of.
type Layout struct {
	Event    *boxoffice.Event
	sections []Section
	byName   map[string]int // section name → its index in sections
	n        int            // seats
	bytes    int64          // what the layout weighs (Bytes)
}

// Section is one section of a layout: the event's section and where its
// seats start in layout order. The seat at row r (1-based, labelled
// boxoffice.RowLabel(r)) and number k is at layout index
// First + (r-1)*SeatsPerRow + k-1.
type Section struct {
	boxoffice.Section
	// First is the layout index of the section's first seat (row A, 1).
	First int
}

// Len is the number of seats of the section.
func (s *Section) Len() int { return max(s.Rows, 0) * max(s.SeatsPerRow, 0) }

// SeatFeatures returns the features of the seat at row (1-based) and
// number: the section's Features["<row label>-<number>"], nil for none.
func (s *Section) SeatFeatures(row, number int) []boxoffice.SeatFeature {
	if len(s.Features) == 0 {
		return nil
	}
	var buf [32]byte
	b := append(buf[:0], rowLabel(row)...)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(number), 10)
	return s.Features[string(b)] // no allocation: a lookup by a []byte key
}

// Of makes e's layout. e must not change afterwards (events do not).
func Of(e *boxoffice.Event) *Layout {
	l := &Layout{Event: e, sections: make([]Section, len(e.Sections)), byName: make(map[string]int, len(e.Sections))}
	for k, sec := range e.Sections {
		l.sections[k] = Section{Section: sec, First: l.n}
		if _, dup := l.byName[sec.Name]; !dup {
			l.byName[sec.Name] = k
		}
		l.n += l.sections[k].Len()
	}
	l.bytes = l.weigh()
	return l
}

// Len is the number of seats of the layout.
func (l *Layout) Len() int { return l.n }

// Sections returns the layout's sections in layout order. The slice is
// the layout's own: do not modify it.
func (l *Layout) Sections() []Section { return l.sections }

// Locate returns where the seat at layout index i is: its section's index
// in Sections, its row (1-based) and its number. It panics unless
// 0 <= i < Len().
func (l *Layout) Locate(i int) (section, row, number int) {
	if i < 0 || i >= l.n {
		panic("layout: seat index " + strconv.Itoa(i) + " out of range [0, " + strconv.Itoa(l.n) + ")")
	}
	// The last section that starts at or before i: never an empty one,
	// since the next starts where it does.
	lo, hi := 1, len(l.sections)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); l.sections[m].First <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	k := lo - 1
	s := &l.sections[k]
	off := i - s.First
	return k, off/s.SeatsPerRow + 1, off%s.SeatsPerRow + 1
}

// At returns the seat at layout index i, exactly as e.Seats()[i]. It
// panics unless 0 <= i < Len().
func (l *Layout) At(i int) boxoffice.Seat {
	k, r, n := l.Locate(i)
	return l.seat(k, r, n, "")
}

// ID returns the id of the seat at layout index i (At(i).ID, without the
// rest). It panics unless 0 <= i < Len().
func (l *Layout) ID(i int) string {
	k, r, n := l.Locate(i)
	return boxoffice.SeatID(l.sections[k].Name, rowLabel(r), n)
}

// seat is the seat of section k at row r and number n; id, if not "", is
// its id already made.
func (l *Layout) seat(k, r, n int, id string) boxoffice.Seat {
	s := &l.sections[k]
	row := rowLabel(r)
	if id == "" {
		id = boxoffice.SeatID(s.Name, row, n)
	}
	return boxoffice.Seat{ID: id, Section: s.Name, Row: row, Number: n, PriceTier: s.PriceTier, PriceCents: s.PriceCents,
		Features: s.SeatFeatures(r, n)}
}

// Index returns the layout index of the seat with id "<section>-<row>-
// <number>", and false for an id that is no seat of the layout. Only the
// canonical id is a seat: "A-A-01" or "A-A-+1" is not "A-A-1".
func (l *Layout) Index(id string) (int, bool) {
	k, r, n, ok := l.parse(id)
	if !ok {
		return -1, false
	}
	s := &l.sections[k]
	return s.First + (r-1)*s.SeatsPerRow + n - 1, true
}

// parse splits a seat id into its section's index, its row and number,
// checking it is a canonical id of a seat of the layout.
func (l *Layout) parse(id string) (k, r, n int, ok bool) {
	name, rest, ok := strings.Cut(id, "-") // name is boxoffice.SectionOf(id)
	if !ok {
		return 0, 0, 0, false
	}
	if k, ok = l.byName[name]; !ok {
		return 0, 0, 0, false
	}
	row, num, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, 0, 0, false
	}
	s := &l.sections[k]
	if r = boxoffice.RowNumber(row); r < 1 || r > s.Rows || rowLabel(r) != row {
		return 0, 0, 0, false
	}
	// Atoi takes a sign and leading zeros: a canonical number has neither.
	if num == "" || num[0] < '1' || num[0] > '9' {
		return 0, 0, 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n > s.SeatsPerRow {
		return 0, 0, 0, false
	}
	return k, r, n, true
}

// Seat returns a seat of the layout by id.
func (l *Layout) Seat(id string) (boxoffice.Seat, bool) {
	k, r, n, ok := l.parse(id)
	if !ok {
		return boxoffice.Seat{}, false
	}
	return l.seat(k, r, n, id), true
}

// Order returns the seat's layout index, -1 for a seat the layout has
// not.
func (l *Layout) Order(id string) int {
	i, _ := l.Index(id)
	return i
}

// SeatsPerRow returns the seats in each row of the named section, 0 for
// a section the layout has not.
func (l *Layout) SeatsPerRow(section string) int {
	if k, ok := l.byName[section]; ok {
		return l.sections[k].SeatsPerRow
	}
	return 0
}

// SeatIDs returns every seat id in layout order, made anew. The ids
// share one allocation (the slice is another, whatever the number of
// seats): a caller that keeps a few of them long keeps a copy
// (strings.Clone), not the whole.
func (l *Layout) SeatIDs() []string {
	size := 0
	for _, s := range l.sections {
		if s.Len() == 0 {
			continue
		}
		size += s.Len() * (len(s.Name) + 2) // "<section>-" and "-"
		for r := 1; r <= s.Rows; r++ {
			size += len(rowLabel(r)) * s.SeatsPerRow
		}
		for n := 1; n <= s.SeatsPerRow; n++ {
			size += digits(n) * s.Rows
		}
	}
	buf := make([]byte, 0, size)
	for _, s := range l.sections {
		for r := 1; r <= s.Rows; r++ {
			row := rowLabel(r)
			for n := 1; n <= s.SeatsPerRow; n++ {
				buf = append(buf, s.Name...)
				buf = append(buf, '-')
				buf = append(buf, row...)
				buf = append(buf, '-')
				buf = strconv.AppendInt(buf, int64(n), 10)
			}
		}
	}
	ids := make([]string, l.n)
	if len(buf) == 0 {
		return ids
	}
	all := unsafe.String(&buf[0], len(buf)) // buf is not written again
	i, start := 0, 0
	for _, s := range l.sections {
		for r := 1; r <= s.Rows; r++ {
			prefix := len(s.Name) + len(rowLabel(r)) + 2
			for n := 1; n <= s.SeatsPerRow; n++ {
				end := start + prefix + digits(n)
				ids[i], i, start = all[start:end], i+1, end
			}
		}
	}
	return ids
}

// digits is the length of n in decimal, n >= 1.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// Seats returns every seat in layout order (e.Seats()), made anew: for a
// caller that needs them all at once. The layout does not keep them.
func (l *Layout) Seats() []boxoffice.Seat { return l.Event.Seats() }

// Select checks a selection of seat ids against the layout
// (boxoffice.ValidateSeatSelection) and returns its seats.
func (l *Layout) Select(seatIDs []string, limit int) ([]boxoffice.Seat, error) {
	return boxoffice.ValidateSeatSelection(l.Seat, seatIDs, limit)
}

// Bytes is about what the layout weighs in memory, its event and its
// entry in a Cache included:
// O(sections + seats with features), whatever the number of seats. It is
// the cost a Cache counts against its byte bound.
func (l *Layout) Bytes() int64 { return l.bytes }

// Estimates of the heap the parts of a layout take, allocator rounding
// and map overhead included, and its entry in a Cache.
const (
	layoutBytes  = int64(unsafe.Sizeof(Layout{})) + 16 + 160
	eventBytes   = int64(unsafe.Sizeof(boxoffice.Event{})) + 32
	sectionBytes = int64(unsafe.Sizeof(Section{}) + unsafe.Sizeof(boxoffice.Section{}))
	// An entry of byName, and of a section's Features (key, slice, the
	// slice's array and its share of the map's groups).
	nameEntryBytes    = 40
	featureEntryBytes = 72
	mapBytes          = 64 // a map's header and its first group
)

// weigh estimates what the layout weighs (Bytes).
func (l *Layout) weigh() int64 {
	e := l.Event
	b := layoutBytes + eventBytes + mapBytes + int64(len(e.Name)+len(e.Venue)+len(e.DrawSeed))
	for _, s := range e.Sections {
		b += sectionBytes + nameEntryBytes + int64(len(s.Name)+len(s.PriceTier))
		if len(s.Features) > 0 {
			b += mapBytes
		}
		for key, fs := range s.Features {
			b += featureEntryBytes + int64(len(key)) + int64(len(fs))*int64(unsafe.Sizeof(boxoffice.SeatFeature("")))
		}
	}
	return b
}

// rowLabels are the labels of the rows a valid section may have, made
// once: a seat's row label costs no allocation.
var rowLabels = sync.OnceValue(func() []string {
	out := make([]string, boxoffice.MaxRowsPerSection+1)
	for r := 1; r < len(out); r++ {
		out[r] = boxoffice.RowLabel(r)
	}
	return out
})

// rowLabel is boxoffice.RowLabel(r).
func rowLabel(r int) string {
	if labels := rowLabels(); r > 0 && r < len(labels) {
		return labels[r]
	}
	return boxoffice.RowLabel(r)
}

// Source reads an event: the store.
type Source interface {
	Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error)
}

// Cache holds the layouts of the events used last, but not of an event
// whose show is over (boxoffice.Event.Over): that one is read anew each
// time. Create it with NewCache.
type Cache struct {
	src Source
	lru *lru.Cache[boxoffice.ID, *Layout]
	sf  singleflight.Group
	now func() time.Time // SetClock
}

// NewCache returns a cache of at most maxEvents layouts read from src;
// the least recently used goes when one more is needed.
func NewCache(src Source, maxEvents int) *Cache {
	return &Cache{src: src, lru: lru.New[boxoffice.ID, *Layout](max(maxEvents, 1)), now: time.Now}
}

// SetMaxBytes bounds the bytes the cached layouts weigh (Layout.Bytes) to
// n; 0 means no bound beside the number of events. The layout used last
// stays even if it alone weighs more.
func (c *Cache) SetMaxBytes(n int64) { c.lru.SetMaxBytes(n, (*Layout).Bytes) }

// SetClock sets the clock that says whether a show is over; nil means
// time.Now. Call it before the cache is used.
func (c *Cache) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	c.now = now
}

// Get returns the event's layout, from the cache when it can; concurrent
// misses for one event read the store once. ENOTFOUND for an unknown
// event.
func (c *Cache) Get(ctx context.Context, id boxoffice.ID) (*Layout, error) {
	if l, ok := c.lru.Get(id); ok {
		if l.Event.Over(c.now()) {
			c.lru.Remove(id) // over since it was cached
		}
		return l, nil
	}
	v, err, _ := c.sf.Do(id.String(), func() (any, error) {
		e, err := c.src.Event(ctx, id)
		if err != nil {
			return nil, err
		}
		l := Of(e)
		c.Add(l)
		return l, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Layout), nil
}

// Layout is Get (seatmap.Layouts).
func (c *Cache) Layout(ctx context.Context, id boxoffice.ID) (*Layout, error) { return c.Get(ctx, id) }

// Add caches the layout of an event just created, unless its show is
// over. Caching one also drops the layouts of the shows over since they
// were cached (once per event cached, not per read: O(events cached)).
func (c *Cache) Add(l *Layout) {
	now := c.now()
	if l.Event.Over(now) {
		return
	}
	c.lru.RemoveIf(func(_ boxoffice.ID, l *Layout) bool { return l.Event.Over(now) })
	c.lru.Add(l.Event.ID, l)
}

// Len returns the number of layouts cached.
func (c *Cache) Len() int { return c.lru.Len() }

// Bytes returns what the cached layouts weigh (0 without SetMaxBytes).
func (c *Cache) Bytes() int64 { return c.lru.Bytes() }
