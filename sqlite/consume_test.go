package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/sqlite"
)

// requestSeq numbers the requests of the consumers' tests.
var requestSeq atomic.Int64

// sharedLog is a queue of n admitted requests and the consumers' record of
// what each was handed.
type sharedLog struct {
	q   *sqlite.Queue
	ids []boxoffice.ID

	mu     sync.Mutex
	handed map[boxoffice.ID][]string // request -> the consumers handed it, in order
}

func newSharedLog(t *testing.T, n int) *sharedLog {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "boxoffice.db"))
	q := s.Queue()
	q.PollInterval, q.BatchSize = 5*time.Millisecond, 8
	ev, now := queuetest.QueuedEvent(t, s), time.Now().UTC()
	l := &sharedLog{q: q, handed: map[boxoffice.ID][]string{}}
	as := make([]boxoffice.Admission, n)
	for i := range as {
		id := boxoffice.ID(9_000_000 + requestSeq.Add(1))
		as[i] = boxoffice.Admission{MaxLive: 1, Request: &boxoffice.QueuedRequest{ID: id, EventID: ev,
			UserID: fmt.Sprint("user-", i), IdempotencyKey: "k", RequestHash: "h", SeatIDs: []string{"A-A-1"}, EnqueuedAt: now}}
		l.ids = append(l.ids, id)
	}
	out, err := q.AdmitMany(t.Context(), as)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if o.Err != nil || o.Entry.Status != boxoffice.QueueQueued {
			t.Fatalf("admission %d: %+v", i, o)
		}
	}
	return l
}

// consumer runs Consume as name until ctx ends; fail decides whether a
// handing fails (nothing decided), else the batch is decided (rejected).
func (l *sharedLog) consumer(t *testing.T, ctx context.Context, name string, fail func(batch []*boxoffice.QueuedRequest) bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- l.q.Consume(ctx, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
			l.mu.Lock()
			for _, r := range batch {
				l.handed[r.ID] = append(l.handed[r.ID], name)
			}
			l.mu.Unlock()
			time.Sleep(2 * time.Millisecond) // a batch takes a while: the other consumer takes the next
			if fail != nil && fail(batch) {
				return errors.New("injected failure")
			}
			return l.reject(ctx, batch)
		})
	}()
	return done
}

// reject decides batch: every request rejected (seat taken).
func (l *sharedLog) reject(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
	os := make([]boxoffice.QueueOutcome, len(batch))
	for i := range os {
		os[i] = boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, FinishedAt: time.Now()}
	}
	_, err := l.q.FinishMany(ctx, batch, os)
	return err
}

// waitDecided waits until every request has an outcome.
func (l *sharedLog) waitDecided(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		undecided := 0
		for _, id := range l.ids {
			e, err := l.q.Entry(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if e.Status == boxoffice.QueueQueued {
				undecided++
			}
		}
		if undecided == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests still queued", undecided, len(l.ids))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *sharedLog) by() (map[string]int, map[boxoffice.ID][]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := map[string]int{}
	handed := map[boxoffice.ID][]string{}
	for id, names := range l.handed {
		handed[id] = append([]string(nil), names...)
		for _, name := range names {
			n[name]++
		}
	}
	return n, handed
}

// Two consumers of one process take different batches: each request is
// handed once, and both work.
func TestConsumersOfOneProcessTakeDifferentBatches(t *testing.T) {
	l := newSharedLog(t, 200)
	ctx, cancel := context.WithCancel(t.Context())
	a, b := l.consumer(t, ctx, "a", nil), l.consumer(t, ctx, "b", nil)
	l.waitDecided(t)
	cancel()
	for _, done := range []<-chan error{a, b} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	n, handed := l.by()
	for _, id := range l.ids {
		if len(handed[id]) != 1 {
			t.Errorf("request %d handed %d times (%v), want once", id, len(handed[id]), handed[id])
		}
	}
	if n["a"] == 0 || n["b"] == 0 {
		t.Errorf("handed a %d, b %d: want both consumers at work", n["a"], n["b"])
	}
}

// A consumer whose batch fails is handed that batch again, while the other
// goes on past it; nothing is lost.
func TestAFailedBatchIsHandedAgainWhileTheOtherConsumerGoesOn(t *testing.T) {
	l := newSharedLog(t, 64)
	var once sync.Once
	var failed []boxoffice.ID
	fail := func(batch []*boxoffice.QueuedRequest) (f bool) {
		once.Do(func() {
			for _, r := range batch {
				failed = append(failed, r.ID)
			}
			f = true
		})
		return f
	}
	ctx, cancel := context.WithCancel(t.Context())
	a, b := l.consumer(t, ctx, "a", fail), l.consumer(t, ctx, "b", nil)
	l.waitDecided(t)
	cancel()
	<-a
	<-b
	_, handed := l.by()
	if len(failed) == 0 {
		t.Fatal("no batch failed")
	}
	for _, id := range failed {
		if got := handed[id]; len(got) != 2 || got[0] != "a" || got[1] != "a" {
			t.Errorf("failed request %d handed to %v, want to a twice", id, got)
		}
	}
	for _, id := range l.ids {
		if len(handed[id]) == 0 {
			t.Errorf("request %d never handed", id)
		}
	}
}

// A consumer that stops with a batch it could not handle gives it back:
// another consumer of the process takes it.
func TestAConsumerThatStopsGivesItsBatchBack(t *testing.T) {
	l := newSharedLog(t, 24)
	actx, stopA := context.WithCancel(t.Context())
	a := l.consumer(t, actx, "a", func([]*boxoffice.QueuedRequest) bool { return true })
	// a takes the first batch and keeps failing it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := l.by(); n["a"] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a was never handed a batch")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopA()
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	b := l.consumer(t, ctx, "b", nil)
	l.waitDecided(t)
	cancel()
	<-b
	_, handed := l.by()
	for _, id := range l.ids {
		if got := handed[id]; len(got) == 0 || got[len(got)-1] != "b" {
			t.Errorf("request %d handed to %v, want b last", id, got)
		}
	}
}

// Two consumers hold in the queue's order: the second batch's holds wait
// for the first's, however long the first takes to get there, while the
// rest of the two batches' work overlaps.
func TestConsumersHoldInTheQueueOrder(t *testing.T) {
	l := newSharedLog(t, 64)
	first := l.ids[0]
	var (
		mu    sync.Mutex
		order []int64 // each batch's first position, in the order they held
	)
	handler := func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
		if batch[0].ID == first {
			time.Sleep(50 * time.Millisecond) // a slow read before the holds
		}
		turn := boxoffice.HoldTurnOf(ctx)
		if turn == nil {
			return errors.New("no turn to hold")
		}
		if err := turn.Wait(ctx); err != nil {
			return err
		}
		mu.Lock()
		order = append(order, batch[0].Position)
		mu.Unlock()
		turn.Done()
		return l.reject(ctx, batch)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- l.q.Consume(ctx, handler) }()
	}
	l.waitDecided(t)
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 64/8 {
		t.Fatalf("%d batches held, want %d: %v", len(order), 64/8, order)
	}
	for i := 1; i < len(order); i++ {
		if order[i] < order[i-1] {
			t.Fatalf("batches held out of the queue's order: %v", order)
		}
	}
}
