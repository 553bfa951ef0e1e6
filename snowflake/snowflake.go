// Package snowflake generates Snowflake-style 64-bit ids: 41 bits of
// milliseconds since Epoch, 10 bits of node id, 12 bits of sequence.
// Ids from one generator are strictly increasing, also when the wall clock
// steps back (an NTP correction, a VM migration): the generator then keeps
// counting on from the last millisecond it used instead of going back.
//
// Two kinds of generator:
//
//   - New: a fixed node id, never fails. Ids are unique as long as no other
//     process uses the same node id at the same time and no restart of this
//     node goes back in time: fine for one embedded process and for tests,
//     the operator's job otherwise.
//   - NewLeased: the node id and the range of milliseconds the generator may
//     use come from a Lease (package postgres implements one on a table).
//
// # Why leased ids never repeat
//
// An id is (ms, node, seq). One generator never repeats a (ms, seq) pair of
// its own: it only moves forward. So a repeat needs two holders of the
// same node id, one after the other (a lease that expired while its
// process was paused or cut off, a process restarted with its clock set
// back). The lease gives every holder a window of milliseconds, and the
// windows of successive holders of one node id do not overlap:
//
//   - The lease store keeps, per node id, a reserved mark R that never goes
//     down. A holder uses a millisecond only up to its Ceiling, and a
//     ceiling is granted only after a write that set R >= Ceiling committed
//     while this holder was still the holder of record (a write that finds
//     another holder changes nothing and reports the lease lost).
//   - A new holder takes the node id in a write that reads R under the same
//     row lock, after every such write of the previous holders, and gets
//     Floor = R. Its generator issues only milliseconds > Floor.
//
// Hence every millisecond of the old holders is <= Floor < every
// millisecond of the new one, whatever the wall clocks say, even if the
// old holder is still running (paused past its lease, cut off from the
// database) and issues a few more ids: it cannot pass its last ceiling.
// Time-based exclusion (Grant fails once the lease's validity, measured on
// the monotonic clock, is over) keeps two live processes from sharing a
// node id at all; the windows are what make ids unique even if it did not.
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
	// TimeShift is where the time part of an id starts.
	TimeShift = nodeBits + seqBits
)

// Millis is t as milliseconds since Epoch, the time part of an id.
func Millis(t time.Time) int64 { return t.Sub(Epoch).Milliseconds() }

// Grant is what a Lease currently allows a generator.
type Grant struct {
	// Node is the node id.
	Node int
	// Term changes whenever the lease is acquired anew (possibly the same
	// node id again, after losing it): the generator then starts over
	// above Floor.
	Term uint64
	// Floor: every id of this term has its milliseconds > Floor (the
	// previous holders of Node used at most Floor).
	Floor int64
	// Ceiling: no id may have its milliseconds > Ceiling (what the lease
	// store has reserved for this holder). It only grows within a term.
	Ceiling int64
}

// A Lease is where a leased generator gets its node id and the window of
// milliseconds it may use. Package postgres implements it.
type Lease interface {
	// Grant returns the current grant, or an error (EUNAVAILABLE) when the
	// lease is not held or its validity is over at this moment.
	Grant() (Grant, error)
	// Reached tells the lease the latest millisecond the generator used or
	// wants to use, so that its renewals reserve beyond it. A millisecond
	// past the grant's Ceiling asks for a renewal soon.
	Reached(ms int64)
}

// Generator hands out ids for one node. It is safe for concurrent use.
type Generator struct {
	now   func() time.Time
	lease Lease // nil: a fixed node

	mu   sync.Mutex
	node int64
	term uint64
	last int64 // milliseconds since Epoch of the last id
	seq  int64
}

var _ boxoffice.IDGenerator = (*Generator)(nil)

// New returns a generator for the fixed node (0..MaxNode); its NextID
// never fails. now is the clock; nil means time.Now.
func New(node int, now func() time.Time) (*Generator, error) {
	if node < 0 || node > MaxNode {
		return nil, fmt.Errorf("snowflake: node %d out of range 0..%d", node, MaxNode)
	}
	if now == nil {
		now = time.Now
	}
	return &Generator{node: int64(node), now: now}, nil
}

