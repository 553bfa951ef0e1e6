package sale

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
)

// ServeBatch is the booking worker's handler for a batch of the request
// log. It decides the whole batch at once, in queue order, with a fixed
// number of round trips whatever its size:
//
//  1. the requests' entries (one pipelined read): a request with an
//     outcome (a redelivery) or still waiting for the draw is skipped;
//  2. the requests are checked against their events (in memory), their
//     in-flight leases taken (one round trip: ManyLeases) and their
//     idempotency records read (one read for the batch): a request a
//     previous delivery booked gets that booking back, and nothing else
//     happens to it; then a request of an event that sold out before its
//     turn, or a best-available ask too big for what is left, is turned
//     down (sold_out) without a hold;
//  3. the holds, in queue order, each all-or-nothing: one script call per
//     lock-store slot for the whole batch (Holds.AcquireMany); a
//     best-available request is held on its own at its place in the order,
//     since its seats are picked when it runs; when the log hands out
//     batches in parallel, after the batch before has held (its HoldTurn);
//  4. the winners' bookings, seats, idempotency records and outbox rows
//     in one transaction (Store.CreateBookings); a refused seat costs no
//     database work;
//  5. the outcomes recorded and announced (QueueState.FinishMany, one
//     round trip; FinishEntries where the state takes the entries read in
//     step 1), then the live channel told.
//
// A request whose outcome could not be decided (the lock store or the
// database unavailable, its lease held by another worker) fails the batch,
// which the log then delivers again; the requests decided meanwhile are
// skipped then. Redelivery is harmless at every step: a request holds as
// its own booking (its id), so a second delivery re-takes its own seats
// and finds its booking by its idempotency record.
func (s *Queue) ServeBatch(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
	rs := drainOrder(batch)
	for attempt := 0; ; attempt++ {
		// A request whose lease another worker holds (two workers handed
		// the same requests: a rebalance, or the embedded log's workers)
		// is waited for a little: it is usually decided by then, and then
		// skipped. Past that it is left to redelivery.
		inflight, err := s.serveOnce(ctx, rs)
		if err != nil || len(inflight) == 0 {
			return err
		}
		if attempt == inflightAttempts {
			return boxoffice.Errorf(boxoffice.EIDEMINFLIGHT, "%d requests of the batch are being served by another worker", len(inflight))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(25<<attempt) * time.Millisecond):
		}
		rs = inflight
	}
}

// inflightAttempts bounds how often ServeBatch waits for requests another
// worker is serving (25 ms, doubling: about 1.5 s in all).
const inflightAttempts = 6

// serveOnce decides rs and returns those another worker holds the lease of;
// err is why others were left undecided.
func (s *Queue) serveOnce(ctx context.Context, rs []*boxoffice.QueuedRequest) (inflight []*boxoffice.QueuedRequest, err error) {
	ps := s.undecided(ctx, rs)
	var release func() // the batch's in-flight leases
	defer func() {
		if release != nil {
			release()
		}
	}()
	spans := startDecisions(ctx, ps)
	defer spans.end()
	t := time.Now()
	release = s.checkQueued(ctx, ps)
	s.replayQueued(ctx, ps)
	s.soldOutQueued(ctx, ps) // after the replay: a request booked before keeps its booking
	spans.step("boxoffice.queue.check", t)
	t = time.Now()
	// After the batch before this one has held, where the log hands out
	// batches in parallel (boxoffice.HoldTurn): the queue order across them.
	turn := boxoffice.HoldTurnOf(ctx)
	if err := turn.Wait(ctx); err != nil {
		return nil, err
	}
	s.holdQueued(ctx, ps)
	turn.Done()
	spans.step("boxoffice.holds.acquire_many", t)
	t = time.Now()
	s.bookQueued(ctx, ps)
	spans.step("boxoffice.store.create_bookings", t)
	t = time.Now()
	err = s.finishQueued(ctx, ps)
	spans.step("boxoffice.queue.finish_many", t)
	for _, p := range ps {
		if p.out == nil && isCode(p.err, boxoffice.EIDEMINFLIGHT) {
			inflight = append(inflight, p.r)
		}
	}
	return inflight, err
}

