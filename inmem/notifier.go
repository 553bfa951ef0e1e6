package inmem

import (
	"context"
	"sync"

	"github.com/boxoffice/boxoffice"
)

// Notifier is boxoffice.Notifier within one process.
type Notifier struct {
	mu   sync.Mutex
	subs map[int]*subscription
	next int
}

// subscription is one Listen. Its mutex is held around every call of fn,
// so that Listen, setting done under it before it returns, never returns
// while a Notify that found it still calls fn, nor lets one call it after.
type subscription struct {
	mu   sync.Mutex
	done bool
	fn   func(boxoffice.QueueNotice)
}

var _ boxoffice.Notifier = (*Notifier)(nil)

// NewNotifier returns a notifier without listeners.
func NewNotifier() *Notifier { return &Notifier{subs: map[int]*subscription{}} }

// Notify calls every listener with each notice, in the caller's goroutine.
// A listener's fn is called by one Notify at a time, so it must not call
// Notify itself.
func (n *Notifier) Notify(ctx context.Context, notices ...boxoffice.QueueNotice) error {
	if len(notices) == 0 {
		return nil
	}
	n.mu.Lock()
	subs := make([]*subscription, 0, len(n.subs))
	for _, s := range n.subs {
		subs = append(subs, s)
	}
	n.mu.Unlock()
	for _, s := range subs {
		s.mu.Lock()
		if !s.done {
			for _, notice := range notices {
				s.fn(notice)
			}
		}
		s.mu.Unlock()
	}
	return nil
}

// Listen calls fn with every notice until ctx ends. Once it has returned,
// fn is not called again.
func (n *Notifier) Listen(ctx context.Context, fn func(boxoffice.QueueNotice)) error {
	s := &subscription{fn: fn}
	n.mu.Lock()
	id := n.next
	n.next++
	n.subs[id] = s
	n.mu.Unlock()
	<-ctx.Done()
	n.mu.Lock()
	delete(n.subs, id)
	n.mu.Unlock()
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	return nil
}
