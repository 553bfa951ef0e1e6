package holdtest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
)

var heldSpecs = []spec{
	{"AlignedWithInput", testHeldAligned},
	{"NoSeats", testHeldNoSeats},
	{"UnknownEvent", testHeldUnknownEvent},
	{"ManySeatsInOneCall", testHeldMany},
}

// The answer follows the input seat by seat, across sections, with repeats
// and seats that no hold ever touched.
func testHeldAligned(t *testing.T, h Harness) {
	event := newID()
	acquire(t, h, event, seats("Floor", 1, 2), newID(), long)
	acquire(t, h, event, []string{seat("Balcony", 5)}, newID(), long)
	acquire(t, h, event, []string{seat("Box", 1)}, newID(), long)
	released := acquire(t, h, event, []string{seat("Box", 2)}, newID(), long)
	release(t, h, event, released.SeatIDs, released.Owner, 1)

	query := []struct {
		seat string
		held bool
	}{
		{seat("Balcony", 5), true},
		{seat("Floor", 3), false},
		{seat("Floor", 1), true},
		{seat("Box", 2), false},
		{seat("Box", 1), true},
		{seat("Balcony", 1), false},
		{seat("Floor", 2), true},
		{seat("Floor", 1), true},
		{"Stalls-ZZ-1000", false},
	}
	var ids []string
	var want []bool
	for _, q := range query {
		ids = append(ids, q.seat)
		want = append(want, q.held)
	}
	wantHeld(t, h, event, ids, want)
}

func testHeldNoSeats(t *testing.T, h Harness) {
	got, err := h.Holds.Held(context.Background(), newID(), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Held(no seats) = %v, %v; want no answers and no error", got, err)
	}
}

func testHeldUnknownEvent(t *testing.T, h Harness) {
	ids := seats("Floor", 1, 3)
	wantHeld(t, h, newID(), ids, allHeld(len(ids), false))
}

// A whole seat map in one call: 12,000 seats in four sections, every fifth
// one held, asked in a shuffled order.
func testHeldMany(t *testing.T, h Harness) {
	const perSection = 3000
	event := newID()
	var ids []string
	held := map[string]bool{}
	for i := range 4 {
		sec := "S" + strconv.Itoa(i+1)
		all := seats(sec, 1, perSection)
		var some []string
		for n, s := range all {
			if n%5 == 0 {
				some = append(some, s)
				held[s] = true
			}
		}
		acquire(t, h, event, some, newID(), long)
		ids = append(ids, all...)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })

	want := make([]bool, len(ids))
	for i, s := range ids {
		want[i] = held[s]
	}
	wantHeld(t, h, event, ids, want)
}
