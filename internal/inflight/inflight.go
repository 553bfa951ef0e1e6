// Package inflight lets a request give back its place among those a
// process handles at once (httpapi's Limits.InFlight) when it stops using
// the CPU to wait for others: a call waiting for its batch's group commit
// holds no place another request could use.
package inflight

import (
	"context"
	"sync"
)

type key struct{}

// Place is a request's place among those handled at once.
type Place struct {
	once sync.Once
	free func()
}

// With returns ctx carrying a place that free gives back, and the place.
func With(ctx context.Context, free func()) (context.Context, *Place) {
	p := &Place{free: free}
	return context.WithValue(ctx, key{}, p), p
}

// Leave gives the place back; later calls do nothing.
func (p *Place) Leave() { p.once.Do(p.free) }

// Leave gives back the place ctx's request holds, if any: call it before
// waiting on others (a batch, a group commit). The request goes on
// without a place; what is left of it should be little work.
func Leave(ctx context.Context) {
	if p, ok := ctx.Value(key{}).(*Place); ok {
		p.Leave()
	}
}
