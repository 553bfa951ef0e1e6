package drill

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice/seatmap"
)

// Layout is the event's static layout as GET /events/{id}/layout serves
// it: the seat ids in layout order (the order the compact availability
// view indexes), grouped into sections and rows for picking adjacent
// seats.
type Layout struct {
	Seats    []string
	Sections []LayoutSection
}

// LayoutSection is a section's rows, each the layout indexes of its seats
// in seat-number order, so that neighbours in a row slice sit side by side.
type LayoutSection struct {
	Name string
	Rows [][]int
}

// layoutJSON is the body of GET /events/{id}/layout.
type layoutJSON struct {
	Seats []struct {
		SeatID  string `json:"seat_id"`
		Section string `json:"section"`
		Row     string `json:"row"`
		Number  int    `json:"number"`
	} `json:"seats"`
}

// ParseLayout reads the layout endpoint's body. Sections and rows keep the
// order of their first seat in the layout, which is the order the event
// was created in (the drill's quality order).
func ParseLayout(b []byte) (*Layout, error) {
	var lj layoutJSON
	if err := json.Unmarshal(b, &lj); err != nil {
		return nil, fmt.Errorf("layout: %w", err)
	}
	l := &Layout{Seats: make([]string, len(lj.Seats))}
	type rowKey struct{ section, row string }
	secIdx := map[string]int{}
	rowIdx := map[rowKey]int{}
	for i, s := range lj.Seats {
		l.Seats[i] = s.SeatID
		si, ok := secIdx[s.Section]
		if !ok {
			si = len(l.Sections)
			secIdx[s.Section] = si
			l.Sections = append(l.Sections, LayoutSection{Name: s.Section})
		}
		k := rowKey{s.Section, s.Row}
		ri, ok := rowIdx[k]
		if !ok {
			ri = len(l.Sections[si].Rows)
			rowIdx[k] = ri
			l.Sections[si].Rows = append(l.Sections[si].Rows, nil)
		}
		l.Sections[si].Rows[ri] = append(l.Sections[si].Rows[ri], i)
	}
	num := make([]int, len(lj.Seats))
	for i, s := range lj.Seats {
		num[i] = s.Number
	}
	for _, sec := range l.Sections {
		for _, row := range sec.Rows {
			slices.SortFunc(row, func(a, b int) int { return num[a] - num[b] })
		}
	}
	if len(l.Seats) == 0 {
		return nil, fmt.Errorf("layout: no seats")
	}
	return l, nil
}

// View is the client's picture of the seat map: the layout plus the
// availability letters of the last compact view read. It is stale by
// design, as a real user's is (the map is cached for its TTL, and a CDN
// would serve it as long), so users contend for seats that are already
// gone, as they do in a real sale.
type View struct {
	layout *Layout

	mu      sync.RWMutex
	letters []byte // one of 'a', 'h', 's' per layout index; replaced, never changed in place
	avail   []int  // available seats per section, for skipping full ones
	runs    *rowRuns
	etag    string
	at      time.Time
}

// rowRuns is the longest run of available seats in each row and section of a
// view, so that a pick skips at once what cannot seat its party: late in
// a sale most rows are too broken up, and scanning them seat by seat was
// 15 % of the production drill's CPU, taken from the server it measures.
type rowRuns struct {
	row     [][]int // by section, then row
	section []int
}

// NewView returns a view of layout with every seat available, which is
// what the map says before the sale opens.
func NewView(layout *Layout) *View {
	v := &View{layout: layout}
	letters := make([]byte, len(layout.Seats))
	for i := range letters {
		letters[i] = 'a'
	}
	v.set(letters, "", time.Time{})
	return v
}

// compactJSON is the body of GET /events/{id}/availability.
type compactJSON struct {
	SeatCount int            `json:"seat_count"`
	Counts    map[string]int `json:"counts"`
	Runs      string         `json:"runs"`
}

// Update reads a compact availability body served with etag at at and
// returns the number of available seats it shows.
func (v *View) Update(body []byte, etag string, at time.Time) (int, error) {
	var c compactJSON
	if err := json.Unmarshal(body, &c); err != nil {
		return 0, fmt.Errorf("availability: %w", err)
	}
	letters, err := seatmap.DecodeRuns(c.Runs)
	if err != nil {
		return 0, fmt.Errorf("availability: %w", err)
	}
	if len(letters) != len(v.layout.Seats) {
		return 0, fmt.Errorf("availability: %d seats, the layout has %d", len(letters), len(v.layout.Seats))
	}
	v.set(letters, etag, at)
	return c.Counts["available"], nil
}

