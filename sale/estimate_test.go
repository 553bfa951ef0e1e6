package sale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// scriptedQueue answers Progress with what the test set last.
type scriptedQueue struct {
	boxoffice.QueueState
	mu sync.Mutex
	p  boxoffice.QueueProgress
}

func (q *scriptedQueue) Progress(context.Context, boxoffice.ID) (boxoffice.QueueProgress, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.p, nil
}

func (q *scriptedQueue) set(admitted, served int64) {
	q.mu.Lock()
	q.p = boxoffice.QueueProgress{Admitted: admitted, Served: served, Opened: true, Released: true}
	q.mu.Unlock()
}

// newTestEstimator is an estimator over q on a clock the test moves.
func newTestEstimator(q boxoffice.QueueState, prior float64) (*estimator, *time.Time) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	s := &Queue{core: &core{cfg: Config{DrainPrior: prior, CacheEvents: 10}, queue: q}}
	e := newEstimator(s)
	e.now = func() time.Time { return now }
	return e, &now
}

// waitAt samples the event and estimates position's wait.
func waitAt(t *testing.T, e *estimator, position int64) float64 {
	t.Helper()
	p, err := e.sample(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	_, w := e.estimate(p, position)
	return *w
}

// Without arrivals the wait is the distance over the measured rate. While
// requests keep arriving and the drain runs below the capacity measured
// before, a request far back is told the burst's expected rest (as long
// as it lasted so far) at the measured rate, then the rest at the
// capacity; one near the front, served within the burst, the measured
// rate alone. Once arrivals stop, the measured rate alone again.
func TestEstimatorBurstThenCapacity(t *testing.T) {
	q := &scriptedQueue{}
	e, now := newTestEstimator(q, 100)
	tick := func(admitted, served int64) {
		*now = now.Add(time.Second)
		q.set(admitted, served)
		waitAt(t, e, 1)
	}

	// A first sale drains at 1,000/s with nobody arriving: that is the
	// capacity measured.
	q.set(20_000, 0)
	waitAt(t, e, 1)
	for i := range 6 {
		tick(20_000, int64(i+1)*1000)
	}
	if w := waitAt(t, e, 10_000); w < 3.5 || w > 4.5 {
		t.Fatalf("no arrivals, 3,999 ahead at 1,000/s: told %.1fs, want about 4s", w)
	}

	// Now arrivals pour in and the drain slows to 100/s.
	served, admitted := int64(6000), int64(20_000)
	for range 10 {
		admitted += 2000
		served += 100
		tick(admitted, served)
	}
	// About 10 s of burst so far: 10 s more at 100/s serve 1,000; the
	// rest at the 1,000/s capacity.
	// (The rate's average is still catching up from 1,000/s: ~130/s.)
	if w := waitAt(t, e, served+500); w < 3 || w > 6 {
		t.Errorf("500 ahead in the burst: told %.1fs, want about 4-5s (the measured rate)", w)
	}
	far := served + 21_000
	if w := waitAt(t, e, far); w < 25 || w > 35 {
		t.Errorf("21,000 ahead in a 10 s burst: told %.1fs, want about 10 + 20 = 30s", w)
	}
	// Arrivals stop: the measured rate alone (it has not caught up yet).
	tick(admitted, served+100)
	tick(admitted, served+200)
	if w, rateOnly := waitAt(t, e, far), float64(far-served-200)/100; w < rateOnly*0.5 {
		t.Errorf("after the burst: told %.1fs, want the measured rate's %.0fs or near", w, rateOnly)
	}
}

// Before any drain was measured, a burst's far end is told at the prior
// (Config.DrainPrior) where it is above the measured rate: a deployment's
// stated capacity.
func TestEstimatorBurstUsesThePriorAsCapacity(t *testing.T) {
	q := &scriptedQueue{}
	e, now := newTestEstimator(q, 2000)
	q.set(1000, 0)
	waitAt(t, e, 1)
	admitted, served := int64(1000), int64(0)
	for range 5 {
		*now = now.Add(time.Second)
		admitted += 5000
		served += 200
		q.set(admitted, served)
		waitAt(t, e, 1)
	}
	// Rate 200/s measured; the burst has lasted about 4 s: 800 more in it,
	// then 2,000/s.
	if w := waitAt(t, e, served+20_800); w < 12 || w > 16 {
		t.Errorf("20,800 ahead: told %.1fs, want about 4 + 10 = 14s", w)
	}
}

// gatedQueue is a scriptedQueue whose Progress, once gated, waits for the
// test to let it through, and counts the reads.
type gatedQueue struct {
	scriptedQueue
	reads   atomic.Int64
	entered chan struct{} // a gated read has started
	gate    chan struct{} // closed: the gated read answers
}

func (q *gatedQueue) Progress(ctx context.Context, id boxoffice.ID) (boxoffice.QueueProgress, error) {
	if q.reads.Add(1) > 1 {
		q.entered <- struct{}{}
		<-q.gate
	}
	return q.scriptedQueue.Progress(ctx, id)
}

// While one caller reads the progress afresh, the others answer at once
// from the read before (a poll never waits for another's round trip), up
// to progressStale; past that they wait for a read of their own.
func TestEstimatorAnswersFromTheLastReadWhileOneReads(t *testing.T) {
	q := &gatedQueue{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).UnixNano())
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	s := &Queue{core: &core{cfg: Config{DrainPrior: 100, CacheEvents: 10}, queue: q}}
	e := newEstimator(s)
	e.now = func() time.Time { return time.Unix(0, clock.Load()) }
	ctx := context.Background()

	q.set(1000, 100)
	if p, err := e.sample(ctx, 1); err != nil || p.prog.Served != 100 {
		t.Fatalf("first read: %+v, %v", p.prog, err)
	}
	advance(progressTTL)
	q.set(1000, 300)
	// sampling starts a sample of its own and hands over its answer.
	sampling := func() <-chan pace {
		out := make(chan pace, 1)
		go func() {
			p, err := e.sample(ctx, 1)
			if err != nil {
				t.Error(err)
			}
			out <- p
		}()
		return out
	}
	slow := sampling()
	<-q.entered // the refresh is under way, and held

	// Others answer from the last read without waiting for it. (The
	// deadline only tells a deadlock from a failure: had they waited for
	// the refresh, they would never answer.)
	others := make(chan error, 1)
	go func() {
		for range 3 {
			if p, err := e.sample(ctx, 1); err != nil || p.prog.Served != 100 {
				others <- fmt.Errorf("during the refresh: %+v, %v; want the last read (served 100)", p.prog, err)
				return
			}
		}
		others <- nil
	}()
	select {
	case err := <-others:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("callers waited for another's refresh of the progress")
	}
	if n := q.reads.Load(); n != 2 {
		t.Fatalf("%d reads of the progress, want 2: one refresh at a time", n)
	}

	// A read older than progressStale is not told: the caller waits for
	// the refresh, then reads afresh itself (the refresh started before
	// the clock moved).
	advance(progressStale)
	q.set(1000, 600)
	waited := sampling()
	// It cannot answer before the refresh does; a stale answer would come
	// at once (the wait only gives the goroutine time to run, and cannot
	// fail a correct estimator).
	select {
	case p := <-waited:
		t.Fatalf("answered %+v from a read older than progressStale", p.prog)
	case <-time.After(50 * time.Millisecond):
	}
	close(q.gate)
	if p := <-slow; p.prog.Served != 600 {
		t.Fatalf("the refresh answered %+v, want what it read (served 600)", p.prog)
	}
	if p := <-waited; p.prog.Served != 600 {
		t.Fatalf("past progressStale: %+v, want a read of its own (served 600)", p.prog)
	}
	if n := q.reads.Load(); n != 3 {
		t.Fatalf("%d reads of the progress, want 3", n)
	}
}
