package inmem

import (
	"context"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/boxoffice/boxoffice"
)

// stripeCount is the number of independently locked stripes per event. It
// is 64 so that the stripes a request touches fit in one uint64 mask, which
// also gives the lock order (lowest bit first) for free.
const stripeCount = 64

// Holds is the in-process seat-hold table: boxoffice.Holds with the same
// semantics as the Redis implementation (one key per seat with an expiry,
// all-or-nothing multi-seat grants, check-and-delete release, a per-event
// fence counter incremented by every grant).
//
// Each event has 64 stripes, chosen by a hash of the seat id, each with its
// own mutex, map and expiry heap. A request locks the stripes of its seats in
// increasing order, so requests on disjoint seats rarely meet and requests
// on overlapping seats cannot deadlock. An expired hold is free at once for
// every reader (lazily); Sweep, or Run in the background, reclaims the
// memory and reports the holds that ran out.
//
// The zero value is not usable; call NewHolds. Holds never blocks on I/O, so
// it ignores the contexts it is given.
type Holds struct {
	now  func() time.Time
	base time.Time // times are kept as nanoseconds since base (monotonic with time.Now)
	seed maphash.Seed

	// events holds the tables of the events with live holds: Sweep drops
	// an event's table once it holds nothing, so memory follows the holds,
	// not the events ever held.
	events sync.Map // boxoffice.ID → *eventHolds
	// floor is the largest fence of a dropped table: a table made again
	// counts on from it, so an event's fences never go back.
	floor atomic.Int64
}

var _ boxoffice.Holds = (*Holds)(nil)

// NewHolds returns an empty table on the clock now (nil means time.Now).
func NewHolds(now func() time.Time) *Holds {
	if now == nil {
		now = time.Now
	}
	return &Holds{now: now, base: now(), seed: maphash.MakeSeed()}
}

type eventHolds struct {
	id    boxoffice.ID
	fence atomic.Int64
	// dead marks a table Sweep dropped; set under every stripe's lock, so
	// any one of them is enough to read it. A writer that finds it looks
	// the event up again (Holds.locked).
	dead    bool
	stripes [stripeCount]stripe
}

// seatHold is one seat's entry: held by owner under fence until expires.
type seatHold struct {
	seat    string
	owner   boxoffice.ID
	fence   int64
	expires int64 // nanoseconds since Holds.base
	index   int   // position in stripe.queue
}

type stripeState struct {
	mu    sync.Mutex
	seats map[string]*seatHold
	queue []*seatHold // min-heap on expires
	spare []*seatHold // recycled entries, to keep the hot path free of allocations
	// next mirrors queue[0].expires (math.MaxInt64 when empty) so that a
	// sweep can skip a stripe without taking its lock.
	next atomic.Int64
}

// stripe is padded to two cache lines so neighbouring stripes' locks do
// not share one.
type stripe struct {
	stripeState
	_ [128 - unsafe.Sizeof(stripeState{})%128]byte
}

const maxSpare = 256

// Acquire holds every seat of req for req.TTL, or none of them (see
// boxoffice.Holds). Repeated seat ids count once. The Hold's SeatIDs is
// req.SeatIDs itself unless it had repeats. It returns EINVALID for
// a request without seats or with a TTL that is not positive, and an
// ESEATTAKEN *Error listing, in request order, the seats held by others
// than req.Owner and req.Supersede.
func (h *Holds) Acquire(_ context.Context, req boxoffice.HoldRequest) (boxoffice.Hold, error) {
	if err := req.Check(); err != nil {
		return boxoffice.Hold{}, err
	}
	seats := uniqueSeats(req.SeatIDs)
	now := h.now()
	t := int64(now.Sub(h.base))
	expires := t + int64(req.TTL)

	// Remember each seat's stripe and current entry between the check and
	// the write; a small request (the usual 1-8 seats) needs no allocation.
	var stripeBuf [8]uint8
	var foundBuf [8]*seatHold
	idx, found := stripeBuf[:0], foundBuf[:0]
	if len(seats) > len(stripeBuf) {
		idx, found = make([]uint8, 0, len(seats)), make([]*seatHold, 0, len(seats))
	}
	var mask uint64
	for _, s := range seats {
		i := h.stripeOf(s)
		idx = append(idx, i)
		mask |= 1 << i
	}

	ev := h.locked(req.EventID, mask)
	var taken []string
	for n, s := range seats {
		e := ev.stripes[idx[n]].seats[s]
		if e != nil && e.expires > t && e.owner != req.Owner && (req.Supersede == 0 || e.owner != req.Supersede) {
			if taken == nil {
				taken = make([]string, 0, len(seats)-n)
			}
			taken = append(taken, s)
		}
		found = append(found, e)
	}
	if taken != nil {
		ev.unlock(mask)
		return boxoffice.Hold{}, &boxoffice.Error{
			Code:    boxoffice.ESEATTAKEN,
			Message: "some of the seats are taken",
			Seats:   taken,
		}
	}
	// Incremented under the seats' locks: whoever holds a seat next has to
	// take the same lock afterwards, so it gets a larger fence.
	fence := ev.fence.Add(1)
	for n, s := range seats {
		ev.stripes[idx[n]].put(s, found[n], req.Owner, fence, expires)
	}
	ev.unlock(mask)

	return boxoffice.Hold{
		EventID:   req.EventID,
		SeatIDs:   seats,
		Owner:     req.Owner,
		Fence:     fence,
		ExpiresAt: now.Add(req.TTL),
	}, nil
}

