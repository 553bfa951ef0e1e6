package drill

import (
	"context"
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
