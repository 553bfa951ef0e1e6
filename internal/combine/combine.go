// Package combine runs concurrent calls of one kind together, as batches:
// the group commit of the stores and the front door's batched admission.
package combine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice/internal/inflight"
)

// Combiner runs concurrent calls of one kind together: the calls that
// arrive while others are running are handed to do as one batch. It is the
// group commit of PostgreSQL's CreateBooking (a burst of reserves costs a
// few CreateBookings transactions, a few round trips and one commit each,
// instead of one of each per booking, so the disk's flush rate stops
// bounding bookings per second), the batching of idempotency look-ups
// (one statement for many, where the statement's fixed cost in the server
// is most of a primary-key read's) and the front door's batched admission.
//
// There is no timer: a call that finds a runner free runs at once, alone.
// Up to runners batches run at a time (each on its own connection); the
// calls that queue meanwhile form the next batch, up to maxBatch. A caller
// that gives up (its context done) before its batch starts returns at once
// with its context's error and is left out; once its batch runs, it is
// done or not with the others. do answers each call of the batch (out[i]), or
// the whole batch with err.
type Combiner[In, Out any] struct {
	do       func(ctx context.Context, in []In) (out []Out, err error)
	runners  int
	maxBatch int

	mu      sync.Mutex
	queue   []*combinedCall[In, Out]
	running int
}

// New returns a Combiner that runs up to runners batches of up to maxBatch
// calls at a time through do.
func New[In, Out any](do func(ctx context.Context, in []In) ([]Out, error), runners, maxBatch int) *Combiner[In, Out] {
	return &Combiner[In, Out]{do: do, runners: max(runners, 1), maxBatch: max(maxBatch, 1)}
}

// batchTimeout bounds one batch.
const batchTimeout = 30 * time.Second

type combinedCall[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{}
}

// Call runs in with the next batch and returns its answer.
func (c *Combiner[In, Out]) Call(ctx context.Context, in In) (Out, error) {
	call := &combinedCall[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, call)
	run := c.running < c.runners
	if run {
		c.running++
	}
	c.mu.Unlock()
	if run {
		go c.run()
	}
	// Waiting for the batch uses no CPU: the request's place among those
	// the process handles at once goes to the next.
	inflight.Leave(ctx)
	select {
	case <-call.done:
		return call.out, call.err
	case <-ctx.Done():
	}
	// Given up while queued: leave at once rather than wait for a runner
	// that may be held by a slow batch for up to batchTimeout.
	c.mu.Lock()
	i := slices.Index(c.queue, call)
	if i >= 0 {
		c.queue = slices.Delete(c.queue, i, i+1)
	}
	c.mu.Unlock()
	if i >= 0 {
		var zero Out
		return zero, ctx.Err()
	}
	// A batch has taken it: its answer is that batch's (runBatch answers
	// it with ctx's error if the batch has not started yet).
	<-call.done
	return call.out, call.err
}

// run runs batches until the queue is empty, on a goroutine of its own:
// under a steady load it may run for long, and no caller waits for more
// than its own batch.
func (c *Combiner[In, Out]) run() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.running--
			c.mu.Unlock()
			return
		}
		n := min(len(c.queue), c.maxBatch)
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()
		c.runBatch(batch)
	}
}

func (c *Combiner[In, Out]) runBatch(batch []*combinedCall[In, Out]) {
	live := batch[:0:0]
	in := make([]In, 0, len(batch))
	for _, call := range batch {
		if err := call.ctx.Err(); err != nil {
			call.err = err
			close(call.done)
			continue
		}
		live, in = append(live, call), append(in, call.in)
	}
	if len(live) == 0 {
		return
	}
	// The batch runs under no caller's context: one caller leaving must
	// not roll back the others' writes. It may take as long as the most
	// patient of them allows, up to batchTimeout.
	deadline := time.Now().Add(batchTimeout)
	if latest, ok := latestDeadline(live); ok && latest.Before(deadline) {
		deadline = latest
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(live[0].ctx), deadline)
	out, err := c.do(ctx, in)
	cancel()
	for i, call := range live {
		if err != nil {
			call.err = err
		} else {
			call.out = out[i]
		}
		close(call.done)
	}
}

// latestDeadline is the latest deadline of the calls, if every one has one.
func latestDeadline[In, Out any](calls []*combinedCall[In, Out]) (time.Time, bool) {
	var latest time.Time
	for _, call := range calls {
		d, ok := call.ctx.Deadline()
		if !ok {
			return time.Time{}, false
		}
		if d.After(latest) {
			latest = d
		}
	}
	return latest, true
}