func (v *View) set(letters []byte, etag string, at time.Time) {
	avail := make([]int, len(v.layout.Sections))
	rs := &rowRuns{row: make([][]int, len(v.layout.Sections)), section: make([]int, len(v.layout.Sections))}
	for si, sec := range v.layout.Sections {
		rs.row[si] = make([]int, len(sec.Rows))
		for ri, row := range sec.Rows {
			run := 0
			for _, i := range row {
				if letters[i] != 'a' {
					run = 0
					continue
				}
				avail[si]++
				run++
				rs.row[si][ri] = max(rs.row[si][ri], run)
			}
			rs.section[si] = max(rs.section[si], rs.row[si][ri])
		}
	}
	v.mu.Lock()
	v.letters, v.avail, v.runs, v.etag, v.at = letters, avail, rs, etag, at
	v.mu.Unlock()
}

// ETag returns the ETag of the availability the view holds.
func (v *View) ETag() string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.etag
}

// rowTries is how many rows a user looks at in a section before settling
// for the first fit in it: people look near the front, then take what is
// left.
const rowTries = 6

// Pick chooses party adjacent seats in one row as a user would from the
// view: the first choice section (a Zipf draw over quality) at a front-
// weighted row, a random fit within the row, then other rows, then the
// neighbouring sections, nearest first. tried holds layout indexes the
// user asked for before (and was refused): a user does not ask for them
// again. It returns the seat ids and their layout indexes, or nil when the
// view shows no such run anywhere: the sale looks sold out to this user.
func (v *View) Pick(rng *rand.Rand, party int, tried map[int]bool) ([]string, []int) {
	v.mu.RLock()
	letters, rs := v.letters, v.runs
	v.mu.RUnlock()
	secs := v.layout.Sections
	first := firstChoice(rng, len(secs))
	free := func(i int) bool { return letters[i] == 'a' && !tried[i] }
	// A row (or section) without party seats in a run in the view has no
	// fit whatever the user tried: skipped without a look.
	fit := func(si, r int) []int {
		if rs.row[si][r] < party {
			return nil
		}
		return fitInRow(rng, secs[si].Rows[r], party, free)
	}
	// Sections in the order this user tries them: the first choice, then
	// its neighbours alternately (one worse, one better, ...).
	for d := 0; d < 2*len(secs); d++ {
		si := first + (d+1)/2
		if d%2 == 0 {
			si = first - d/2
		}
		if si < 0 || si >= len(secs) || rs.section[si] < party { // no run long enough, so no fit
			continue
		}
		rows := secs[si].Rows
		for t := range rowTries {
			r := frontRow(rng, len(rows))
			if t > 0 {
				r = rng.IntN(len(rows))
			}
			if idx := fit(si, r); idx != nil {
				return v.ids(idx), idx
			}
		}
		for r := range rows {
			if idx := fit(si, r); idx != nil {
				return v.ids(idx), idx
			}
		}
	}
	return nil, nil
}

// PickSection chooses the section a best-available user asks in: the
// first choice (a Zipf draw over quality), or the nearest neighbour the
// view shows with at least party seats available; "" when none has.
func (v *View) PickSection(rng *rand.Rand, party int) string {
	v.mu.RLock()
	avail := v.avail
	v.mu.RUnlock()
	secs := v.layout.Sections
	first := firstChoice(rng, len(secs))
	for d := 0; d < 2*len(secs); d++ {
		si := first + (d+1)/2
		if d%2 == 0 {
			si = first - d/2
		}
		if si >= 0 && si < len(secs) && avail[si] >= party {
			return secs[si].Name
		}
	}
	return ""
}

func (v *View) ids(idx []int) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = v.layout.Seats[x]
	}
	return out
}

// fitInRow returns party adjacent free seats of row, a random one of the
// fits, or nil.
func fitInRow(rng *rand.Rand, row []int, party int, free func(int) bool) []int {
	if len(row) < party {
		return nil
	}
	var starts []int
	run := 0
	for i, x := range row {
		if free(x) {
			run++
		} else {
			run = 0
		}
		if run >= party {
			starts = append(starts, i-party+1)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	s := starts[rng.IntN(len(starts))]
	return slices.Clone(row[s : s+party])
}
