package combine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/internal/inflight"
)

// blocking is a do func that holds each batch until released, recording
// the batches it was given.
type blocking struct {
	mu      sync.Mutex
	batches [][]int
	started chan int // a batch's size, as it starts
	release chan struct{}
	err     error
}

func newBlocking() *blocking {
	return &blocking{started: make(chan int, 100), release: make(chan struct{})}
}

func (b *blocking) do(ctx context.Context, in []int) ([]int, error) {
	b.mu.Lock()
	b.batches = append(b.batches, append([]int(nil), in...))
	b.mu.Unlock()
	b.started <- len(in)
	<-b.release
	if b.err != nil {
		return nil, b.err
	}
	out := make([]int, len(in))
	for i, v := range in {
		out[i] = v * 10
	}
	return out, nil
}

// waitQueued waits until n calls are queued behind the running batches.
func waitQueued[In, Out any](t *testing.T, c *Combiner[In, Out], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		q := len(c.queue)
		c.mu.Unlock()
		if q == n {
			return
		}
	}
	t.Fatalf("never saw %d queued calls", n)
}

// Calls that arrive while a batch runs go together in the next one, up to
// maxBatch, each answered with its own result.
func TestCallsQueuedMeanwhileFormTheNextBatch(t *testing.T) {
	b := newBlocking()
	c := New(b.do, 1, 4)
	var wg sync.WaitGroup
	results := make([]int, 7)
	call := func(i int) {
		defer wg.Done()
		out, err := c.Call(context.Background(), i)
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
		results[i] = out
	}
	wg.Add(1)
	go call(0)
	if n := <-b.started; n != 1 {
		t.Fatalf("first batch of %d, want 1 (a call that finds a runner free goes alone)", n)
	}
	for i := 1; i < 7; i++ {
		wg.Add(1)
		go call(i)
	}
	waitQueued(t, c, 6)
	close(b.release)
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.batches) != 3 || len(b.batches[1]) != 4 || len(b.batches[2]) != 2 {
		t.Errorf("batches %v, want sizes 1, 4 (maxBatch), 2", b.batches)
	}
	for i, r := range results {
		if r != i*10 {
			t.Errorf("call %d got %d, want %d", i, r, i*10)
		}
	}
}

// A caller that gives up before its batch starts returns at once with its
// context's error and is left out of the batch; a batch's error answers all.
func TestGivenUpCallsAreLeftOutAndErrorsReachAll(t *testing.T) {
	b := newBlocking()
	b.err = errors.New("store down")
	c := New(b.do, 1, 10)
	errs := make(chan error, 3)
	go func() { _, err := c.Call(context.Background(), 1); errs <- err }()
	<-b.started
	gone, cancel := context.WithCancel(context.Background())
	go func() { _, err := c.Call(gone, 2); errs <- err }()
	go func() { _, err := c.Call(context.Background(), 3); errs <- err }()
	waitQueued(t, c, 2)
	cancel()
	// The given-up caller leaves the queue while the batch ahead of it is
	// still held, not when a runner comes free.
	select {
	case err := <-errs:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("first answer %v, want the given-up caller's context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the given-up caller still waits behind the held batch")
	}
	waitQueued(t, c, 1)
	close(b.release)
	canceled, failed := 1, 0
	for range 2 {
		switch err := <-errs; {
		case errors.Is(err, context.Canceled):
			canceled++
		case err != nil && err.Error() == "store down":
			failed++
		default:
			t.Errorf("unexpected answer %v", err)
		}
	}
	if canceled != 1 || failed != 2 {
		t.Errorf("%d canceled, %d failed; want 1 and 2", canceled, failed)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.batches) != 2 || len(b.batches[1]) != 1 || b.batches[1][0] != 3 {
		t.Errorf("batches %v, want [[1] [3]]", b.batches)
	}
}

// A caller whose batch has been taken but not started yet, and who gives
// up meanwhile, is answered by runBatch with its context's error: many
// callers giving up at once never leave a batch with a hole or a double
// answer.
func TestManyCallersGivingUpWhileQueued(t *testing.T) {
	b := newBlocking()
	c := New(b.do, 1, 8)
	go func() { _, _ = c.Call(context.Background(), -1) }()
	<-b.started
	const n = 200
	type answer struct {
		i   int
		out int
		err error
	}
	answers := make(chan answer, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[i] = cancel
		go func() { out, err := c.Call(ctx, i); answers <- answer{i, out, err} }()
	}
	waitQueued(t, c, n)
	// Every other caller gives up, while the runner is released: some
	// leave the queue, some are left out by runBatch.
	go func() {
		for i := 0; i < n; i += 2 {
			cancels[i]()
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-b.started:
			case <-stop:
				return
			}
		}
	}()
	close(b.release)
	for range n {
		a := <-answers
		switch {
		case a.err == nil && a.out != a.i*10:
			t.Errorf("call %d answered %d", a.i, a.out)
		case a.err != nil && (a.i%2 == 1 || !errors.Is(a.err, context.Canceled)):
			t.Errorf("call %d: %v", a.i, a.err)
		}
	}
	for _, cancel := range cancels {
		cancel()
	}
	waitQueued(t, c, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[int]bool{}
	for _, batch := range b.batches[1:] {
		for _, v := range batch {
			if seen[v] {
				t.Errorf("call %d ran twice", v)
			}
			seen[v] = true
		}
	}
	for i := 1; i < n; i += 2 {
		if !seen[i] {
			t.Errorf("call %d never ran", i)
		}
	}
}

// A call gives back its request's place among those handled at once
// (inflight) while it waits for its batch, once.
func TestCallLeavesItsPlaceWhileWaiting(t *testing.T) {
	b := newBlocking()
	c := New(b.do, 1, 10)
	left := make(chan struct{}, 2)
	ctx, _ := inflight.With(context.Background(), func() { left <- struct{}{} })
	done := make(chan int)
	go func() {
		out, err := c.Call(ctx, 7)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	<-b.started
	select {
	case <-left: // before the batch is done
	case <-time.After(10 * time.Second):
		close(b.release)
		t.Fatal("the place was kept while waiting for the batch")
	}
	close(b.release)
	if out := <-done; out != 70 {
		t.Errorf("answer %d, want 70", out)
	}
	inflight.Leave(ctx)
	select {
	case <-left:
		t.Error("the place was given back twice")
	default:
	}
}
