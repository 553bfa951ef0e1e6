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

// retime moves the earliest job to its new due time.
func (h jobHeap) retime() {
	h[0].due = h[0].j.due.UnixNano()
	h.down()
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
type scheduler struct {
	mu    sync.Mutex
	h     jobHeap
	polls bucket
	wake  chan struct{}
	jobs  chan *job
}

func newScheduler(pollRate float64) *scheduler {
	burst := max(1, pollRate/10)
	return &scheduler{
		polls: bucket{rate: pollRate, burst: burst, tokens: burst},
		wake:  make(chan struct{}, 1),
		jobs:  make(chan *job),
	}
}

func (s *scheduler) push(j *job) {
	j.want = j.due
	s.mu.Lock()
	s.h.push(j)
	first := s.h[0].j == j
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
	return len(s.h)
}

// run dispatches jobs to the executors reading s.jobs until ctx ends.
func (s *scheduler) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		var next *job
		wait := time.Hour
		if len(s.h) > 0 {
			now := time.Now()
			j := s.h[0].j
			switch {
			case j.due.After(now):
				wait = j.due.Sub(now)
			case j.kind == jobPoll:
				if ok, at := s.polls.take(now); ok {
					next = s.h.pop()
				} else {
					// Out of poll budget: the poll waits for its token,
					// and anything due before that goes first.
					j.due = at
					s.h.retime()
					wait = 0
				}
			default:
				next = s.h.pop()
			}
		}
		s.mu.Unlock()
		if next != nil {
			select {
			case s.jobs <- next:
			case <-ctx.Done():
				return
			}
			continue
		}
		if wait == 0 {
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
