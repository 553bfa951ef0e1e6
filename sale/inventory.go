package sale

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
	"github.com/boxoffice/boxoffice/layout"
)

// The inventory of an event is how many of its seats are available (not
// held, not sold), in all and per section and price tier, counted from the
// seat map at most inventoryTTL old. It is what makes "sold out" an answer
// given at once: the front door refuses a queued sale's new requests
// instead of answering 202, every request queued before the sell-out is
// told (QueueState.MarkSoldOut, read by every status), and the drain
// refuses them without touching a seat. Seats that come back are held for
// the waitlist first (HandoverGrace), so they count as taken until they
// are free to anyone.
//
// It is a count, not a promise: a request the inventory lets through may
// still find its seats taken (the lock layer decides), and a seat freed
// less than inventoryTTL ago may not be counted yet.
type inventory struct {
	at   time.Time
	left map[ask]int // available seats per (section, tier), "" for any
	// failed: the seat map could not be read at this time; nothing is
	// known, and nobody asks again before inventoryTTL has passed.
	failed error
}

// ask is what a request wants seats of: a section, a price tier, either or
// neither ("" for any).
type ask struct{ section, tier string }

// inventoryTTL bounds the age of an inventory, and so how late a sell-out
// is noticed.
const inventoryTTL = time.Second

// inventoryWait bounds how long a count waits for the seat map: the front
// door must not wait on a database that is down (it does not need one).
const inventoryWait = 500 * time.Millisecond

// inventories keeps the entries of the Config.CacheEvents events counted
// last.
type inventories struct {
	mu sync.Mutex
	ev *lru.Cache[boxoffice.ID, *inventoryEntry]
}

type inventoryEntry struct {
	counting sync.Mutex // one count at a time per event
	inv      atomic.Pointer[inventory]
}

// result is what an inventory answers: itself, or the failure it keeps.
func (inv *inventory) result() (*inventory, error) {
	if inv.failed != nil {
		return nil, inv.failed
	}
	return inv, nil
}

// inventory returns the event's inventory, counted again when it is older
// than inventoryTTL; nil without a seat map to count from. While one
// caller counts, the others go on with the previous count if it is not
// older than the count may take more (inventoryWait): the front door
// never queues behind a count (readThrough).
func (s *core) inventory(ctx context.Context, l *layout.Layout) (*inventory, error) {
	if s.avail == nil {
		return nil, nil
	}
	s.invs.mu.Lock()
	e, _ := s.invs.ev.Get(l.Event.ID)
	if e == nil {
		e = &inventoryEntry{}
		s.invs.ev.Add(l.Event.ID, e)
	}
	s.invs.mu.Unlock()

	youngerThan := func(d time.Duration) (*inventory, bool) {
		cur := e.inv.Load()
		return cur, cur != nil && time.Since(cur.at) < d
	}
	inv, err := readThrough(&e.counting, youngerThan, inventoryTTL, inventoryTTL+inventoryWait,
		func() (*inventory, error) { return s.countInventory(ctx, l, e) })
	if err != nil || inv == nil {
		return nil, err
	}
	return inv.result()
}

// countInventory counts the event's inventory from the seat map and keeps
// it in e, or keeps the failure; nil without an error for a map of another
// layout.
func (s *core) countInventory(ctx context.Context, l *layout.Layout, e *inventoryEntry) (*inventory, error) {
	now := time.Now()
	wctx, cancel := context.WithTimeout(ctx, inventoryWait)
	statuses, err := s.avail.Statuses(wctx, l.Event.ID, inventoryTTL)
	cancel()
	if err != nil {
		// Remembered for a second, so that a failing store costs one
		// attempt a second per event, not one per request.
		e.inv.Store(&inventory{at: now, failed: err})
		return nil, err
	}
	if len(statuses) != l.Len() {
		return nil, nil // a map of another layout: do not guess
	}
	inv := &inventory{at: now, left: map[ask]int{{}: 0}}
	for _, sec := range l.Sections() {
		free := 0
		for _, st := range statuses[sec.First : sec.First+sec.Len()] {
			if st == layout.Available {
				free++
			}
		}
		if free == 0 {
			continue
		}
		inv.left[ask{}] += free
		inv.left[ask{section: sec.Name}] += free
		inv.left[ask{tier: sec.PriceTier}] += free
		inv.left[ask{sec.Name, sec.PriceTier}] += free
	}
	e.inv.Store(inv)
	return inv, nil
}

// soldOut reports whether nothing is left of the event.
func (inv *inventory) soldOut() bool { return inv != nil && inv.left[ask{}] == 0 }

// short returns the sold-out answer to a best-available ask that fewer
// seats are left for than it wants, nil otherwise.
func (inv *inventory) short(eventID boxoffice.ID, b *boxoffice.BestAvailable) error {
	if inv == nil || b == nil {
		return nil
	}
	left := inv.left[ask{b.Section, b.PriceTier}]
	if left >= b.Quantity {
		return nil
	}
	where := "for this event"
	switch {
	case b.Section != "" && b.PriceTier != "":
		where = fmt.Sprintf("in section %s at tier %s", b.Section, b.PriceTier)
	case b.Section != "":
		where = "in section " + b.Section
	case b.PriceTier != "":
		where = "at tier " + b.PriceTier
	}
	return boxoffice.SoldOutError(eventID, fmt.Sprintf("only %d seats are left %s, %d asked for", left, where, b.Quantity))
}

// errSoldOut is the answer to a request of a sold-out event.
func errSoldOut(eventID boxoffice.ID) error {
	return boxoffice.SoldOutError(eventID, "sold out: every seat is held or sold; the waitlist is open")
}

// soldOutMark returns the event's queue progress with the positions the
// sell-out answers (QueueProgress.SoldOut): the recorded mark, raised to
// every position given so far when the inventory now shows nothing left.
// An inventory or a queue that cannot be read leaves the mark as it is.
func (s *core) soldOutMark(ctx context.Context, l *layout.Layout, prog boxoffice.QueueProgress) boxoffice.QueueProgress {
	inv, err := s.inventory(ctx, l)
	if err != nil || !inv.soldOut() || prog.AllSoldOut() {
		return prog
	}
	upTo, err := s.queue.MarkSoldOut(ctx, l.Event.ID)
	if err != nil {
		return prog
	}
	if len(prog.Slots) == 0 {
		// One sequence: the mark says it all, no read needed.
		prog.SoldOutUpTo = upTo
		return prog
	}
	if marked, err := s.queue.Progress(ctx, l.Event.ID); err == nil {
		return marked
	}
	return prog
}
