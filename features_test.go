package boxoffice

import (
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
	if err := both.Validate(seats, 4); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, b := range []*BestAvailable{
		{Quantity: 1, Features: []SeatFeature{"jacuzzi"}},
		{Quantity: 1, Features: []SeatFeature{Wheelchair, Wheelchair}},
		{Quantity: 1, Section: "F", Features: []SeatFeature{RestrictedView, Wheelchair}, PriceTier: "other"},
	} {
		if err := b.Validate(seats, 4); ErrorCode(err) != EINVALID {
			t.Errorf("Validate(%+v) = %v, want EINVALID", b, err)
		}
	}
	if got := RowNumber("AA"); got != 27 || RowLabel(got) != "AA" || RowNumber("") != 0 || RowNumber("a") != 0 {
		t.Errorf("RowNumber: AA → %d", got)
	}
}
