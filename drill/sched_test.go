package drill

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSchedulerHandsOutInDueOrder: jobs come out earliest first, none
// before it is due, and polls no faster than the budget.
func TestSchedulerHandsOutInDueOrder(t *testing.T) {
	s := newScheduler(50) // 50 polls/s, a burst of 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.run(ctx)
	now := time.Now()
	for i := 5; i >= 1; i-- {
		s.push(&job{due: now.Add(time.Duration(i) * 20 * time.Millisecond), kind: jobReserve, u: &user{plan: User{Index: i}}})
	}
	for i := 1; i <= 5; i++ {
		j := <-s.jobs
		if j.u.plan.Index != i {
			t.Fatalf("job %d came out as number %d", j.u.plan.Index, i)
		}
		if time.Now().Before(j.due) {
			t.Fatalf("job %d handed out before it was due", i)
		}
	}
	start := time.Now()
	for range 25 {
		s.push(&job{due: start, kind: jobPoll})
	}
	for range 25 {
		<-s.jobs
	}
	// 5 at once, then 20 at 50/s: at least 400 ms.
	if took := time.Since(start); took < 350*time.Millisecond {
		t.Errorf("25 polls in %s: faster than the 50/s budget", took)
	}
}

// The heap hands jobs out earliest first, pushes and pops interleaved, and
// keeps its order when the earliest job is moved later.
func TestJobHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now()
	var h jobHeap
	var want []time.Time
	popMin := func() {
		slices.SortFunc(want, time.Time.Compare)
		got := h.pop()
		if !got.due.Equal(want[0]) {
			t.Fatalf("popped %s, want %s", got.due.Sub(t0), want[0].Sub(t0))
		}
		want = want[1:]
	}
	for i := range 5000 {
		j := &job{due: t0.Add(time.Duration(rng.IntN(1_000_000)) * time.Microsecond)}
		h.push(j)
		want = append(want, j.due)
		switch {
		case i%3 == 0:
			popMin()
		case i%7 == 0:
			// The earliest moved later, as a poll out of budget is.
			slices.SortFunc(want, time.Time.Compare)
			h[0].j.due = h[0].j.due.Add(time.Duration(rng.IntN(500_000)) * time.Microsecond)
			want[0] = h[0].j.due
			h.retime()
		}
	}
	for len(want) > 0 {
		popMin()
	}
	if len(h) != 0 {
		t.Fatalf("%d jobs left", len(h))
	}
}
