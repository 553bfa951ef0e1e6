package holdtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/boxoffice/boxoffice"
)

// AcquireMany is the queue's drain: a batch decided as if Acquire were
// called for each request in turn.
var manySpecs = []spec{
	{"Empty", testManyEmpty},
	{"InOrder", testManyInOrder},
	{"SameAsAcquireInTurn", testManySameAsAcquire},
	{"FencesGrowThroughTheBatch", testManyFences},
	{"SeatsHeldBefore", testManyHeldBefore},
	{"Supersede", testManySupersede},
	{"AcrossSectionsInOrder", testManyAcrossSections},
	{"InvalidRequestsAlone", testManyInvalid},
	{"OneWinnerPerSeat", testManyOneWinner},
	{"ManyInOneSection", testManyOneSection},
	{"ConcurrentBatches", testManyConcurrent},
}

// hreq is a request of owner for seatIDs with the long TTL.
func hreq(event, owner boxoffice.ID, seatIDs ...string) boxoffice.HoldRequest {
	return boxoffice.HoldRequest{EventID: event, SeatIDs: seatIDs, Owner: owner, TTL: long}
}

// acquireMany runs AcquireMany and asserts that it answers every request:
// with an error, or with a hold that is the request's.
func acquireMany(t testing.TB, h Harness, reqs []boxoffice.HoldRequest) ([]boxoffice.Hold, []error) {
	t.Helper()
	holds, errs := h.Holds.AcquireMany(context.Background(), reqs)
	if len(holds) != len(reqs) || len(errs) != len(reqs) {
		t.Fatalf("AcquireMany(%d requests) = %d holds, %d errors, want one of each per request", len(reqs), len(holds), len(errs))
	}
	for i, req := range reqs {
		if errs[i] != nil {
			continue
		}
		want := boxoffice.Hold{EventID: req.EventID, SeatIDs: req.SeatIDs, Owner: req.Owner}
		if diff := cmp.Diff(want, holds[i], ignoreGrant); diff != "" {
			t.Errorf("request %d: hold mismatch (-want +got):\n%s", i, diff)
		}
		if holds[i].Fence <= 0 || holds[i].ExpiresAt.IsZero() {
			t.Errorf("request %d: hold has fence %d, expiry %v; want a positive fence and an expiry", i, holds[i].Fence, holds[i].ExpiresAt)
		}
	}
	return holds, errs
}

// wantGranted asserts that the requests at idx were granted.
func wantGranted(t testing.TB, errs []error, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if errs[i] != nil {
			t.Errorf("request %d = %v, want a hold", i, errs[i])
		}
	}
}

// wantRefused asserts that request i was refused because exactly
// wantSeats (in any order) were held by others.
func wantRefused(t testing.TB, errs []error, i int, wantSeats ...string) {
	t.Helper()
	if got := boxoffice.ErrorCode(errs[i]); got != boxoffice.ESEATTAKEN {
		t.Errorf("request %d = %v (code %q), want code %q", i, errs[i], got, boxoffice.ESEATTAKEN)
		return
	}
	if diff := cmp.Diff(wantSeats, boxoffice.ErrorSeats(errs[i]), sortStrings); diff != "" {
		t.Errorf("request %d: conflicting seats mismatch (-want +got):\n%s", i, diff)
	}
}

func testManyEmpty(t *testing.T, h Harness) {
	for _, reqs := range [][]boxoffice.HoldRequest{nil, {}} {
		holds, errs := h.Holds.AcquireMany(context.Background(), reqs)
		if len(holds) != 0 || len(errs) != 0 {
			t.Errorf("AcquireMany(%v) = %d holds, %d errors, want none", reqs, len(holds), len(errs))
		}
	}
}

