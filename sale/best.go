package sale

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
	"github.com/boxoffice/boxoffice/layout"
)

// Availability reads an event's seat statuses in layout order
// ("available", "held", "sold", "resale"), as the seat map has them:
// seatmap.Cache. maxAge > 0 asks for a map no older than that (built once
// for all who ask at the same time). Best available picks its candidates
// from it, and the lock layer decides.
type Availability interface {
	Statuses(ctx context.Context, eventID boxoffice.ID, maxAge time.Duration) (layout.Statuses, error)
}

// freshMap is how old a seat map best available accepts when the cached
// one has run out of free blocks: rebuilt at most about once a second per
// event, whatever the number of requests.
const freshMap = time.Second

// bestAttempts bounds the blocks one best-available request tries on each
// view of the seats: with a seat map a few seconds old most candidates are
// still free, and the process remembers what it saw taken since.
const bestAttempts = 8

// takenMemory is how long this process remembers seats it saw held or
// took for best available: longer than a seat map lives, so a request
// does not start from blocks the map still shows free but are not.
const takenMemory = 30 * time.Second

// holdBest holds Quantity seats side by side in one row, the best free
// block among the seats best wants (bestBlock: the best row, from its
// centre outwards). Candidates come from
// the seat map, less the seats this process saw taken since; the lock
// layer decides, so a block someone took meanwhile is struck off and the
// next is tried. When those run out it reads the seats afresh (the store
// and the lock layer) and tries again. ESEATTAKEN when no block is left.
// Seats are layout indices throughout: only the ids of the blocks tried
// are made.
func (s *Bookings) holdBest(ctx context.Context, l *layout.Layout, best *boxoffice.BestAvailable, owner boxoffice.ID, ttl time.Duration) (boxoffice.Hold, error) {
	for _, fresh := range []bool{false, true} {
		free, err := s.freeSeats(ctx, l, best, fresh)
		if err != nil {
			return boxoffice.Hold{}, err
		}
		if !fresh {
			free = s.taken.drop(l.Event.ID, free, time.Now().Add(-takenMemory))
		}
		taken := map[int]bool{}
		for attempt := 0; attempt < bestAttempts; attempt++ {
			block := bestBlock(l, free, best.Quantity, taken)
			if block == nil {
				break
			}
			hold, err := s.holds.Acquire(ctx, boxoffice.HoldRequest{EventID: l.Event.ID, SeatIDs: block, Owner: owner, TTL: ttl})
			if err == nil {
				s.taken.mark(l, block)
			}
			if !isCode(err, boxoffice.ESEATTAKEN) {
				return hold, err
			}
			in := boxoffice.ErrorSeats(err)
			s.taken.mark(l, in)
			for _, seat := range in {
				if i, ok := l.Index(seat); ok {
					taken[i] = true
				}
			}
		}
	}
	where := ""
	if best.Section != "" {
		where += " in section " + best.Section
	}
	if best.PriceTier != "" {
		where += " in price tier " + best.PriceTier
	}
	return boxoffice.Hold{}, boxoffice.Errorf(boxoffice.ESEATTAKEN, "no %d seats side by side are left%s", best.Quantity, where)
}

// freeSeats returns, in layout order, the layout indices of the seats
// best wants that look free in the seat map (fresh: one at most freshMap
// old); without one, in the store and the lock layer.
func (s *Bookings) freeSeats(ctx context.Context, l *layout.Layout, best *boxoffice.BestAvailable, fresh bool) ([]int, error) {
	var statuses layout.Statuses
	if s.avail != nil {
		maxAge := time.Duration(0)
		if fresh {
			maxAge = freshMap
		}
		st, err := s.avail.Statuses(ctx, l.Event.ID, maxAge)
		if err == nil && len(st) == l.Len() {
			statuses = st
		}
	}
	var want []int
	for _, sec := range l.Sections() {
		probe := boxoffice.Seat{Section: sec.Name, PriceTier: sec.PriceTier}
		if !best.Wants(probe) {
			continue // another section or tier
		}
		i := sec.First
		for r := 1; r <= sec.Rows; r++ {
			for n := 1; n <= sec.SeatsPerRow; n, i = n+1, i+1 {
				if statuses != nil && statuses[i] != layout.Available {
					continue
				}
				if probe.Features = sec.SeatFeatures(r, n); probe.Features != nil && !best.Wants(probe) {
					continue
				}
				want = append(want, i)
			}
		}
	}
	if statuses != nil {
		return want, nil
	}
	// No seat map: ask the store and the lock layer, one batched read each.
	sold, err := s.store.SoldSeats(ctx, l.Event.ID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(want))
	for k, i := range want {
		ids[k] = l.ID(i)
	}
	held, err := s.holds.Held(ctx, l.Event.ID, ids)
	if err != nil {
		return nil, err
	}
	isSold := make(map[string]bool, len(sold))
	for _, id := range sold {
		isSold[id] = true
	}
	free := want[:0]
	for k, i := range want {
		if !held[k] && !isSold[ids[k]] {
			free = append(free, i)
		}
	}
	return free, nil
}