// NewLeased returns a generator whose node id and window come from lease:
// NextID fails with the lease's error while the lease is not valid, and
// with EUNAVAILABLE when the next id would pass the granted ceiling. now is
// the clock; nil means time.Now.
func NewLeased(lease Lease, now func() time.Time) *Generator {
	if now == nil {
		now = time.Now
	}
	return &Generator{now: now, lease: lease}
}

// NextID returns the next id. A fixed generator never fails; a leased one
// fails (EUNAVAILABLE) while it cannot confirm its node id and window.
func (g *Generator) NextID() (boxoffice.ID, error) {
	ms := Millis(g.now())
	g.mu.Lock()
	defer g.mu.Unlock()
	ceiling := int64(-1)
	if g.lease != nil {
		gr, err := g.lease.Grant()
		if err != nil {
			return 0, err
		}
		if gr.Node < 0 || gr.Node > MaxNode {
			return 0, boxoffice.Errorf(boxoffice.EINTERNAL, "snowflake: leased node %d out of range", gr.Node)
		}
		if gr.Term != g.term {
			// A new holder: start strictly above the floor, and above our
			// own last id so ours keep increasing.
			g.term, g.node = gr.Term, int64(gr.Node)
			g.last = max(g.last, gr.Floor)
			g.seq = seqMask // the next id moves on to a later millisecond
		}
		ceiling = gr.Ceiling
	}
	last, seq := g.last, g.seq
	if ms > last {
		last, seq = ms, 0
	} else {
		// Same millisecond, or the clock went back: count on from the last
		// millisecond used; on sequence overflow borrow the next one.
		seq++
		if seq > seqMask {
			last++
			seq = 0
		}
	}
	if g.lease != nil {
		g.lease.Reached(last)
		if last > ceiling {
			return 0, boxoffice.Errorf(boxoffice.EUNAVAILABLE,
				"ids are reserved up to %d ms, the clock reads %d: waiting for the node id lease to reserve more", ceiling, last)
		}
	}
	g.last, g.seq = last, seq
	return boxoffice.ID(last<<(nodeBits+seqBits) | g.node<<seqBits | seq), nil
}

// Parts splits an id into its time, node and sequence.
func Parts(id boxoffice.ID) (t time.Time, node, seq int) {
	v := int64(id)
	ms := v >> (nodeBits + seqBits)
	return Epoch.Add(time.Duration(ms) * time.Millisecond), int(v >> seqBits & MaxNode), int(v & seqMask)
}

// OnDay returns id moved to t's day (UTC): its time part becomes the
// start of that day plus the time of day at which id was minted; its node
// and sequence are kept. An event's id is one (sale.Catalog), so that a
// range of event ids is a range of show days and storage can be
// partitioned by show month on the id alone. Such ids are unique only as
// far as the caller makes them: two ids minted at the same time of day on
// different days, with the same node and sequence, collide when moved to
// the same day, and the store's unique key tells the caller to draw again
// (a new id, minted at another millisecond).
func OnDay(id boxoffice.ID, t time.Time) boxoffice.ID {
	const day = 24 * 60 * 60 * 1000
	u := t.UTC()
	start := max(Millis(time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)), 0)
	ms := start + IDMillis(id)%day
	return boxoffice.ID(ms<<TimeShift | int64(id)&(1<<TimeShift-1))
}

// IDMillis returns the time part of an id: milliseconds since Epoch.
func IDMillis(id boxoffice.ID) int64 { return int64(id) >> (nodeBits + seqBits) }

// NodeOf returns the node id part of an id.
func NodeOf(id boxoffice.ID) int { return int(int64(id) >> seqBits & MaxNode) }

// WithNode returns id with its node id part replaced by node (0..MaxNode);
// time and sequence are kept. A sharded store (postgres.Sharded) mints an
// event's rows' ids this way, so that the node id names the event's shard:
// ids minted by one generator stay unique under it as long as each
// generator's own node id is kept in the low bits the mapping preserves.
func WithNode(id boxoffice.ID, node int) boxoffice.ID {
	const mask = int64(MaxNode) << seqBits
	return boxoffice.ID(int64(id)&^mask | int64(node&MaxNode)<<seqBits)
}