// An earlier request takes a seat before a later one; a refused request
// takes none of its seats, so a later one can have its free seats.
func testManyInOrder(t *testing.T, h Harness) {
	event := newID()
	reqs := []boxoffice.HoldRequest{
		hreq(event, newID(), seats("Floor", 1, 2)...),
		hreq(event, newID(), seats("Floor", 2, 3)...),
		hreq(event, newID(), seats("Floor", 3, 4)...),
		hreq(event, newID(), seat("Floor", 1), seat("Floor", 5)),
	}

	holds, errs := acquireMany(t, h, reqs)

	wantGranted(t, errs, 0, 2)
	wantRefused(t, errs, 1, seat("Floor", 2))
	wantRefused(t, errs, 3, seat("Floor", 1))
	wantHeld(t, h, event, seats("Floor", 1, 5), []bool{true, true, true, true, false})
	for _, i := range []int{0, 2} {
		wantVerify(t, h, event, reqs[i].SeatIDs, reqs[i].Owner, holds[i].Fence, "")
	}
	release(t, h, event, seats("Floor", 1, 5), reqs[1].Owner, 0)
}

// A random batch over a few seats (same owners again, supersedes, holds
// over two sections, invalid requests) comes out exactly as the same
// requests passed to Acquire one by one, on a twin event.
func testManySameAsAcquire(t *testing.T, h Harness) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			owners := []boxoffice.ID{newID(), newID(), newID(), newID()}
			sections := []string{"Aisle", "Balcony"}
			pick := func(secs []string) []string {
				var ids []string
				seen := map[string]bool{}
				for range 1 + rng.IntN(3) {
					s := seat(secs[rng.IntN(len(secs))], 1+rng.IntN(4))
					if !seen[s] {
						seen[s] = true
						ids = append(ids, s)
					}
				}
				return ids
			}
			batch, inTurn := newID(), newID()
			var reqs []boxoffice.HoldRequest
			for range 60 {
				req := hreq(batch, owners[rng.IntN(len(owners))])
				if r := rng.IntN(10); r < 3 { // may span both sections
					req.SeatIDs = pick(sections)
				} else {
					req.SeatIDs = pick(sections[r%2 : r%2+1])
				}
				if rng.IntN(15) == 0 {
					req.TTL = 0
				}
				if rng.IntN(4) == 0 {
					req.Supersede = owners[rng.IntN(len(owners))]
				}
				reqs = append(reqs, req)
			}

			holds, errs := acquireMany(t, h, reqs)

			last := map[string]boxoffice.Hold{} // each seat's latest grant
			for i, req := range reqs {
				req.EventID = inTurn
				_, err := h.Holds.Acquire(context.Background(), req)
				if boxoffice.ErrorCode(errs[i]) != boxoffice.ErrorCode(err) ||
					!cmp.Equal(boxoffice.ErrorSeats(errs[i]), boxoffice.ErrorSeats(err), sortStrings) {
					t.Errorf("request %d (%v by %v, superseding %v): AcquireMany = %v, Acquire = %v",
						i, req.SeatIDs, req.Owner, req.Supersede, errs[i], err)
				}
				if errs[i] != nil {
					continue
				}
				for _, s := range req.SeatIDs {
					if prev, ok := last[s]; ok && holds[i].Fence <= prev.Fence {
						t.Errorf("request %d: fence %d on %s after %d, want larger", i, holds[i].Fence, s, prev.Fence)
					}
					last[s] = holds[i]
				}
			}
			var all []string
			for _, sec := range sections {
				all = append(all, seats(sec, 1, 4)...)
			}
			inTurnHeld, err := h.Holds.Held(context.Background(), inTurn, all)
			if err != nil {
				t.Fatal(err)
			}
			wantHeld(t, h, batch, all, inTurnHeld)
			for s, hold := range last {
				wantVerify(t, h, batch, []string{s}, hold.Owner, hold.Fence, "")
			}
		})
	}
}