// bestBlock returns the ids of n seats of free (layout indices, in
// layout order) side by side in one row, none of them taken, or nil: in
// the first row (the best: layout order goes from the stage back) that
// has such a block, the block nearest the row's centre, so a row fills
// from its centre outwards. A block that would leave a single seat
// stranded beside it is passed over while another will do, lest every
// pair split a row into unsellable singles.
func bestBlock(l *layout.Layout, free []int, n int, taken map[int]bool) []string {
	for start := 0; start < len(free); {
		k, r, _ := l.Locate(free[start])
		sec := &l.Sections()[k]
		rowStart := sec.First + (r-1)*sec.SeatsPerRow
		end := start + 1
		for end < len(free) && free[end] < rowStart+sec.SeatsPerRow {
			end++
		}
		if block := centreBlock(l, sec.SeatsPerRow, rowStart, free[start:end], n, taken); block != nil {
			return block
		}
		start = end
	}
	return nil
}

// centreBlock is bestBlock within one row's free seats: row, layout
// indices of a row of perRow seats whose seat 1 is at rowStart.
func centreBlock(l *layout.Layout, perRow, rowStart int, row []int, n int, taken map[int]bool) []string {
	centre := float64(1+perRow) / 2
	best, bestScore := -1, math.Inf(1)
	for i := 0; i < len(row); {
		if taken[row[i]] {
			i++
			continue
		}
		// row[i:j] is a run of free seats side by side.
		j := i + 1
		for j < len(row) && !taken[row[j]] && row[j] == row[j-1]+1 {
			j++
		}
		for a := i; a+n <= j; a++ {
			mid := float64(row[a]-rowStart+1) + float64(n-1)/2
			score := math.Abs(mid - centre)
			if left, right := a-i, j-(a+n); left == 1 || right == 1 {
				score += strandPenalty
			}
			if score < bestScore {
				best, bestScore = a, score
			}
		}
		i = j
	}
	if best < 0 {
		return nil
	}
	block := make([]string, n)
	for k := range n {
		block[k] = l.ID(row[best+k])
	}
	return block
}

// strandPenalty ranks a block that strands a single seat after every
// block that does not, in any row up to 10,000 seats long.
const strandPenalty = 10_000

// takenSeats remembers, per event, the seats (layout indices) this
// process saw taken and when, for best available: of the
// Config.CacheEvents events marked or asked about last.
type takenSeats struct {
	mu    sync.Mutex
	seats *lru.Cache[boxoffice.ID, map[int]time.Time]
	marks int
}

// mark remembers the seats of l as taken now; an id that is no seat of l
// is left out.
func (m *takenSeats) mark(l *layout.Layout, seats []string) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	ev, _ := m.seats.Get(l.Event.ID)
	if ev == nil {
		ev = map[int]time.Time{}
		m.seats.Add(l.Event.ID, ev)
	}
	for _, id := range seats {
		if i, ok := l.Index(id); ok {
			ev[i] = now
		}
	}
	// Forget the old marks now and then, so the memory stays the size of
	// the last few seconds' sales.
	if m.marks++; m.marks%4096 == 0 {
		m.seats.Range(func(_ boxoffice.ID, ev map[int]time.Time) bool {
			for i, at := range ev {
				if now.Sub(at) > takenMemory {
					delete(ev, i)
				}
			}
			return true
		})
	}
}

// drop returns seats (layout indices) without those of the event marked
// after t (in place: it reuses seats' array).
func (m *takenSeats) drop(eventID boxoffice.ID, seats []int, t time.Time) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	ev, _ := m.seats.Get(eventID)
	if len(ev) == 0 {
		return seats
	}
	out := seats[:0]
	for _, i := range seats {
		if at, ok := ev[i]; !ok || !at.After(t) {
			out = append(out, i)
		}
	}
	return out
}
