package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/redis/rueidis"
)

// TestHeldIndexMatchesTheSeats drives every script that writes a seat
// (single- and cross-section acquires, batches, leased reserves, supersedes,
// releases, the give-back of a failed cross-section retry) at random, and
// after each step reads the holds both ways: the index of live holds that
// Held reads for a seat map, and the seats themselves. They must agree on
// every seat, and each live entry must carry its seat's expiry.
func TestHeldIndexMatchesTheSeats(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		ctx := context.Background()
		h := NewHolds(client, newPrefix(t, client))
		event := newID()
		var all []string
		for _, sec := range []string{"A", "B", "C"} {
			all = append(all, holdtestSeats(sec, 80)...)
		}
		groups := h.groups(event, all, false)
		owners := []boxoffice.ID{newID(), newID(), newID(), newID()}
		rng := rand.New(rand.NewPCG(1, 2))
		pick := func(sections, n int) []string {
			var out []string
			for range n {
				sec := rng.IntN(sections)
				out = append(out, all[sec*80+rng.IntN(80)])
			}
			return out
		}
		ttl := func() time.Duration { return time.Duration(1+rng.IntN(10)) * time.Minute }
		request := func(seats []string) boxoffice.HoldRequest {
			req := boxoffice.HoldRequest{EventID: event, SeatIDs: seats, Owner: owners[rng.IntN(len(owners))], TTL: ttl()}
			if rng.IntN(5) == 0 {
				req.Supersede = owners[rng.IntN(len(owners))]
			}
			return req
		}
		for step := range 300 {
			var what string
			switch op := rng.IntN(6); op {
			case 0, 1: // one section
				what = "Acquire"
				_, _ = h.Acquire(ctx, request(pick(1, 1+rng.IntN(4))))
			case 2: // several sections: a conflict gives back what was taken
				what = "Acquire across sections"
				_, _ = h.Acquire(ctx, request(pick(3, 2+rng.IntN(4))))
			case 3:
				what = "AcquireMany"
				var reqs []boxoffice.HoldRequest
				for range 1 + rng.IntN(6) {
					reqs = append(reqs, request(pick(1+rng.IntN(3), 1+rng.IntN(3))))
				}
				h.AcquireMany(ctx, reqs)
			case 4:
				what = "AcquireLeased"
				req := request(pick(1, 1+rng.IntN(3)))
				req.Supersede = 0
				if _, end, err := h.AcquireLeased(ctx, req, "k"+strconv.Itoa(step), time.Minute); err == nil {
					end()
				}
			case 5:
				what = "Release"
				if _, err := h.Release(ctx, event, pick(3, 1+rng.IntN(8)), owners[rng.IntN(len(owners))]); err != nil {
					t.Fatal(err)
				}
			}
			compareHeld(t, h, groups, fmt.Sprintf("step %d (%s)", step, what))
			if step%50 == 49 {
				compareExpiries(t, h, groups)
			}
		}

		// Holds that run out leave their entries behind, no longer live.
		short := holdtestSeats("D", 70)
		for i := 0; i < len(short); i += 7 {
			mustAcquire(t, h, event, short[i:i+7], owners[0], 100*time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		held, err := h.Held(ctx, event, short)
		if err != nil {
			t.Fatal(err)
		}
		for i, is := range held {
			if is {
				t.Errorf("Held(%s) after its hold ran out = true", short[i])
			}
		}
	})
}

// compareHeld reads the groups' holds from the index and from the seats.
func compareHeld(t *testing.T, h *Holds, groups []*group, when string) {
	t.Helper()
	ctx := context.Background()
	byIndex, err := h.held(ctx, groups, func(*group) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	bySeats, err := h.held(ctx, groups, func(*group) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	for gi, g := range groups {
		for j, seat := range g.seats {
			if byIndex[gi][j] != bySeats[gi][j] {
				t.Fatalf("after %s: %s held by the index = %v, by its key = %v", when, seat, byIndex[gi][j], bySeats[gi][j])
			}
		}
	}
}

// compareExpiries checks that each live index entry's score is its seat's
// expiry, to within a second.
func compareExpiries(t *testing.T, h *Holds, groups []*group) {
	t.Helper()
	ctx := context.Background()
	for _, g := range groups {
		scores := map[string]float64{}
		entries, err := h.client.Do(ctx, h.client.B().Zrange().Key(g.index).Min("0").Max("-1").Withscores().Build()).AsZScores()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			scores[e.Member] = e.Score
		}
		for j, key := range g.keys {
			pttl, err := h.client.Do(ctx, h.client.B().Pttl().Key(key).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			if pttl < 0 {
				continue
			}
			want := float64(time.Now().UnixMilli() + pttl)
			if got, ok := scores[g.seats[j]]; !ok || got < want-1000 || got > want+1000 {
				t.Errorf("index entry of %s = %v (%v), want its expiry %v", g.seats[j], got, ok, want)
			}
		}
	}
}