// Every grant of a batch is a grant like any other: a new fence, larger
// than the one before it in the section, which later holds exceed in turn.
func testManyFences(t *testing.T, h Harness) {
	event, a, b, c := newID(), newID(), newID(), newID()
	before := acquire(t, h, event, seats("Floor", 1, 1), newID(), long)
	release(t, h, event, before.SeatIDs, before.Owner, 1)
	reqs := []boxoffice.HoldRequest{
		hreq(event, a, seat("Floor", 1)),
		hreq(event, a, seats("Floor", 1, 2)...), // a retry that grows
		hreq(event, b, seat("Floor", 3)),
		hreq(event, a, seat("Floor", 2)),
		hreq(event, c, seat("Balcony", 1)),
	}

	holds, errs := acquireMany(t, h, reqs)

	wantGranted(t, errs, 0, 1, 2, 3, 4)
	fences := []int64{before.Fence}
	for _, hold := range holds[:4] {
		fences = append(fences, hold.Fence)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences in Floor %v: want strictly increasing", fences)
		}
	}
	wantVerify(t, h, event, seats("Floor", 1, 1), a, holds[0].Fence, boxoffice.EHOLDLOST)
	wantVerify(t, h, event, seats("Floor", 1, 1), a, holds[1].Fence, "")
	wantVerify(t, h, event, seats("Floor", 2, 2), a, holds[3].Fence, "")
	wantVerify(t, h, event, seats("Floor", 3, 3), b, holds[2].Fence, "")
	wantVerify(t, h, event, seats("Balcony", 1, 1), c, holds[4].Fence, "")

	release(t, h, event, seats("Floor", 3, 3), b, 1)
	if after := acquire(t, h, event, seats("Floor", 3, 3), newID(), long); after.Fence <= holds[3].Fence {
		t.Errorf("hold after the batch got fence %d, want above the batch's %d", after.Fence, holds[3].Fence)
	}
}

// Holds taken before the batch count: another owner's refuses, the same
// owner's is granted again under a new fence.
func testManyHeldBefore(t *testing.T, h Harness) {
	event, x := newID(), newID()
	mine := acquire(t, h, event, seats("Floor", 1, 2), x, long)
	reqs := []boxoffice.HoldRequest{
		hreq(event, newID(), seats("Floor", 2, 3)...),
		hreq(event, x, seat("Floor", 1)),
	}

	holds, errs := acquireMany(t, h, reqs)

	wantRefused(t, errs, 0, seat("Floor", 2))
	wantGranted(t, errs, 1)
	if holds[1].Fence <= mine.Fence {
		t.Errorf("same owner's new hold has fence %d, want above its earlier %d", holds[1].Fence, mine.Fence)
	}
	wantVerify(t, h, event, seats("Floor", 1, 1), x, holds[1].Fence, "")
	wantVerify(t, h, event, seats("Floor", 2, 2), x, mine.Fence, "")
	wantHeld(t, h, event, seats("Floor", 1, 3), []bool{true, true, false})
}

func testManySupersede(t *testing.T, h Harness) {
	event, old, offer := newID(), newID(), newID()
	before := acquire(t, h, event, seats("Floor", 1, 2), old, long)
	reqs := []boxoffice.HoldRequest{
		hreq(event, offer, seats("Floor", 1, 2)...),
		hreq(event, newID(), seat("Floor", 2)), // old's seat, but offer's by now
		hreq(event, old, seat("Floor", 1)),     // back again
		hreq(event, newID(), seats("Floor", 3, 4)...),
	}
	reqs[0].Supersede = old
	reqs[1].Supersede = old
	reqs[2].Supersede = offer
	reqs[3].Supersede = newID() // holds nothing: free seats are granted

	holds, errs := acquireMany(t, h, reqs)

	wantGranted(t, errs, 0, 2, 3)
	wantRefused(t, errs, 1, seat("Floor", 2))
	if holds[0].Fence <= before.Fence {
		t.Errorf("superseding hold has fence %d, want above %d", holds[0].Fence, before.Fence)
	}
	wantVerify(t, h, event, seats("Floor", 2, 2), offer, holds[0].Fence, "")
	wantVerify(t, h, event, seats("Floor", 1, 1), old, holds[2].Fence, "")
	wantVerify(t, h, event, seats("Floor", 3, 4), reqs[3].Owner, holds[3].Fence, "")
}

