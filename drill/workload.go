package drill

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Section is one block of the venue the drill creates. Sections are made
// in quality order: the first is the best, and the users' preferences
// (a Zipf draw over that order) crowd the front ones.
type Section struct {
	Name        string `json:"name"`
	PriceTier   string `json:"price_tier"`
	PriceCents  int64  `json:"price_cents"`
	Rows        int    `json:"rows"`
	SeatsPerRow int    `json:"seats_per_row"`
}

// seatsPerRow is the width of a row when a section is big enough: 50
// seats, so a 2,000-seat section is 40 rows, the shape of an arena block.
const seatsPerRow = 50

// Venue lays out about seats seats in sections of sectionSize seats, in
// quality order, with four price tiers (three or fewer when there are
// fewer sections). The last section takes the remainder, rounded up to
// whole rows, so the venue may have a few more seats than asked.
func Venue(seats, sectionSize int) []Section {
	if seats <= 0 || sectionSize <= 0 {
		return nil
	}
	width := min(seatsPerRow, sectionSize)
	rows := max(1, sectionSize/width)
	full, rest := seats/(rows*width), seats%(rows*width)
	n := full
	if rest > 0 {
		n++
	}
	out := make([]Section, n)
	for i := range out {
		r := rows
		if i == full {
			r = (rest + width - 1) / width
		}
		tier, cents := tierOf(i, n)
		out[i] = Section{Name: fmt.Sprintf("S%02d", i+1), PriceTier: tier, PriceCents: cents, Rows: r, SeatsPerRow: width}
	}
	return out
}

// tierOf prices section i of n by its place in the quality order: the
// front 15% premium, then gold, silver and bronze.
func tierOf(i, n int) (string, int64) {
	f := float64(i) / float64(n)
	switch {
	case f < 0.15:
		return "premium", 25000
	case f < 0.45:
		return "gold", 15000
	case f < 0.75:
		return "silver", 9000
	}
	return "bronze", 5000
}

// Behaviour is what a user does once the queue has answered.
type Behaviour int

const (
	// Pays polls for the outcome and confirms a hold with tok_visa.
	Pays Behaviour = iota
	// NeverPays polls and learns of the hold, then walks away: the hold
	// expires and its seats come back.
	NeverPays
	// Abandons closes the tab after the 202: never polls, never pays.
	Abandons
)

func (b Behaviour) String() string {
	return [...]string{"pays", "never pays", "abandons"}[b]
}

// User is one planned visitor of the sale.
type User struct {
	Index int
	// Arrival is when the user clicks "buy", relative to the sale's
	// opening: negative in the waiting room before it.
	Arrival time.Duration
	// Party is how many adjacent seats the user asks for, 1 to 6.
	Party     int
	Behaviour Behaviour
	// SSE users listen on the live stream instead of polling.
	SSE bool
	// Best users ask for the best seats side by side in a section
	// (best_available) instead of naming seats from the map.
	Best bool
	// Seed drives the user's own choices (section, row, seats, think
	// times), so a run is reproducible given the same seat map.
	Seed uint64
}

// Shape is the crowd: how many, when they come, what they do.
type Shape struct {
	Users int
	// OpensIn is how long before the opening the first users arrive: the
	// pre-queue's share comes uniformly over [-OpensIn, 0).
	OpensIn time.Duration
	// PreShare arrive before the opening, TailShare uniformly over
	// [0, Tail) after it; the rest is the burst, exponential from the
	// opening with 95% of it within Burst.
	PreShare, TailShare float64
	Burst, Tail         time.Duration
	// AbandonShare never poll; NoPayShare poll but never pay.
	AbandonShare, NoPayShare float64
	// BestShare ask for best available in a section of their choice.
	BestShare float64
	// SSE is how many users (a sample spread over the crowd, none of them
	// abandoning) listen on the stream instead of polling.
	SSE  int
	Seed uint64
}

// partyWeights is the share of each party size 1..6: pairs and fours
// dominate, as they do in ticketing.
var partyWeights = [...]float64{0.15, 0.40, 0.12, 0.23, 0.05, 0.05}

// Plan draws the crowd of s, sorted by arrival. It is deterministic in
// s.Seed.
func Plan(s Shape) []User {
	rng := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	users := make([]User, s.Users)
	// The burst is exponential with mean Burst/3: e^-3 ≈ 5% arrive later.
	mean := s.Burst.Seconds() / 3
	sseEvery := 0
	if s.SSE > 0 {
		sseEvery = max(1, s.Users/s.SSE)
	}
	sse, wantSSE := 0, false
	for i := range users {
		u := User{Index: i, Seed: rng.Uint64()}
		switch p := rng.Float64(); {
		case p < s.PreShare:
			u.Arrival = -time.Duration(rng.Float64() * float64(s.OpensIn))
		case p < s.PreShare+s.TailShare:
			u.Arrival = time.Duration(rng.Float64() * float64(s.Tail))
		default:
			u.Arrival = time.Duration(rng.ExpFloat64() * mean * float64(time.Second))
		}
		u.Party = party(rng.Float64())
		u.Best = rng.Float64() < s.BestShare
		switch p := rng.Float64(); {
		case p < s.AbandonShare:
			u.Behaviour = Abandons
		case p < s.AbandonShare+s.NoPayShare:
			u.Behaviour = NeverPays
		}
		// Every sseEvery-th user listens, or the next one who does not
		// abandon.
		wantSSE = wantSSE || (sseEvery > 0 && i%sseEvery == 0)
		if wantSSE && u.Behaviour != Abandons && sse < s.SSE {
			u.SSE, wantSSE = true, false
			sse++
		}
		users[i] = u
	}
	slices.SortStableFunc(users, func(a, b User) int { return cmp.Compare(a.Arrival, b.Arrival) })
	return users
}

// party maps a uniform draw to a party size by partyWeights.
func party(p float64) int { return sizeOf(partyWeights[:], p) }

// sizeOf maps a uniform draw p to a size 1..len(weights), weights[i] the
// share of size i+1.
func sizeOf(weights []float64, p float64) int {
	for i, w := range weights {
		if p < w {
			return i + 1
		}
		p -= w
	}
	return len(weights)
}

// firstChoice draws the user's preferred section from a Zipf law over the
// quality order: the best section is the most wanted, the second about
// half as much, and so on (exponent 1.1, a fat head and a long tail).
func firstChoice(rng *rand.Rand, sections int) int {
	if sections <= 1 {
		return 0
	}
	return int(rand.NewZipf(rng, 1.1, 1, uint64(sections-1)).Uint64())
}

// frontRow draws a row with the front ones preferred: the square of a
// uniform draw puts half the picks in the front quarter.
func frontRow(rng *rand.Rand, rows int) int {
	u := rng.Float64()
	return min(rows-1, int(math.Floor(u*u*float64(rows))))
}

// think is a human pause between min and max.
func think(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}
