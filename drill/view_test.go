package drill

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// layoutBody is a layout endpoint's body for sections of rows x width
// seats, in section, row, number order, except that the numbers of each
// row come in reverse, to check that picking goes by number.
func layoutBody(t *testing.T, sections, rows, width int) []byte {
	t.Helper()
	type seat struct {
		SeatID  string `json:"seat_id"`
		Section string `json:"section"`
		Row     string `json:"row"`
		Number  int    `json:"number"`
	}
	var seats []seat
	for s := 1; s <= sections; s++ {
		for r := range rows {
			row := string(rune('A' + r))
			for n := width; n >= 1; n-- {
				sec := fmt.Sprintf("S%02d", s)
				seats = append(seats, seat{fmt.Sprintf("%s-%s-%d", sec, row, n), sec, row, n})
			}
		}
	}
	b, err := json.Marshal(map[string]any{"event_id": "1", "seats": seats})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testLayout(t *testing.T, sections, rows, width int) *Layout {
	t.Helper()
	l, err := ParseLayout(layoutBody(t, sections, rows, width))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// runs encodes letters as the compact view does.
func runs(letters string) string {
	var b strings.Builder
	for i := 0; i < len(letters); {
		j := i
		for j < len(letters) && letters[j] == letters[i] {
			j++
		}
		b.WriteString(strconv.Itoa(j - i))
		b.WriteByte(letters[i])
		i = j
	}
	return b.String()
}

func compactBody(letters string) []byte {
	b, _ := json.Marshal(map[string]any{"seat_count": len(letters), "counts": map[string]int{"available": strings.Count(letters, "a")}, "runs": runs(letters)})
	return b
}

func TestParseLayout(t *testing.T) {
	l := testLayout(t, 2, 2, 3)
	if len(l.Seats) != 12 || len(l.Sections) != 2 || l.Sections[1].Name != "S02" || len(l.Sections[1].Rows) != 2 {
		t.Fatalf("layout %+v", l)
	}
	// Row A of S01 holds layout indexes 0..2 with numbers 3, 2, 1: by
	// number the row is 2, 1, 0.
	if diff := cmp.Diff([]int{2, 1, 0}, l.Sections[0].Rows[0]); diff != "" {
		t.Errorf("row order (-want +got):\n%s", diff)
	}
	if _, err := ParseLayout([]byte(`{"seats":[]}`)); err == nil {
		t.Error("an empty layout was accepted")
	}
}

func TestPickAdjacentFromTheView(t *testing.T) {
	l := testLayout(t, 3, 4, 10)
	v := NewView(l)
	rng := rand.New(rand.NewPCG(7, 7))
	for party := 1; party <= 6; party++ {
		for range 50 {
			ids, idx := v.Pick(rng, party, nil)
			if len(ids) != party || len(idx) != party {
				t.Fatalf("party %d got %v", party, ids)
			}
			sec, row, first := splitSeat(t, ids[0])
			for k, id := range ids {
				s, r, n := splitSeat(t, id)
				if s != sec || r != row || n != first+k {
					t.Fatalf("party %d got %v: not adjacent in one row", party, ids)
				}
				if l.Seats[idx[k]] != id {
					t.Fatalf("index %d is %s, not %s", idx[k], l.Seats[idx[k]], id)
				}
			}
		}
	}
}

func TestPickIsDeterministic(t *testing.T) {
	v := NewView(testLayout(t, 5, 10, 20))
	pick := func() [][]string {
		rng := rand.New(rand.NewPCG(11, 12))
		var out [][]string
		for i := range 100 {
			ids, _ := v.Pick(rng, 1+i%6, nil)
			out = append(out, ids)
		}
		return out
	}
	if diff := cmp.Diff(pick(), pick()); diff != "" {
		t.Errorf("same seed, different picks (-first +second):\n%s", diff)
	}
}

func TestPickFollowsAvailability(t *testing.T) {
	l := testLayout(t, 2, 2, 5) // 20 seats; by layout index, row A of S01 is 4,3,2,1,0 by number
	v := NewView(l)
	// Everything sold or held but layout indexes 12..14: S02 row A,
	// numbers 3, 2, 1 (that row's layout order is 5, 4, 3, 2, 1).
	letters := []byte(strings.Repeat("s", 20))
	for _, i := range []int{12, 13, 14} {
		letters[i] = 'a'
	}
	letters[0] = 'h'
	if n, err := v.Update(compactBody(string(letters)), `"x"`, time.Now()); err != nil || n != 3 {
		t.Fatalf("update: %d available, %v", n, err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	ids, _ := v.Pick(rng, 3, nil)
	if diff := cmp.Diff([]string{"S02-A-1", "S02-A-2", "S02-A-3"}, ids); diff != "" {
		t.Errorf("the only run of three (-want +got):\n%s", diff)
	}
	if ids, _ := v.Pick(rng, 4, nil); ids != nil {
		t.Errorf("a party of 4 got %v from a run of 3", ids)
	}
	tried := map[int]bool{13: true}
	if ids, _ := v.Pick(rng, 2, tried); ids != nil {
		t.Errorf("a pair got %v though the middle seat was tried before", ids)
	}
	if ids, _ := v.Pick(rng, 1, tried); len(ids) != 1 || ids[0] == "S02-A-2" {
		t.Errorf("a single got %v, want S02-A-1 or S02-A-3", ids)
	}
	if _, err := v.Update(compactBody("aaa"), "", time.Now()); err == nil {
		t.Error("a view of another size was accepted")
	}
}

func splitSeat(t *testing.T, id string) (string, string, int) {
	t.Helper()
	parts := strings.Split(id, "-")
	if len(parts) != 3 {
		t.Fatalf("seat id %q", id)
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		t.Fatalf("seat id %q", id)
	}
	return parts[0], parts[1], n
}

func TestPickSectionSkipsFullOnes(t *testing.T) {
	l := testLayout(t, 3, 1, 4) // S01 indexes 0-3, S02 4-7, S03 8-11
	v := NewView(l)
	if _, err := v.Update(compactBody("ssssaasasaaa"), "", time.Now()); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		// S01 is full and S02 has 3 free, not side by side: a party of 3
		// only fits S03 by count, and PickSection goes by count.
		if got := v.PickSection(rng, 3); got != "S02" && got != "S03" {
			t.Fatalf("party of 3 asks in %q", got)
		}
		if got := v.PickSection(rng, 4); got != "" {
			t.Fatalf("party of 4 asks in %q; no section has 4 free", got)
		}
	}
}

// A pick skips the rows and sections whose longest run is too short; it
// must still find a fit wherever one exists, and only real fits: checked
// against a seat-by-seat search on broken-up random maps.
func TestPickFindsEveryFit(t *testing.T) {
	l := testLayout(t, 4, 5, 8)
	rng := rand.New(rand.NewPCG(7, 7))
	for round := range 300 {
		letters := make([]byte, len(l.Seats))
		for i := range letters {
			letters[i] = "ahss"[rng.IntN(4)]
		}
		v := NewView(l)
		if _, err := v.Update(compactBody(string(letters)), "", time.Now()); err != nil {
			t.Fatal(err)
		}
		tried := map[int]bool{rng.IntN(len(letters)): true, rng.IntN(len(letters)): true}
		party := 1 + rng.IntN(4)
		exists := false
		for _, sec := range l.Sections {
			for _, row := range sec.Rows {
				run := 0
				for _, i := range row {
					if letters[i] == 'a' && !tried[i] {
						run++
					} else {
						run = 0
					}
					exists = exists || run >= party
				}
			}
		}
		_, idx := v.Pick(rng, party, tried)
		if exists != (idx != nil) {
			t.Fatalf("round %d, party %d: a fit exists %v, Pick gave %v", round, party, exists, idx)
		}
		for _, i := range idx {
			if letters[i] != 'a' || tried[i] {
				t.Fatalf("round %d: Pick gave seat %d, which is %q (tried %v)", round, i, letters[i], tried[i])
			}
		}
	}
}