// Holds over several sections among one-section ones keep the batch's
// order both ways: they see what the requests before them took, and the
// requests after them see what they took.
func testManyAcrossSections(t *testing.T, h Harness) {
	event := newID()
	reqs := []boxoffice.HoldRequest{
		hreq(event, newID(), seat("Aisle", 1)),
		hreq(event, newID(), seat("Aisle", 1), seat("Balcony", 1)),
		hreq(event, newID(), seat("Balcony", 1)),
		hreq(event, newID(), seat("Aisle", 2), seat("Balcony", 2)),
		hreq(event, newID(), seat("Balcony", 2)),
		hreq(event, newID(), seat("Aisle", 2), seat("Aisle", 3)),
		hreq(event, newID(), seat("Balcony", 3), seat("Circle", 1)),
		hreq(event, newID(), seat("Circle", 1)),
	}

	holds, errs := acquireMany(t, h, reqs)

	wantGranted(t, errs, 0, 2, 3, 6)
	wantRefused(t, errs, 1, seat("Aisle", 1))
	wantRefused(t, errs, 4, seat("Balcony", 2))
	wantRefused(t, errs, 5, seat("Aisle", 2))
	wantRefused(t, errs, 7, seat("Circle", 1))
	for _, i := range []int{0, 2, 3, 6} {
		wantVerify(t, h, event, reqs[i].SeatIDs, reqs[i].Owner, holds[i].Fence, "")
	}
	wantHeld(t, h, event, []string{seat("Aisle", 3), seat("Balcony", 4)}, []bool{false, false})
}

// An invalid request is EINVALID alone; the others are decided as usual.
func testManyInvalid(t *testing.T, h Harness) {
	event := newID()
	reqs := []boxoffice.HoldRequest{
		hreq(event, newID(), seat("Floor", 1)),
		hreq(event, newID()),
		hreq(event, newID(), seat("Floor", 2)),
		hreq(event, newID(), seat("Floor", 3)),
		hreq(event, newID(), seat("Floor", 2)),
		hreq(event, newID(), seat("Floor", 1)),
	}
	reqs[2].TTL = 0
	reqs[3].TTL = -time.Second

	_, errs := acquireMany(t, h, reqs)

	wantGranted(t, errs, 0, 4)
	for _, i := range []int{1, 2, 3} {
		wantCode(t, errs[i], boxoffice.EINVALID)
	}
	wantRefused(t, errs, 5, seat("Floor", 1))
	wantHeld(t, h, event, seats("Floor", 1, 3), []bool{true, true, false})
}

