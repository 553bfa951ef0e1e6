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

// The heap hands jobs out earliest first, pushes and pops interleaved.
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
		if i%3 == 0 {
			popMin()
		}
	}
	for len(want) > 0 {
		popMin()
	}
	if len(h) != 0 {
		t.Fatalf("%d jobs left", len(h))
	}
}

// Out of poll budget, the polls wait for their tokens in due order and
// every other job due before a token goes first; a job due before a poll
// goes before it even with tokens left. The clock is given, not read.
func TestSchedulerPollBudget(t *testing.T) {
	s := newScheduler(10) // a token each 100 ms, a burst of 1
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for i := range 3 {
		s.push(&job{due: at(i), kind: jobPoll, u: &user{plan: User{Index: i}}})
	}
	s.push(&job{due: at(-1), kind: jobReserve, u: &user{plan: User{Index: 10}}})
	s.push(&job{due: at(50), kind: jobConfirm, u: &user{plan: User{Index: 11}}})
	steps := []struct {
		now  int
		want int // the job's user, or -1: none, wait
		wait time.Duration
	}{
		{5, 10, 0},                     // due before the first poll
		{5, 0, 0},                      // the burst's token
		{5, -1, 45 * time.Millisecond}, // out of budget: the confirm is next
		{50, 11, 0},
		{60, -1, 45 * time.Millisecond}, // the next token at 105 ms
		{106, 1, 0},
		{150, -1, 56 * time.Millisecond},
		{207, 2, 0},
		{300, -1, time.Hour},
	}
	for _, st := range steps {
		j, wait := s.next(at(st.now))
		switch {
		case st.want < 0 && j != nil:
			t.Fatalf("at %d ms: handed out job %d, want none", st.now, j.u.plan.Index)
		case st.want < 0 && (wait < st.wait-time.Millisecond || wait > st.wait+time.Millisecond):
			t.Fatalf("at %d ms: wait %s, want %s", st.now, wait, st.wait)
		case st.want >= 0 && (j == nil || j.u.plan.Index != st.want):
			t.Fatalf("at %d ms: got %v, want job %d", st.now, j, st.want)
		}
	}
	if n := s.len(); n != 0 {
		t.Fatalf("%d jobs left", n)
	}
}
