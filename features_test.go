package boxoffice

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Seat features name seats of their section, known features, once each;
// best available leaves featured seats to those who ask for them.
func TestSeatFeatures(t *testing.T) {
	event := func(f map[string][]SeatFeature) *Event {
		now := time.Now()
		return &Event{Name: "Show", StartsAt: now.Add(48 * time.Hour), SaleOpensAt: now, SaleMode: SaleDirect, TicketLimit: 4,
			Sections: []Section{{Name: "F", PriceTier: "t", PriceCents: 100, Rows: 2, SeatsPerRow: 6, Features: f}}}
	}
	for _, tc := range []struct {
		features map[string][]SeatFeature
		bad      string // a word of the error; "" for valid
	}{
		{map[string][]SeatFeature{"A-1": {Wheelchair}, "B-6": {Companion, RestrictedView}}, ""},
		{map[string][]SeatFeature{"C-1": {Wheelchair}}, "not a seat"},
		{map[string][]SeatFeature{"A-7": {Wheelchair}}, "not a seat"},
		{map[string][]SeatFeature{"A-01": {Wheelchair}}, "not a seat"},
		{map[string][]SeatFeature{"a-1": {Wheelchair}}, "not a seat"},
		{map[string][]SeatFeature{"A1": {Wheelchair}}, "not a seat"},
		{map[string][]SeatFeature{"A-1": {"jacuzzi"}}, "unknown feature"},
		{map[string][]SeatFeature{"A-1": {Wheelchair, Wheelchair}}, "twice"},
		{map[string][]SeatFeature{"A-1": {}}, "no features"},
	} {
		err := event(tc.features).Validate()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%v: %v", tc.features, err)
		case tc.bad != "" && (err == nil || ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), tc.bad)):
			t.Errorf("%v: %v, want EINVALID saying %q", tc.features, err, tc.bad)
		}
	}

	e := event(map[string][]SeatFeature{"A-3": {Wheelchair}, "A-4": {Companion}, "B-1": {RestrictedView}})
	seats := e.Seats()
	if !seats[2].HasFeature(Wheelchair) || !seats[3].HasFeature(Companion) || len(seats[0].Features) != 0 || !seats[6].HasFeature(RestrictedView) {
		t.Fatalf("seats' features: %+v", seats[:7])
	}
	plain := &BestAvailable{Quantity: 2}
	if plain.Wants(seats[2]) || plain.Wants(seats[6]) || !plain.Wants(seats[0]) {
		t.Error("best available without features takes featured seats")
	}
	both := &BestAvailable{Quantity: 2, Features: []SeatFeature{Wheelchair, Companion}}
	if !both.Wants(seats[2]) || !both.Wants(seats[3]) || !both.Wants(seats[0]) || both.Wants(seats[6]) {
		t.Error("best available with wheelchair and companion: wrong seats wanted")
	}
	if !both.Fits(seats[2:4]) || both.Fits(seats[1:3]) || both.Fits(seats[0:2]) {
		t.Error("a block fits when it has a seat of each feature asked for")
	}
	if err := both.Validate(e.Sections, 4); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, b := range []*BestAvailable{
		{Quantity: 1, Features: []SeatFeature{"jacuzzi"}},
		{Quantity: 1, Features: []SeatFeature{Wheelchair, Wheelchair}},
		{Quantity: 1, Section: "F", Features: []SeatFeature{RestrictedView, Wheelchair}, PriceTier: "other"},
	} {
		if err := b.Validate(e.Sections, 4); ErrorCode(err) != EINVALID {
			t.Errorf("Validate(%+v) = %v, want EINVALID", b, err)
		}
	}
	if got := RowNumber("AA"); got != 27 || RowLabel(got) != "AA" || RowNumber("") != 0 || RowNumber("a") != 0 {
		t.Errorf("RowNumber: AA → %d", got)
	}
}

// validateSeats is what BestAvailable.Validate decided before it worked
// on the sections' geometry: a walk over every seat.
func validateSeats(b *BestAvailable, seats []Seat, limit int) error {
	if b.Quantity < 1 {
		return Errorf(EINVALID, "best_available.quantity must be at least 1")
	}
	if b.Quantity > limit {
		return Errorf(ELIMIT, "at most %d seats in one request", limit)
	}
	for i, f := range b.Features {
		if !KnownSeatFeature(f) || slices.Contains(b.Features[:i], f) {
			return Errorf(EINVALID, "best_available.features: %q is unknown or listed twice (known: wheelchair, companion, restricted_view)", f)
		}
		if !slices.ContainsFunc(seats, func(s Seat) bool { return b.Wants(s) && s.HasFeature(f) }) {
			return Errorf(EINVALID, "the event has no %s seat in section %q, price tier %q", strings.ReplaceAll(string(f), "_", " "), b.Section, b.PriceTier)
		}
	}
	run, prev := 0, Seat{}
	for _, s := range seats {
		if !b.Wants(s) {
			run = 0
			continue
		}
		if run > 0 && s.Section == prev.Section && s.Row == prev.Row {
			run++
		} else {
			run = 1
		}
		prev = s
		if run >= b.Quantity {
			return nil
		}
	}
	return Errorf(EINVALID, "the event has no row with %d seats in section %q, price tier %q", b.Quantity, b.Section, b.PriceTier)
}

// Validate over the sections decides as a walk over every seat does, on
// random layouts with features and random asks.
func TestBestAvailableValidateAsEverySeat(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	outcomes := map[string]int{}
	for trial := range 3000 {
		var secs []Section
		for k := range 1 + rng.IntN(3) {
			sec := Section{Name: fmt.Sprintf("S%d", k), PriceTier: []string{"a", "b"}[rng.IntN(2)], Rows: 1 + rng.IntN(3), SeatsPerRow: 1 + rng.IntN(8)}
			for range rng.IntN(sec.Rows*sec.SeatsPerRow + 1) {
				if sec.Features == nil {
					sec.Features = map[string][]SeatFeature{}
				}
				key := RowLabel(1+rng.IntN(sec.Rows)) + "-" + fmt.Sprint(1+rng.IntN(sec.SeatsPerRow))
				sec.Features[key] = []SeatFeature{SeatFeatures[rng.IntN(3)]}
				if rng.IntN(3) == 0 {
					sec.Features[key] = SeatFeatures[:1+rng.IntN(3)]
				}
			}
			secs = append(secs, sec)
		}
		e := &Event{Sections: secs}
		b := &BestAvailable{Quantity: rng.IntN(8), Section: []string{"", "S0", "S1", "S9"}[rng.IntN(4)], PriceTier: []string{"", "a", "b"}[rng.IntN(3)]}
		for _, f := range SeatFeatures {
			if rng.IntN(3) == 0 {
				b.Features = append(b.Features, f)
			}
		}
		got, want := b.Validate(e.Sections, 6), validateSeats(b, e.Seats(), 6)
		if ErrorCode(got) != ErrorCode(want) || ErrorMessage(got) != ErrorMessage(want) {
			t.Fatalf("trial %d: %+v on %+v: %v, a walk over the seats says %v", trial, b, secs, got, want)
		}
		msg := "valid"
		if got != nil {
			msg = ErrorMessage(got)
		}
		outcomes[msg[:min(len(msg), 20)]]++
	}
	// Each answer comes up: valid, no seat with a feature, no such row.
	for _, o := range []string{"valid", "the event has no row", "the event has no whe"} {
		if outcomes[o] < 50 {
			t.Errorf("%q: %d times in %v", o, outcomes[o], outcomes)
		}
	}
}