// AcquireMany calls Acquire for each request in turn: each is atomic, and
// in-process there is no round trip to save.
func (h *Holds) AcquireMany(ctx context.Context, reqs []boxoffice.HoldRequest) ([]boxoffice.Hold, []error) {
	holds := make([]boxoffice.Hold, len(reqs))
	errs := make([]error, len(reqs))
	for i, req := range reqs {
		holds[i], errs[i] = h.Acquire(ctx, req)
	}
	return holds, errs
}

// Release frees the seats of seatIDs that owner holds and leaves every
// other seat alone. It returns how many it freed; a hold that has already
// expired is not counted (Sweep reclaims it).
func (h *Holds) Release(_ context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID) (int, error) {
	ev := h.event(eventID, false)
	if ev == nil {
		return 0, nil
	}
	t := h.since()
	freed := 0
	for _, s := range seatIDs {
		st := &ev.stripes[h.stripeOf(s)]
		st.mu.Lock()
		if e := st.seats[s]; e != nil && e.owner == owner && e.expires > t {
			st.remove(e)
			freed++
		}
		st.mu.Unlock()
	}
	return freed, nil
}

// Verify returns nil if owner holds every seat of seatIDs under fence right
// now, and an EHOLDLOST *Error listing the seats it does not hold
// otherwise. An empty seatIDs is EINVALID: there is nothing to prove.
func (h *Holds) Verify(_ context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID, fence int64) error {
	if len(seatIDs) == 0 {
		return boxoffice.Errorf(boxoffice.EINVALID, "nothing to verify: no seats")
	}
	var lost []string
	if ev := h.event(eventID, false); ev == nil {
		lost = seatIDs
	} else {
		var mask uint64
		for _, s := range seatIDs {
			mask |= 1 << h.stripeOf(s)
		}
		t := h.since()
		ev.lock(mask)
		for _, s := range seatIDs {
			e := ev.stripes[h.stripeOf(s)].seats[s]
			if e == nil || e.expires <= t || e.owner != owner || e.fence != fence {
				lost = append(lost, s)
			}
		}
		ev.unlock(mask)
	}
	if lost != nil {
		return &boxoffice.Error{
			Code:    boxoffice.EHOLDLOST,
			Message: "the hold on the seats was lost",
			Seats:   slices.Clone(lost),
		}
	}
	return nil
}

// heldBatch is the request size from which Held groups seats by stripe,
// taking each stripe's lock once instead of once per seat.
const heldBatch = 32

// Held reports, aligned with seatIDs, which seats are held right now.
func (h *Holds) Held(_ context.Context, eventID boxoffice.ID, seatIDs []string) ([]bool, error) {
	held := make([]bool, len(seatIDs))
	ev := h.event(eventID, false)
	if ev == nil {
		return held, nil
	}
	t := h.since()
	if len(seatIDs) < heldBatch {
		for n, s := range seatIDs {
			st := &ev.stripes[h.stripeOf(s)]
			st.mu.Lock()
			e := st.seats[s]
			held[n] = e != nil && e.expires > t
			st.mu.Unlock()
		}
		return held, nil
	}

	// A counting sort of the positions by stripe.
	idx := make([]uint8, len(seatIDs))
	var start [stripeCount + 1]int
	for n, s := range seatIDs {
		idx[n] = h.stripeOf(s)
		start[idx[n]+1]++
	}
	for i := 1; i <= stripeCount; i++ {
		start[i] += start[i-1]
	}
	order := make([]int32, len(seatIDs))
	fill := start
	for n := range seatIDs {
		order[fill[idx[n]]] = int32(n)
		fill[idx[n]]++
	}
	for i := range stripeCount {
		if start[i] == start[i+1] {
			continue
		}
		st := &ev.stripes[i]
		st.mu.Lock()
		for _, n := range order[start[i]:start[i+1]] {
			e := st.seats[seatIDs[n]]
			held[n] = e != nil && e.expires > t
		}
		st.mu.Unlock()
	}
	return held, nil
}

