package inmem

import (
	"context"
	"sync"

	"github.com/boxoffice/boxoffice"
)

// Notifier is boxoffice.Notifier within one process.
type Notifier struct {
	mu   sync.Mutex
	subs map[int]func(boxoffice.QueueNotice)
	next int
}

var _ boxoffice.Notifier = (*Notifier)(nil)

// NewNotifier returns a notifier without listeners.
func NewNotifier() *Notifier { return &Notifier{subs: map[int]func(boxoffice.QueueNotice){}} }

// Notify calls every listener with each notice, in the caller's goroutine.
func (n *Notifier) Notify(ctx context.Context, notices ...boxoffice.QueueNotice) error {
	n.mu.Lock()
	fns := make([]func(boxoffice.QueueNotice), 0, len(n.subs))
	for _, fn := range n.subs {
		fns = append(fns, fn)
	}
	n.mu.Unlock()
	for _, notice := range notices {
		for _, fn := range fns {
			fn(notice)
		}
	}
	return nil
}

// Listen calls fn with every notice until ctx ends.
func (n *Notifier) Listen(ctx context.Context, fn func(boxoffice.QueueNotice)) error {
	n.mu.Lock()
	id := n.next
	n.next++
	n.subs[id] = fn
	n.mu.Unlock()
	<-ctx.Done()
	n.mu.Lock()
	delete(n.subs, id)
	n.mu.Unlock()
	return nil
}
