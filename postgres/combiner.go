package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// bookingCombiner is the group commit of concurrent CreateBooking calls:
// the bookings that arrive while others are being written are written
// together, in one CreateBookings transaction, so that a burst of reserves
// costs a few commits (and a few round trips each) instead of one of each
// per booking, and the disk's flush rate stops bounding bookings per
// second.
//
// There is no timer: a booking that finds a runner free is written at once,
// alone. Up to runners batches are written at a time (each its own
// transaction, on its own connection); the bookings that queue meanwhile
// form the next batch, up to maxBatch. A caller that gives up (its context
// done) before its batch starts is answered with its context's error and is
// left out; once its batch runs, it is written or not with the others.
//
// Each booking keeps the answer it would have had alone: CreateBookings
// decides a batch as if its bookings were written one after the other.
type bookingCombiner struct {
	write    func(ctx context.Context, nbs []boxoffice.NewBooking) ([]error, error)
	runners  int
	maxBatch int

	mu      sync.Mutex
	queue   []*bookingCall
	running int
}

// batchTimeout bounds one batch's transaction.
const batchTimeout = 30 * time.Second

type bookingCall struct {
	ctx  context.Context
	nb   boxoffice.NewBooking
	err  error
	done chan struct{}
}

// create writes nb with the next batch and returns its answer.
func (c *bookingCombiner) create(ctx context.Context, nb boxoffice.NewBooking) error {
	call := &bookingCall{ctx: ctx, nb: nb, done: make(chan struct{})}
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
	<-call.done
	return call.err
}

// run writes batches until the queue is empty, on a goroutine of its own:
// under a steady load it may run for long, and no caller waits for more
// than its own batch.
func (c *bookingCombiner) run() {
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
		c.write1(batch)
	}
}

func (c *bookingCombiner) write1(batch []*bookingCall) {
	live := batch[:0:0]
	nbs := make([]boxoffice.NewBooking, 0, len(batch))
	for _, call := range batch {
		if err := call.ctx.Err(); err != nil {
			call.err = err
			close(call.done)
			continue
		}
		live, nbs = append(live, call), append(nbs, call.nb)
	}
	if len(live) == 0 {
		return
	}
	// The batch is written under no caller's context: one caller leaving
	// must not roll back the others' bookings. It may take as long as the
	// most patient of them allows, up to batchTimeout.
	deadline := time.Now().Add(batchTimeout)
	if latest, ok := latestDeadline(live); ok && latest.Before(deadline) {
		deadline = latest
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(live[0].ctx), deadline)
	errs, err := c.write(ctx, nbs)
	cancel()
	for i, call := range live {
		if err != nil {
			call.err = err
		} else {
			call.err = errs[i]
		}
		close(call.done)
	}
}

// latestDeadline is the latest deadline of the calls, if every one has one.
func latestDeadline(calls []*bookingCall) (time.Time, bool) {
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
