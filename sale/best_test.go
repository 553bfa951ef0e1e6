package sale

import (
	"fmt"
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
)

// Best available takes the best row first and fills it from its centre
// outwards, without stranding single seats while it can help it.
func TestBestBlockFromTheCentreOfTheBestRow(t *testing.T) {
	l := layout.Of(&boxoffice.Event{Sections: []boxoffice.Section{
		{Name: "F", PriceTier: "t", Rows: 2, SeatsPerRow: 20},
		{Name: "S", PriceTier: "t", Rows: 1, SeatsPerRow: 4},
		{Name: "O", PriceTier: "t", Rows: 1, SeatsPerRow: 5},
	}})
	in := func(section string) []int {
		var out []int
		for i := range l.Len() {
			if l.At(i).Section == section {
				out = append(out, i)
			}
		}
		return out
	}
	take := func(section string, n int, taken map[int]bool) string {
		b := bestBlock(l, in(section), n, taken)
		for _, id := range b {
			taken[l.Order(id)] = true
		}
		return fmt.Sprint(b)
	}
	seats := func(ids ...string) map[int]bool {
		out := map[int]bool{}
		for _, id := range ids {
			out[l.Order(id)] = true
		}
		return out
	}
	taken := map[int]bool{}
	for i, want := range []string{"[F-A-10 F-A-11]", "[F-A-8 F-A-9]", "[F-A-12 F-A-13]", "[F-A-6 F-A-7]", "[F-A-14 F-A-15]"} {
		if got := take("F", 2, taken); got != want {
			t.Errorf("pair %d in a row of 20: %s, want %s", i+1, got, want)
		}
	}
	if got := take("F", 6, taken); got != "[F-B-8 F-B-9 F-B-10 F-B-11 F-B-12 F-B-13]" {
		t.Errorf("six when the best row has no six left: %s, want the centre of row B", got)
	}
	// A row of 4: two pairs, not a centre pair that strands two singles.
	taken = map[int]bool{}
	if a, b, c := take("S", 2, taken), take("S", 2, taken), take("S", 2, taken); a != "[S-A-1 S-A-2]" || b != "[S-A-3 S-A-4]" || c != "[]" {
		t.Errorf("pairs in a row of 4: %s %s %s", a, b, c)
	}
	// A row of 5 with its seat 2 taken: the three on the right.
	taken = seats("O-A-2")
	if got := take("O", 3, taken); got != "[O-A-3 O-A-4 O-A-5]" {
		t.Errorf("three in a row of 5 with seat 2 taken: %s", got)
	}
	// Every block leaves a single: the one nearest the centre all the same.
	taken = seats("O-A-1")
	if got := take("O", 3, taken); got != "[O-A-2 O-A-3 O-A-4]" && got != "[O-A-3 O-A-4 O-A-5]" {
		t.Errorf("three of four left in a row of 5: %s", got)
	}
}