// queued is one request of a batch on its way through ServeBatch. Exactly
// one of out and err ends up set for a request that was looked at: out is
// its outcome, err says why it is left for another delivery.
type queued struct {
	r     *boxoffice.QueuedRequest
	entry *boxoffice.QueueEntry // as undecided read it; nil if none
	l     *layout.Layout
	req   ReserveRequest
	hash  string
	start time.Time // when its hold was asked for, for HeldUntil
	hold  boxoffice.Hold
	held  bool
	out   *boxoffice.QueueOutcome
	err   error
}

func (p *queued) open() bool { return p.out == nil && p.err == nil }

func (p *queued) reject(err error, s *Queue) {
	p.out = &boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ErrorCode(err),
		Message: boxoffice.ErrorMessage(err), FinishedAt: s.now()}
}

func (p *queued) grant(res *ReserveResult, s *Queue) {
	p.out = &boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: res.BookingID, HeldUntil: res.HeldUntil,
		FinishedAt: s.now()}
}

// fail records err as the request's answer: its outcome if it is one, else
// a reason to leave it for another delivery.
func (p *queued) fail(err error, s *Queue) {
	if retryable(err) {
		p.err = err
		return
	}
	p.reject(err, s)
}

// drainOrder sorts a batch by event and position and drops what is not to
// be served: a request parked in the pre-queue (its drawn copy comes later
// in the log) and a second copy of a request.
func drainOrder(batch []*boxoffice.QueuedRequest) []*boxoffice.QueuedRequest {
	out := make([]*boxoffice.QueuedRequest, 0, len(batch))
	seen := make(map[boxoffice.ID]bool, len(batch))
	for _, r := range batch {
		if r.Position != 0 && !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *boxoffice.QueuedRequest) int {
		return cmp.Or(cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.Position, b.Position))
	})
	return out
}

// undecided reads the requests' entries at once and keeps those without an
// outcome. An entry the state lost (none) is decided all the same: the
// record carries all the worker needs, and the booking decides. If the
// entries cannot be read, every request is left for another delivery.
func (s *Queue) undecided(ctx context.Context, rs []*boxoffice.QueuedRequest) []*queued {
	ps := make([]*queued, 0, len(rs))
	entries, err := s.queue.Entries(ctx, rs)
	for i, r := range rs {
		p := &queued{r: r, err: err}
		if err == nil {
			if e := entries[i]; e != nil && (e.Status.Final() || e.Status == boxoffice.QueueWaiting) {
				continue // a redelivery, or not drawn yet (its drawn copy follows in the log)
			}
			p.entry = entries[i]
		}
		ps = append(ps, p)
	}
	return ps
}

