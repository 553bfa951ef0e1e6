package drill

import (
	"container/heap"
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
	idx  int
}

type jobHeap []*job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *jobHeap) Push(x any)        { j := x.(*job); j.idx = len(*h); *h = append(*h, j) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
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
	heap.Push(&s.h, j)
	first := s.h[0] == j
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
			j := s.h[0]
			switch {
			case j.due.After(now):
				wait = j.due.Sub(now)
			case j.kind == jobPoll:
				if ok, at := s.polls.take(now); ok {
					next = heap.Pop(&s.h).(*job)
				} else {
					// Out of poll budget: the poll waits for its token,
					// and anything due before that goes first.
					j.due = at
					heap.Fix(&s.h, 0)
					wait = 0
				}
			default:
				next = heap.Pop(&s.h).(*job)
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
