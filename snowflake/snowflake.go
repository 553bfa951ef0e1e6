// Package snowflake generates Snowflake-style 64-bit ids: 41 bits of
// milliseconds since Epoch, 10 bits of node id, 12 bits of sequence.
// Ids from one generator are strictly increasing, also when the wall clock
// steps back (an NTP correction, a VM migration): the generator then keeps
// counting on from the last millisecond it used instead of going back, and
// the ids stay unique because no other node shares its node bits.
package snowflake

import (
	"fmt"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Epoch is 2025-01-01T00:00:00Z; 41 bits of milliseconds last until 2094.
var Epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	nodeBits = 10
	seqBits  = 12
	// MaxNode is the largest node id.
	MaxNode = 1<<nodeBits - 1
	seqMask = 1<<seqBits - 1
)

// Generator hands out ids for one node. It is safe for concurrent use.
type Generator struct {
	node int64
	now  func() time.Time

	mu   sync.Mutex
	last int64 // milliseconds since Epoch of the last id
	seq  int64
}

var _ boxoffice.IDGenerator = (*Generator)(nil)

// New returns a generator for node (0..MaxNode). now is the clock; nil
// means time.Now.
func New(node int, now func() time.Time) (*Generator, error) {
	if node < 0 || node > MaxNode {
		return nil, fmt.Errorf("snowflake: node %d out of range 0..%d", node, MaxNode)
	}
	if now == nil {
		now = time.Now
	}
	return &Generator{node: int64(node), now: now}, nil
}

// NextID returns the next id.
func (g *Generator) NextID() boxoffice.ID {
	ms := g.now().Sub(Epoch).Milliseconds()
	g.mu.Lock()
	if ms > g.last {
		g.last, g.seq = ms, 0
	} else {
		// Same millisecond, or the clock went back: count on from the last
		// millisecond used; on sequence overflow borrow the next one.
		g.seq++
		if g.seq > seqMask {
			g.last++
			g.seq = 0
		}
	}
	id := g.last<<(nodeBits+seqBits) | g.node<<seqBits | g.seq
	g.mu.Unlock()
	return boxoffice.ID(id)
}

// Parts splits an id into its time, node and sequence.
func Parts(id boxoffice.ID) (t time.Time, node, seq int) {
	v := int64(id)
	ms := v >> (nodeBits + seqBits)
	return Epoch.Add(time.Duration(ms) * time.Millisecond), int(v >> seqBits & MaxNode), int(v & seqMask)
}
