package holdtest

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice"
)

var concurrencySpecs = []spec{
	{"OneWinnerPerSeat", testOneWinnerPerSeat},
	{"OverlappingStorm", testOverlappingStorm},
}

// racers is how many goroutines race for the same seats.
const racers = 64

// Many buyers released at once on the same seats: exactly one gets them,
// every other one is told all of them are taken.
func testOneWinnerPerSeat(t *testing.T, h Harness) {
	tests := []struct {
		name  string
		seats []string
	}{
		{"OneSeat", seats("Floor", 1, 1)},
		{"ThreeSeats", seats("Floor", 1, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := newID()
			holds, errs := Race(racers, func(int) (boxoffice.Hold, error) {
				return h.Holds.Acquire(context.Background(), boxoffice.HoldRequest{
					EventID: event, SeatIDs: tt.seats, Owner: newID(), TTL: long,
				})
			})
			w := holds[OneWinner(t, errs, tt.seats)]
			wantVerify(t, h, event, tt.seats, w.Owner, w.Fence, "")
			wantHeld(t, h, event, tt.seats, allHeld(len(tt.seats), true))
		})
	}
}

// Race runs n calls of acquire at once (released together) and returns
// their holds and errors, by call.
func Race(n int, acquire func(i int) (boxoffice.Hold, error)) ([]boxoffice.Hold, []error) {
	holds, errs := make([]boxoffice.Hold, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			holds[i], errs[i] = acquire(i)
		})
	}
	close(start)
	wg.Wait()
	return holds, errs
}

// OneWinner fails the test unless exactly one of the racers' errs is nil
// and every other is ESEATTAKEN naming seats; it returns the winner.
func OneWinner(t *testing.T, errs []error, seats []string) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch boxoffice.ErrorCode(err) {
		case "":
			if winner >= 0 {
				t.Fatalf("racers %d and %d both got %v", winner, i, seats)
			}
			winner = i
		case boxoffice.ESEATTAKEN:
			if diff := cmp.Diff(seats, boxoffice.ErrorSeats(err), sortStrings); diff != "" {
				t.Errorf("loser's conflicting seats mismatch (-want +got):\n%s", diff)
			}
		default:
			t.Errorf("racer %d: %v, want a hold or %s", i, err, boxoffice.ESEATTAKEN)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d racers got %v", len(errs), seats)
	}
	return winner
}

// Many buyers grab and give back random overlapping sets of 1-4 seats from
// a small pool. Whatever the interleaving, a granted hold is always whole
// and no seat ever has two holders; a refused request leaves nothing held.
func testOverlappingStorm(t *testing.T, h Harness) {
	const (
		workers = 32
		rounds  = 100
	)
	ctx := context.Background()
	event := newID()
	pool := seats("Floor", 1, 8)

	kept := make([][]boxoffice.Hold, workers) // each worker's holds at the end
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(event), uint64(w)))
			var mine []boxoffice.Hold
			for round := range rounds {
				want := pick(rng, pool, 1+rng.IntN(4))
				hold, err := h.Holds.Acquire(ctx, boxoffice.HoldRequest{
					EventID: event, SeatIDs: want, Owner: newID(), TTL: long,
				})
				switch boxoffice.ErrorCode(err) {
				case "":
					mine = append(mine, hold)
				case boxoffice.ESEATTAKEN:
					if in := boxoffice.ErrorSeats(err); len(in) == 0 || !subset(in, want) {
						t.Errorf("Acquire(%v) refused because of %v, want a non-empty subset of the request", want, in)
					}
				default:
					t.Errorf("Acquire(%v) = %v", want, err)
					return
				}
				// Holds this worker keeps must stay whole while others churn.
				if round%10 == 9 {
					for _, k := range mine {
						if err := h.Holds.Verify(ctx, event, k.SeatIDs, k.Owner, k.Fence); err != nil {
							t.Errorf("mid-storm Verify of a kept hold on %v = %v", k.SeatIDs, err)
						}
					}
				}
				if len(mine) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(mine))
					k := mine[i]
					n, err := h.Holds.Release(ctx, event, k.SeatIDs, k.Owner)
					if err != nil || n != len(k.SeatIDs) {
						t.Errorf("Release(%v) of a kept hold = %d, %v; want %d, nil", k.SeatIDs, n, err, len(k.SeatIDs))
					}
					mine = slices.Delete(mine, i, i+1)
				}
			}
			kept[w] = mine
		})
	}
	wg.Wait()

	holder := map[string]boxoffice.ID{}
	for _, mine := range kept {
		for _, k := range mine {
			for _, s := range k.SeatIDs {
				if other, ok := holder[s]; ok {
					t.Errorf("seat %s granted to both %v and %v", s, other, k.Owner)
				}
				holder[s] = k.Owner
			}
			wantVerify(t, h, event, k.SeatIDs, k.Owner, k.Fence, "")
		}
	}
	// A seat held by nobody we know of is the leftover of a partial hold.
	var want []bool
	for _, s := range pool {
		_, ok := holder[s]
		want = append(want, ok)
	}
	wantHeld(t, h, event, pool, want)

	for _, mine := range kept {
		for _, k := range mine {
			release(t, h, event, k.SeatIDs, k.Owner, len(k.SeatIDs))
		}
	}
	wantHeld(t, h, event, pool, allHeld(len(pool), false))
}

// pick returns n distinct seats of pool in random order.
func pick(rng *rand.Rand, pool []string, n int) []string {
	var out []string
	for _, i := range rng.Perm(len(pool))[:n] {
		out = append(out, pool[i])
	}
	return out
}

func subset(sub, of []string) bool {
	for _, s := range sub {
		if !slices.Contains(of, s) {
			return false
		}
	}
	return true
}