// Ping always succeeds: the table is in the process.
func (h *Holds) Ping(context.Context) error { return nil }

// Sweep reclaims every expired entry, drops the table of every event that
// holds nothing any more, and returns the holds the entries belonged
// to, one per grant (event and fence), seats sorted. A hold appears only if
// its seats were still in the table: seats released in time, refreshed by
// their owner, or taken over by another owner after they expired did not
// come back to the pool through expiry, so they are not reported.
func (h *Holds) Sweep() []boxoffice.Hold {
	t := h.since()
	var out []boxoffice.Hold
	h.events.Range(func(_, v any) bool {
		ev := v.(*eventHolds)
		first := len(out)
		var byFence map[int64]int // fence → index in out
		for i := range ev.stripes {
			st := &ev.stripes[i]
			if st.next.Load() > t {
				continue
			}
			st.mu.Lock()
			for len(st.queue) > 0 && st.queue[0].expires <= t {
				e := st.queue[0]
				j, ok := byFence[e.fence]
				if !ok {
					if byFence == nil {
						byFence = map[int64]int{}
					}
					j = len(out)
					byFence[e.fence] = j
					out = append(out, boxoffice.Hold{
						EventID:   ev.id,
						Owner:     e.owner,
						Fence:     e.fence,
						ExpiresAt: h.base.Add(time.Duration(e.expires)),
					})
				}
				out[j].SeatIDs = append(out[j].SeatIDs, e.seat)
				st.remove(e)
			}
			st.mu.Unlock()
		}
		for j := first; j < len(out); j++ {
			slices.Sort(out[j].SeatIDs)
		}
		empty := true
		for i := range ev.stripes {
			if ev.stripes[i].next.Load() != math.MaxInt64 {
				empty = false
				break
			}
		}
		if empty {
			h.drop(ev)
		}
		return true
	})
	return out
}

// Run sweeps every interval (a second if it is not positive) until ctx is
// done, passing each hold that ran out to onExpire (which may be nil): how
// promptly expiries are noticed is the interval. onExpire is called from Run's
// goroutine with no lock held; the seats may already be held again by the
// time it runs, so a consumer that offers them to someone acquires them
// like anybody else.
func (h *Holds) Run(ctx context.Context, interval time.Duration, onExpire func(boxoffice.Hold)) {
	if interval <= 0 {
		interval = time.Second
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, hold := range h.Sweep() {
				if onExpire != nil {
					onExpire(hold)
				}
			}
		}
	}
}

func (h *Holds) since() int64 { return int64(h.now().Sub(h.base)) }

func (h *Holds) stripeOf(seat string) uint8 {
	return uint8(maphash.String(h.seed, seat) % stripeCount)
}

// event returns the table of an event, creating it if create is set (and
// returning nil for an unknown event otherwise).
func (h *Holds) event(id boxoffice.ID, create bool) *eventHolds {
	if v, ok := h.events.Load(id); ok {
		return v.(*eventHolds)
	}
	if !create {
		return nil
	}
	ev := &eventHolds{id: id}
	ev.fence.Store(h.floor.Load())
	for i := range ev.stripes {
		ev.stripes[i].next.Store(math.MaxInt64)
	}
	v, _ := h.events.LoadOrStore(id, ev)
	return v.(*eventHolds)
}

// locked returns the event's table, made if there is none, with the
// stripes of mask locked; a table Sweep dropped meanwhile is looked up
// again, so no hold is ever written into a dropped one.
func (h *Holds) locked(id boxoffice.ID, mask uint64) *eventHolds {
	for {
		ev := h.event(id, true)
		ev.lock(mask)
		if !ev.dead {
			return ev
		}
		ev.unlock(mask)
	}
}

// drop removes ev's table if it holds nothing: under every stripe's lock,
// so no writer is inside it, and marked dead, so none that looked it up
// before writes into it afterwards. Its fences stay below the floor.
func (h *Holds) drop(ev *eventHolds) {
	const all = ^uint64(0) // stripeCount is 64
	ev.lock(all)
	defer ev.unlock(all)
	for i := range ev.stripes {
		if len(ev.stripes[i].seats) > 0 {
			return
		}
	}
	ev.dead = true
	for f := ev.fence.Load(); ; {
		cur := h.floor.Load()
		if cur >= f || h.floor.CompareAndSwap(cur, f) {
			break
		}
	}
	h.events.CompareAndDelete(ev.id, ev)
}

// lock takes the locks of the stripes in mask, lowest first; every
// multi-stripe locker uses this order, so none can deadlock another.
func (ev *eventHolds) lock(mask uint64) {
	for m := mask; m != 0; m &= m - 1 {
		ev.stripes[bits.TrailingZeros64(m)].mu.Lock()
	}
}

