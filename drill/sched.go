package drill

import (
	"context"
	"sync"
	"time"
)

// jobKind is what a user does next.
type jobKind int

const (
	jobReserve jobKind = iota
	jobPoll
	jobConfirm
)

// job is one user action due at a time. Latencies are measured from due,
// not from when the action could be sent: when the load generator falls
// behind, the user's wait grows, and the report must show it (no
// coordinated omission).
type job struct {
	due time.Time
	// want is when the user meant to act; due moves past it when the poll
	// budget holds a poll back.
	want time.Time
	kind jobKind
	u    *user
	r    *request
}

// jobHeap is a binary min-heap of jobs by due time. The keys sit in the
// slice beside the pointers: with a hundred thousand users waiting, a
// comparison that follows a pointer to its job misses the cache (the heap
// was 5% of the drill's CPU, which the server under test does not get).
type jobHeap []heapEntry

type heapEntry struct {
	due int64 // j.due, Unix nanoseconds
	j   *job
}

func (h *jobHeap) push(j *job) {
	*h = append(*h, heapEntry{j.due.UnixNano(), j})
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].due <= a[i].due {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

// pop removes and returns the earliest job.
func (h *jobHeap) pop() *job {
	a := *h
	j := a[0].j
	n := len(a) - 1
	a[0] = a[n]
	a[n] = heapEntry{}
	*h = a[:n]
	h.down()
	return j
}

func (h jobHeap) down() {
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && h[r].due < h[l].due {
			c = r
		}
		if h[i].due <= h[c].due {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// scheduler hands due jobs to a fixed pool of executors, earliest first.
// The pool is the load generator's concurrency (--conns): a real crowd has
// a connection each, but the machine running the drill has two cores, so
// arrivals beyond the pool wait here, and that wait counts in their time
// to 202. Polls also pass a token bucket (--poll-rate): a waiting crowd
// polls at whatever pace the pages tell it, and on two cores that pace has
// to be bounded for the front door to be measured at all.
//
// Polls wait in a heap of their own. Out of budget, the earliest poll
// waits for the next token and anything else due before it goes first;
// nothing is moved. (Moving each held-back poll to the token's time, in
// one heap with the rest, moved every poll of the backlog at every token:
// 12% of a production drill's CPU, taken from the server under test.)
type scheduler struct {
	mu       sync.Mutex
	h, polls jobHeap
	budget   bucket
	wake     chan struct{}
	jobs     chan *job
}

func newScheduler(pollRate float64) *scheduler {
	burst := max(1, pollRate/10)
	return &scheduler{
		budget: bucket{rate: pollRate, burst: burst, tokens: burst},
		wake:   make(chan struct{}, 1),
		jobs:   make(chan *job),
	}
}

func (s *scheduler) push(j *job) {
	j.want = j.due
	h := &s.h
	if j.kind == jobPoll {
		h = &s.polls
	}
	s.mu.Lock()
	h.push(j)
	first := (*h)[0].j == j
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// len returns the jobs waiting.
func (s *scheduler) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h) + len(s.polls)
}

// next pops the job to hand out now, if any, or says how long to wait for
// one (an hour: nothing waits). s.mu must be held.
func (s *scheduler) next(now time.Time) (*job, time.Duration) {
	ns := now.UnixNano()
	wait := time.Hour
	if len(s.polls) > 0 {
		p := s.polls[0].due
		switch {
		case p > ns:
			wait = time.Duration(p - ns)
		case len(s.h) > 0 && s.h[0].due < p:
			// The other job is due first.
		default:
			ok, at := s.budget.take(now)
			if ok {
				return s.polls.pop(), 0
			}
			wait = at.Sub(now)
		}
	}
	if len(s.h) > 0 {
		m := s.h[0].due
		if m <= ns {
			return s.h.pop(), 0
		}
		wait = min(wait, time.Duration(m-ns))
	}
	return nil, wait
}

// run dispatches jobs to the executors reading s.jobs until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		next, wait := s.next(time.Now())
		s.mu.Unlock()
		if next != nil {
			select {
			case s.jobs <- next:
			case <-ctx.Done():
				return
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			timer.Stop() // Go 1.23+: no stale tick survives Stop, Reset is safe
		case <-timer.C:
		}
	}
}