// checkQueued checks each request against its event as Reserve does, then
// takes its in-flight lease (all at once): a lease another worker holds
// (a rebalance mid-batch) leaves the request to that worker or to
// redelivery. It returns the release of the leases taken.
func (s *Queue) checkQueued(ctx context.Context, ps []*queued) (release func()) {
	now := s.now()
	for _, p := range ps {
		if !p.open() {
			continue
		}
		r := p.r
		p.req = ReserveRequest{EventID: r.EventID, SeatIDs: r.SeatIDs, Best: r.Best, IdempotencyKey: r.IdempotencyKey}
		l, hash, err := s.checkReserve(ctx, p.req)
		switch {
		case err != nil:
			p.fail(err, s)
		case hash != r.RequestHash:
			p.reject(boxoffice.Errorf(boxoffice.EINVALID, "the queued request does not match its fingerprint"), s)
		case !now.Before(l.Event.StartsAt):
			p.reject(saleClosed(l.Event, now), s)
		default:
			p.l, p.hash = l, hash
		}
	}
	// A worker may be killed holding it; a short lease lets the
	// redelivery proceed soon. Past it, two live workers on one request
	// cannot sell twice (same booking id, one insert wins); at worst the
	// loser's hold supersedes the booking's fence and its confirm fails
	// (EHOLDLOST).
	var keys []string
	var which []*queued
	for _, p := range ps {
		if p.open() {
			keys, which = append(keys, requestLease(p.r)), append(which, p)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	if many, ok := s.leases.(boxoffice.ManyLeases); ok {
		// One round trip for the batch's leases, one to release them.
		release, errs := many.TryLeaseMany(ctx, keys, queuedLease)
		for i, p := range which {
			p.err = errs[i]
		}
		return release
	}
	releases := make([]func(), len(which))
	eachIndex(len(which), func(i int) {
		releases[i], which[i].err = s.leases.TryLease(ctx, keys[i], queuedLease)
	})
	return func() {
		eachIndex(len(releases), func(i int) {
			if releases[i] != nil {
				releases[i]()
			}
		})
	}
}

// soldOutQueued turns down, without a hold, the requests of an event that
// sold out before their turn (at or before its sold-out mark, raised here
// when the inventory shows nothing left), and the best-available asks that
// fewer seats are left for than they want.
func (s *Queue) soldOutQueued(ctx context.Context, ps []*queued) {
	type state struct {
		prog boxoffice.QueueProgress
		inv  *inventory
	}
	events := map[boxoffice.ID]*state{}
	for _, p := range ps {
		if !p.open() {
			continue
		}
		st := events[p.r.EventID]
		if st == nil {
			st = &state{}
			events[p.r.EventID] = st
			if prog, err := s.queue.Progress(ctx, p.r.EventID); err == nil {
				st.prog = s.soldOutMark(ctx, p.l, prog)
			}
			st.inv, _ = s.inventory(ctx, p.l)
		}
		switch {
		case st.prog.SoldOut(p.r.Position):
			p.reject(errSoldOut(p.r.EventID), s)
		default:
			if err := st.inv.short(p.r.EventID, p.r.Best); err != nil {
				p.reject(err, s)
			}
		}
	}
}

// replayQueued reads the batch's idempotency records in one call: a request
// a previous delivery booked (it died before recording the outcome) gets
// its booking back and is not held again (that would give its seats a new
// fence the booking does not know).
func (s *Queue) replayQueued(ctx context.Context, ps []*queued) {
	var users, keys []string
	var which []*queued
	for _, p := range ps {
		if p.open() {
			users, keys, which = append(users, p.r.UserID), append(keys, p.r.IdempotencyKey), append(which, p)
		}
	}
	if len(which) == 0 {
		return
	}
	recs, err := s.store.Idempotencies(ctx, users, keys)
	for i, p := range which {
		if err != nil {
			p.err = err
			continue
		}
		if recs[i] == nil {
			continue
		}
		var res ReserveResult
		switch err := s.replayRecord(recs[i], p.hash, &res); {
		case errors.Is(err, errNoRecord):
		case err != nil:
			p.fail(err, s)
		default:
			p.grant(&res, s)
		}
	}
}

// holdQueued takes the holds in queue order: runs of requests for given
// seats in one AcquireMany, a best-available request on its own where it
// stands.
func (s *Queue) holdQueued(ctx context.Context, ps []*queued) {
	ttl := s.cfg.HoldTTL + s.cfg.HandoverGrace
	var run []*queued
	flush := func() {
		if len(run) == 0 {
			return
		}
		reqs := make([]boxoffice.HoldRequest, len(run))
		start := s.now()
		for i, p := range run {
			p.start = start
			reqs[i] = boxoffice.HoldRequest{EventID: p.r.EventID, SeatIDs: p.r.SeatIDs, Owner: p.r.ID, TTL: ttl}
		}
		holds, errs := s.holds.AcquireMany(ctx, reqs)
		for i, p := range run {
			if errs[i] != nil {
				p.fail(errs[i], s)
				continue
			}
			p.hold, p.held = holds[i], true
		}
		run = run[:0]
	}
	for _, p := range ps {
		if !p.open() {
			continue
		}
		if p.req.Best == nil {
			run = append(run, p)
			continue
		}
		flush()
		p.start = s.now()
		h, err := s.bookings.holdBest(ctx, p.l, p.req.Best, p.r.ID, ttl)
		if err != nil {
			p.fail(err, s)
			continue
		}
		p.hold, p.held = h, true
	}
	flush()
}

// bookQueued writes the held requests' bookings in one transaction. A
// refused booking gives its seats back; a batch the database could not
// take gives every seat back and is left for another delivery.
func (s *Queue) bookQueued(ctx context.Context, ps []*queued) {
	var (
		nbs   []boxoffice.NewBooking
		which []*queued
		ress  []*ReserveResult
	)
	for _, p := range ps {
		if !p.open() || !p.held {
			continue
		}
		b, res := s.newBooking(p.l, p.r.UserID, p.hold, p.start, p.req.Best != nil, s.seatsAmount(p.l, p.hold.SeatIDs), 0)
		rec, err := s.record(p.r.UserID, p.r.IdempotencyKey, p.hash, boxoffice.OutcomeHeld, res)
		if err != nil {
			p.err = err
			continue
		}
		nbs = append(nbs, boxoffice.NewBooking{Booking: b, TicketLimit: p.l.Event.TicketLimit, Idempotency: rec})
		which, ress = append(which, p), append(ress, res)
	}
	if len(nbs) == 0 {
		s.releaseQueued(ctx, ps)
		return
	}
	errs, err := s.store.CreateBookings(ctx, nbs)
	for i, p := range which {
		switch {
		case err != nil:
			p.err = err
		case errs[i] == nil:
			p.grant(ress[i], s)
		case isCode(errs[i], boxoffice.EIDEMINFLIGHT):
			// Another delivery of this request booked it meanwhile: its
			// answer is ours (and its hold, the same owner's, stays).
			var won ReserveResult
			if rerr := s.replay(ctx, p.r.UserID, p.r.IdempotencyKey, p.hash, &won); rerr == nil {
				p.held = won.BookingID != p.r.ID
				p.grant(&won, s)
			} else {
				p.fail(errs[i], s)
			}
		default:
			p.fail(errs[i], s)
		}
	}
	s.releaseQueued(ctx, ps)
}

// releaseQueued gives back the holds of the requests that did not end up
// with their booking. Best effort: a hold left behind expires by itself.
func (s *Queue) releaseQueued(ctx context.Context, ps []*queued) {
	each(ps, func(p *queued) {
		if p.held && (p.out == nil || p.out.Status != boxoffice.QueueHeld) {
			s.releaseHold(ctx, p.r.EventID, p.hold.SeatIDs, p.r.ID)
		}
	})
}

// finishQueued records and announces the outcomes decided, and returns why
// the others were left for another delivery.
func (s *Queue) finishQueued(ctx context.Context, ps []*queued) error {
	var (
		rs    []*boxoffice.QueuedRequest
		es    []*boxoffice.QueueEntry
		outs  []boxoffice.QueueOutcome
		first error
	)
	for _, p := range ps {
		switch {
		case p.out != nil:
			rs, es, outs = append(rs, p.r), append(es, p.entry), append(outs, *p.out)
		case first == nil && !isCode(p.err, boxoffice.EIDEMINFLIGHT): // those are waited for
			first = p.err
		}
	}
	if len(rs) == 0 {
		return first
	}
	// The entries undecided read are not read again where the state can
	// take them: a request's entry and the script that finishes it cost
	// Redis an HMGET each (stop 47: three a decision in all).
	firsts, err := boxoffice.FinishWithEntries(ctx, s.queue, rs, es, outs)
	if err != nil {
		return err
	}
	if s.notifier != nil {
		var notices []boxoffice.QueueNotice
		for i, r := range rs {
			if firsts[i] {
				notices = append(notices, boxoffice.QueueNotice{RequestID: r.ID, EventID: r.EventID, UserID: r.UserID, Status: outs[i].Status})
			}
		}
		// Best effort: the stream also polls the state.
		if err := s.notifier.Notify(ctx, notices...); err != nil {
			s.log.WarnContext(ctx, "queue notices", "requests", len(notices), "err", err)
		}
	}
	return first
}

// each runs fn for every request, eachParallel at a time: the lock store's
// client pipelines concurrent calls, so a batch costs a few round trips,
// not one per request (and not a goroutine per request either).
func each(ps []*queued, fn func(p *queued)) {
	eachIndex(len(ps), func(i int) { fn(ps[i]) })
}

// eachIndex runs fn(i) for i in [0, n), eachParallel at a time.
func eachIndex(n int, fn func(i int)) {
	workers := min(n, eachParallel)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

const eachParallel = 64