func (ev *eventHolds) unlock(mask uint64) {
	for m := mask; m != 0; m &= m - 1 {
		ev.stripes[bits.TrailingZeros64(m)].mu.Unlock()
	}
}

// put makes seat held by owner under fence until expires; e is the seat's
// current entry or nil. The caller holds st.mu.
func (st *stripeState) put(seat string, e *seatHold, owner boxoffice.ID, fence, expires int64) {
	if e != nil {
		e.owner, e.fence, e.expires = owner, fence, expires
		st.fix(e.index)
	} else {
		if n := len(st.spare); n > 0 {
			e = st.spare[n-1]
			st.spare = st.spare[:n-1]
		} else {
			e = new(seatHold)
		}
		*e = seatHold{seat: seat, owner: owner, fence: fence, expires: expires, index: len(st.queue)}
		if st.seats == nil {
			st.seats = make(map[string]*seatHold)
		}
		st.seats[seat] = e
		st.queue = append(st.queue, e)
		st.up(e.index)
	}
	st.noteNext()
}

// remove deletes e from the stripe. The caller holds st.mu.
func (st *stripeState) remove(e *seatHold) {
	delete(st.seats, e.seat)
	last := len(st.queue) - 1
	i := e.index
	if i != last {
		st.swap(i, last)
	}
	st.queue[last] = nil
	st.queue = st.queue[:last]
	if i != last {
		st.fix(i)
	}
	if len(st.seats) == 0 && cap(st.queue) > 1024 {
		// Let a flash sale's peak go once the stripe is empty again.
		st.seats, st.queue, st.spare = nil, nil, nil
	} else if len(st.spare) < maxSpare {
		*e = seatHold{}
		st.spare = append(st.spare, e)
	}
	st.noteNext()
}

func (st *stripeState) noteNext() {
	next := int64(math.MaxInt64)
	if len(st.queue) > 0 {
		next = st.queue[0].expires
	}
	if st.next.Load() != next {
		st.next.Store(next)
	}
}

func (st *stripeState) fix(i int) {
	if !st.down(i) {
		st.up(i)
	}
}

func (st *stripeState) up(i int) {
	q := st.queue
	for i > 0 {
		p := (i - 1) / 2
		if q[p].expires <= q[i].expires {
			return
		}
		st.swap(i, p)
		i = p
	}
}

// down sifts queue[i] down and reports whether it moved.
func (st *stripeState) down(i int) bool {
	q := st.queue
	i0 := i
	for {
		c := 2*i + 1
		if c >= len(q) {
			break
		}
		if r := c + 1; r < len(q) && q[r].expires < q[c].expires {
			c = r
		}
		if q[i].expires <= q[c].expires {
			break
		}
		st.swap(i, c)
		i = c
	}
	return i > i0
}

func (st *stripeState) swap(i, j int) {
	q := st.queue
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}

// uniqueSeats returns seats without repeats, in first-seen order: seats
// itself when it has none (the usual case, which then costs nothing).
func uniqueSeats(seats []string) []string {
	if len(seats) <= 16 {
		for i := 1; i < len(seats); i++ {
			for j := range i {
				if seats[i] == seats[j] {
					return dedupe(seats)
				}
			}
		}
		return seats
	}
	seen := make(map[string]struct{}, len(seats))
	for _, s := range seats {
		if _, ok := seen[s]; ok {
			return dedupe(seats)
		}
		seen[s] = struct{}{}
	}
	return seats
}

func dedupe(seats []string) []string {
	out := make([]string, 0, len(seats))
	seen := make(map[string]struct{}, len(seats))
	for _, s := range seats {
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			out = append(out, s)
		}
	}
	return out
}

// Restore puts a hold back as it was granted (owner, fence, expiry), for a
// process that rebuilds its table from the database after a restart, and
// raises the event's fence counter past it, so that later grants still get
// larger fences. It overwrites whatever the seats hold; call it before
// serving.
func (h *Holds) Restore(hold boxoffice.Hold) {
	if len(hold.SeatIDs) == 0 || !hold.ExpiresAt.After(h.now()) {
		return
	}
	expires := int64(hold.ExpiresAt.Sub(h.base))
	var ev *eventHolds
	for _, s := range uniqueSeats(hold.SeatIDs) {
		i := h.stripeOf(s)
		ev = h.locked(hold.EventID, 1<<i)
		st := &ev.stripes[i]
		st.put(s, st.seats[s], hold.Owner, hold.Fence, expires)
		st.mu.Unlock()
	}
	for {
		cur := ev.fence.Load()
		if cur >= hold.Fence || ev.fence.CompareAndSwap(cur, hold.Fence) {
			return
		}
	}
}
