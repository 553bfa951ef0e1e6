package sale

import (
	"context"
	"sync"

	"github.com/boxoffice/boxoffice"
)

// A confirm answers once its tickets are written; the capture (the
// gateway's capture, then Store.MarkCaptured) runs after the answer, so
// the buyer does not wait for a gateway call and a commit that change
// nothing they are told. A capture is already allowed to fail and be
// redone by the reconciler (a payment left authorized a minute after its
// confirm), so running it later adds no new state: a process that dies
// first leaves what a failed capture leaves.
//
// In this process a capture of a booking finishes before that booking's
// cancellation starts (Cancel waits for it), so a cancel right after the
// confirm refunds a captured payment, as when the capture ran first.
// Another process's cancel may still come first and meet an authorization
// not yet captured: a gateway that releases it then makes the late capture
// fail (nothing charged); one that refuses leaves the refund owed, and the
// reconciler retries it after the capture, as when a capture failed.

// maxBackgroundCaptures bounds the captures running after their answers;
// past it a confirm captures before answering, as it did before: a slow
// gateway then slows confirms instead of piling up goroutines.
const maxBackgroundCaptures = 1024

// captures runs the captures started after their confirms' answers.
type captures struct {
	max int // the most running at once

	mu      sync.Mutex
	running map[boxoffice.ID]chan struct{} // booking -> closed when its capture ends
}

// newCaptures returns captures that run at most max in the background.
func newCaptures(max int) *captures {
	return &captures{max: max, running: map[boxoffice.ID]chan struct{}{}}
}

// start runs capture for booking in the background, or at once when max
// are running.
func (c *captures) start(booking boxoffice.ID, capture func()) {
	c.mu.Lock()
	if len(c.running) >= c.max {
		c.mu.Unlock()
		capture()
		return
	}
	done := make(chan struct{})
	c.running[booking] = done
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			if c.running[booking] == done {
				delete(c.running, booking)
			}
			c.mu.Unlock()
			close(done)
		}()
		capture()
	}()
}

// wait returns once booking's capture in this process (if any) has
// ended, or ctx has.
func (c *captures) wait(ctx context.Context, booking boxoffice.ID) {
	c.mu.Lock()
	done := c.running[booking]
	c.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// WaitCaptures returns once the captures running after their confirms'
// answers when it is called have ended, or ctx has (then ctx's error): a
// process stopping calls it after its last request, so that it leaves
// none to the reconciler.
func (s *Service) WaitCaptures(ctx context.Context) error {
	c := s.core.captures
	c.mu.Lock()
	running := make([]chan struct{}, 0, len(c.running))
	for _, done := range c.running {
		running = append(running, done)
	}
	c.mu.Unlock()
	for _, done := range running {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
