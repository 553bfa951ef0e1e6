package drill

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestVenue(t *testing.T) {
	t.Run("SeedScenario", func(t *testing.T) {
		v := Venue(70_000, 2_000)
		if len(v) != 35 {
			t.Fatalf("%d sections, want 35", len(v))
		}
		seats := 0
		for _, s := range v {
			if s.Rows != 40 || s.SeatsPerRow != 50 {
				t.Fatalf("section %s is %dx%d, want 40x50", s.Name, s.Rows, s.SeatsPerRow)
			}
			seats += s.Rows * s.SeatsPerRow
		}
		if seats != 70_000 {
			t.Errorf("%d seats, want 70,000", seats)
		}
		var tiers []string
		for _, s := range v {
			if len(tiers) == 0 || tiers[len(tiers)-1] != s.PriceTier {
				tiers = append(tiers, s.PriceTier)
			}
		}
		if diff := cmp.Diff([]string{"premium", "gold", "silver", "bronze"}, tiers); diff != "" {
			t.Errorf("tiers in quality order (-want +got):\n%s", diff)
		}
		if v[0].PriceCents <= v[len(v)-1].PriceCents {
			t.Errorf("the best section costs %d, the worst %d", v[0].PriceCents, v[len(v)-1].PriceCents)
		}
	})
	t.Run("RemainderInWholeRows", func(t *testing.T) {
		v := Venue(3_010, 2_000)
		want := []Section{
			{Name: "S01", PriceTier: "premium", PriceCents: 25000, Rows: 40, SeatsPerRow: 50},
			{Name: "S02", PriceTier: "silver", PriceCents: 9000, Rows: 21, SeatsPerRow: 50},
		}
		if diff := cmp.Diff(want, v); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("NarrowSections", func(t *testing.T) {
		v := Venue(100, 30)
		if len(v) != 4 || v[0].SeatsPerRow != 30 || v[0].Rows != 1 || v[3].Rows != 1 {
			t.Errorf("got %+v", v)
		}
	})
}

func testShape() Shape {
	return Shape{Users: 20_000, OpensIn: 5 * time.Second, PreShare: 0.3, TailShare: 0.15,
		Burst: 10 * time.Second, Tail: 60 * time.Second, AbandonShare: 0.1, NoPayShare: 0.15, BestShare: 0.25, SSE: 50, Seed: 42}
}

func TestPlanIsDeterministic(t *testing.T) {
	a, b := Plan(testShape()), Plan(testShape())
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different crowds (-first +second):\n%s", diff)
	}
	s := testShape()
	s.Seed++
	if cmp.Equal(a, Plan(s)) {
		t.Error("another seed drew the same crowd")
	}
}

func TestPlanShape(t *testing.T) {
	s := testShape()
	users := Plan(s)
	if len(users) != s.Users {
		t.Fatalf("%d users, want %d", len(users), s.Users)
	}
	if !slices.IsSortedFunc(users, func(a, b User) int { return int(a.Arrival - b.Arrival) }) {
		t.Error("not sorted by arrival")
	}
	var pre, firstBurst, after int
	parties := make([]int, 7)
	behaviour := map[Behaviour]int{}
	sse, best := 0, 0
	indexes := map[int]bool{}
	for _, u := range users {
		indexes[u.Index] = true
		switch {
		case u.Arrival < -s.OpensIn:
			t.Fatalf("user %d arrives %s before the opening, earlier than the waiting window", u.Index, -u.Arrival)
		case u.Arrival < 0:
			pre++
		case u.Arrival < s.Burst:
			firstBurst++
		default:
			after++
		}
		if u.Party < 1 || u.Party > 6 {
			t.Fatalf("party of %d", u.Party)
		}
		parties[u.Party]++
		behaviour[u.Behaviour]++
		if u.Best {
			best++
		}
		if u.SSE {
			sse++
			if u.Behaviour == Abandons {
				t.Errorf("user %d listens on the stream but abandons", u.Index)
			}
		}
	}
	if len(indexes) != s.Users {
		t.Errorf("%d distinct indexes", len(indexes))
	}
	share := func(n int) float64 { return float64(n) / float64(s.Users) }
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s: %.3f, want %.3f ± %.3f", what, got, want, tol)
		}
	}
	near("before the opening", share(pre), s.PreShare, 0.02)
	// The burst is 55%, 95% of it in its first 10 s; the tail adds 15% x
	// 10/60 there: most arrivals come in the first seconds.
	near("in the burst window", share(firstBurst), 0.55*0.95+0.15*10.0/60, 0.02)
	near("later", share(after), 0.55*0.05+0.15*50.0/60, 0.02)
	near("abandon", share(behaviour[Abandons]), s.AbandonShare, 0.02)
	near("never pay", share(behaviour[NeverPays]), s.NoPayShare, 0.02)
	near("best available", share(best), s.BestShare, 0.02)
	for size, w := range partyWeights {
		near("party of "+string(rune('1'+size)), share(parties[size+1]), w, 0.02)
	}
	if sse != s.SSE {
		t.Errorf("%d users on the stream, want %d", sse, s.SSE)
	}
}

func TestFirstChoiceFavoursTheBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, 35)
	const n = 100_000
	for range n {
		counts[firstChoice(rng, 35)]++
	}
	for i := 1; i < 5; i++ {
		if counts[i] >= counts[i-1] {
			t.Errorf("section %d drawn %d times, section %d %d: want fewer further back", i, counts[i], i-1, counts[i-1])
		}
	}
	top5 := 0
	for _, c := range counts[:5] {
		top5 += c
	}
	if float64(top5)/n < 0.5 {
		t.Errorf("the best 5 of 35 sections draw %.0f%%, want a majority", 100*float64(top5)/n)
	}
	if counts[34] == 0 {
		t.Error("the worst section is never anyone's first choice: no tail")
	}
	if firstChoice(rng, 1) != 0 {
		t.Error("one section: not 0")
	}
}

func TestFrontRowAndThink(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	front := 0
	for range 10_000 {
		r := frontRow(rng, 40)
		if r < 0 || r >= 40 {
			t.Fatalf("row %d of 40", r)
		}
		if r < 10 {
			front++
		}
	}
	if front < 4_500 || front > 5_500 {
		t.Errorf("%d of 10,000 picks in the front quarter, want about half", front)
	}
	for range 1000 {
		if d := think(rng, time.Second, 3*time.Second); d < time.Second || d >= 3*time.Second {
			t.Fatalf("think %s outside [1s, 3s)", d)
		}
	}
	if d := think(rng, time.Second, time.Second); d != time.Second {
		t.Errorf("think with no range: %s", d)
	}
}