// A drain-sized batch: every seat wanted twice, in shuffled order, over
// three sections. The first request for a seat gets it, the second is told
// exactly that seat is taken.
func testManyOneWinner(t *testing.T, h Harness) {
	event := newID()
	sections := []string{"Aisle", "Balcony", "Circle"}
	var want []string
	for k := range 150 {
		s := seat(sections[k%3], k/3+1)
		want = append(want, s, s)
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
	reqs := make([]boxoffice.HoldRequest, len(want))
	for i, s := range want {
		reqs[i] = hreq(event, newID(), s)
	}

	holds, errs := acquireMany(t, h, reqs)

	winner := map[string]int{}
	for i, s := range want {
		if _, ok := winner[s]; ok {
			wantRefused(t, errs, i, s)
			continue
		}
		winner[s] = i
		wantGranted(t, errs, i)
	}
	var all []string
	for s, i := range winner {
		all = append(all, s)
		wantVerify(t, h, event, []string{s}, reqs[i].Owner, holds[i].Fence, "")
	}
	wantHeld(t, h, event, all, allHeld(len(all), true))
}

// More requests in one section than a store may decide at once, one seat
// and then three seats each: still decided in order.
func testManyOneSection(t *testing.T, h Harness) {
	t.Run("OneSeatEach", func(t *testing.T) {
		event := newID()
		const n = 550
		var reqs []boxoffice.HoldRequest
		for i := range 2 * n {
			reqs = append(reqs, hreq(event, newID(), seat("Floor", i%n+1)))
		}

		holds, errs := acquireMany(t, h, reqs)

		for i := range n {
			wantGranted(t, errs, i)
			wantRefused(t, errs, n+i, seat("Floor", i+1))
			if i > 0 && errs[i] == nil && holds[i].Fence <= holds[i-1].Fence {
				t.Errorf("request %d: fence %d after %d, want larger", i, holds[i].Fence, holds[i-1].Fence)
			}
		}
	})
	t.Run("ThreeSeatsEach", func(t *testing.T) {
		// Request j wants seats j+1..j+3: every third is granted, the two
		// after it meet its seats.
		event := newID()
		var reqs []boxoffice.HoldRequest
		for j := range 400 {
			reqs = append(reqs, hreq(event, newID(), seats("Pit", j+1, j+3)...))
		}

		holds, errs := acquireMany(t, h, reqs)

		for j := range reqs {
			switch j % 3 {
			case 0:
				wantGranted(t, errs, j)
				if errs[j] == nil {
					wantVerify(t, h, event, reqs[j].SeatIDs, reqs[j].Owner, holds[j].Fence, "")
				}
			case 1:
				wantRefused(t, errs, j, seats("Pit", j+1, j+2)...)
			case 2:
				wantRefused(t, errs, j, seat("Pit", j+1))
			}
		}
	})
}

// Batches racing each other and single Acquires over the same seats never
// give a seat twice.
func testManyConcurrent(t *testing.T, h Harness) {
	event := newID()
	const n, batches = 100, 8
	all := seats("Floor", 1, n)
	type result struct {
		reqs  []boxoffice.HoldRequest
		holds []boxoffice.Hold
		errs  []error
	}
	results := make([]result, batches+n)
	for b := range batches {
		order := rand.Perm(n)
		for _, k := range order {
			results[b].reqs = append(results[b].reqs, hreq(event, newID(), all[k]))
		}
	}
	for k := range n {
		results[batches+k].reqs = []boxoffice.HoldRequest{hreq(event, newID(), all[k])}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			r := &results[i]
			if i < batches {
				r.holds, r.errs = h.Holds.AcquireMany(context.Background(), r.reqs)
				return
			}
			hold, err := h.Holds.Acquire(context.Background(), r.reqs[0])
			r.holds, r.errs = []boxoffice.Hold{hold}, []error{err}
		})
	}
	close(start)
	wg.Wait()

	winners := map[string]boxoffice.Hold{}
	for _, r := range results {
		if len(r.errs) != len(r.reqs) || len(r.holds) != len(r.reqs) {
			t.Fatalf("AcquireMany(%d requests) = %d holds, %d errors", len(r.reqs), len(r.holds), len(r.errs))
		}
		for i, req := range r.reqs {
			s := req.SeatIDs[0]
			switch boxoffice.ErrorCode(r.errs[i]) {
			case "":
				if w, ok := winners[s]; ok {
					t.Errorf("%s granted to %v and %v", s, w.Owner, req.Owner)
				}
				winners[s] = r.holds[i]
			case boxoffice.ESEATTAKEN:
				wantRefused(t, r.errs, i, s)
			default:
				t.Errorf("request for %s = %v, want a hold or %s", s, r.errs[i], boxoffice.ESEATTAKEN)
			}
		}
	}
	if len(winners) != n {
		t.Errorf("%d of %d seats granted, want every one once", len(winners), n)
	}
	for s, w := range winners {
		wantVerify(t, h, event, []string{s}, w.Owner, w.Fence, "")
	}
}
