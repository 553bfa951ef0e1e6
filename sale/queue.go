package sale

import (
	"context"
	"errors"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/tracing"
)

// QueueTicket is the front door's answer to a reserve for a queued sale
// (202): where the request is and how long it should wait.
type QueueTicket struct {
	RequestID     boxoffice.ID
	EventID       boxoffice.ID
	Status        boxoffice.QueueStatus
	QueuePosition int64
	// Ahead is how many requests are still before this one.
	Ahead int64
	// EstimatedWaitSeconds is set while the request waits (queued, or in
	// the waiting room): from the event's measured drain rate, or before
	// there is one from the prior (see Config.DrainPrior). Nil once it has
	// an outcome.
	EstimatedWaitSeconds *float64
	// SeatsLeft is how many seats of the request's kind (its section, or
	// the section and tier of a best-available ask) are available now, and
	// ExpectedSeatsLeft how many are expected to be left at its turn, if
	// the requests ahead take seats as the served ones did: someone far
	// back whose ask will likely not be met can join the waitlist now
	// (WaitlistURL is set then). Unset without a seat map to count from.
	SeatsLeft         *int
	ExpectedSeatsLeft *int
	SaleOpensAt       time.Time
	StatusURL         string
	EventsURL         string
	// Outcome, once there is one.
	Reason     string
	Message    string
	BookingID  boxoffice.ID
	HeldUntil  *time.Time
	PaymentURL string
	// WaitlistURL, for a request turned down because the event sold out,
	// is where to join its waitlist.
	WaitlistURL string
	Replayed    bool
}

// QueueURL is the status URL of a queued request.
func QueueURL(id boxoffice.ID) string { return "/queue/" + id.String() }

// Queued reports whether the event sells through the queue.
func (s *Queue) Queued(ctx context.Context, eventID boxoffice.ID) (bool, error) {
	l, err := s.Layout(ctx, eventID)
	if err != nil {
		return false, err
	}
	return l.Event.SaleMode == boxoffice.SaleQueued, nil
}

// Enqueue is the front door of a queued sale: it validates the request as
// Reserve does, admits it to the queue state (idempotency, one live entry
// per user, a position) and appends it to the request log, with the other
// requests arriving meanwhile (admit.go), answering only once the log has
// it: a ticket is a promise. A retry with the same key
// gets the same ticket and never a second entry.
func (s *Queue) Enqueue(ctx context.Context, u boxoffice.User, req ReserveRequest) (*QueueTicket, error) {
	if s.queue == nil {
		return nil, boxoffice.Errorf(boxoffice.EUNAVAILABLE, "this server runs no flash-sale queue")
	}
	l, hash, err := s.checkReserve(ctx, req)
	if err != nil {
		return nil, err
	}
	ev := l.Event
	if ev.SaleMode != boxoffice.SaleQueued {
		return nil, boxoffice.Errorf(boxoffice.ECONFLICT, "this event sells directly: its reserve answers 201")
	}
	now := s.now()
	preQueue := now.Before(ev.SaleOpensAt)
	switch {
	case !now.Before(ev.StartsAt):
		return nil, saleClosed(ev, now)
	case preQueue && now.Before(ev.SaleOpensAt.Add(-s.cfg.PreQueueWindow)):
		return nil, boxoffice.Errorf(boxoffice.ESALECLOSED, "the waiting room opens at %s",
			ev.SaleOpensAt.Add(-s.cfg.PreQueueWindow).UTC().Format(time.RFC3339))
	}
	if !preQueue {
		if t, err := s.soldOutAtTheDoor(ctx, u, l, req, hash); t != nil || err != nil {
			return t, err
		}
	}
	id, err := s.idFor(ctx, ev.ID)
	if err != nil {
		return nil, err
	}
	r := &boxoffice.QueuedRequest{ID: id, EventID: ev.ID, UserID: u.ID, SeatIDs: req.SeatIDs, Best: req.Best,
		IdempotencyKey: req.IdempotencyKey, RequestHash: hash, EnqueuedAt: now, TraceParent: tracing.Parent(ctx)}
	actx, span := ctx, trace.Span(noop.Span{}) // nothing to record unless Active
	if tracing.Active(ctx) {
		actx, span = tracing.Tracer().Start(ctx, "boxoffice.queue.admit", trace.WithAttributes(
			attribute.String("boxoffice.request_id", id.String()), attribute.String("boxoffice.event_id", ev.ID.String())))
	}
	e, replay, err := s.admit(actx, r, preQueue)
	if err != nil {
		span.SetStatus(codes.Error, boxoffice.ErrorCode(err))
		span.End()
		return nil, err
	}
	span.SetAttributes(attribute.Bool("boxoffice.replay", replay))
	span.End()
	t, err := s.ticket(ctx, e)
	if err != nil {
		return nil, err
	}
	t.Replayed = replay
	if w := e.Request.EstimatedWait; !replay && w != nil && t.EstimatedWaitSeconds != nil {
		// The 202 tells the estimate kept with the request, which the
		// worker measures against the real wait.
		first := *w
		t.EstimatedWaitSeconds = &first
	}
	return t, nil
}

// soldOutAtTheDoor answers a request that the inventory shows nothing left
// for: sold out (ESOLDOUT) at once, no 202, and the requests already
// queued are marked sold out too. A retry of a request admitted before the
// sell-out gets its own ticket back. Both nil: the request goes on to the
// queue. Without an inventory (no seat map, or it cannot be read) the
// queue decides, as before.
func (s *Queue) soldOutAtTheDoor(ctx context.Context, u boxoffice.User, l *layout.Layout, req ReserveRequest, hash string) (*QueueTicket, error) {
	inv, err := s.inventory(ctx, l)
	if err != nil {
		return nil, nil
	}
	short := inv.short(l.Event.ID, req.Best)
	if !inv.soldOut() && short == nil {
		return nil, nil
	}
	e, err := s.queue.EntryByKey(ctx, l.Event.ID, u.ID, req.IdempotencyKey)
	switch {
	case err == nil && e.Request.RequestHash != "" && e.Request.RequestHash != hash:
		return nil, boxoffice.Errorf(boxoffice.EIDEMMISMATCH, "this idempotency key was already used for a different request")
	case err == nil:
		t, err := s.ticket(ctx, e)
		if t != nil {
			t.Replayed = true
		}
		return t, err
	case !isCode(err, boxoffice.ENOTFOUND):
		return nil, err
	case short != nil:
		return nil, short
	}
	if _, err := s.queue.MarkSoldOut(ctx, l.Event.ID); err != nil {
		s.log.WarnContext(ctx, "mark sold out", "event", l.Event.ID, "err", err)
	}
	return nil, errSoldOut(l.Event.ID)
}

// seatsAtTurn fills in how many seats of the request's kind are left now and
// are expected to be left when its turn comes. The requests ahead are
// assumed to take, per request, as many seats as the served ones did (or,
// before any was served, as many as this one asks), spread over the event
// as what is left is: the request's kind keeps its share.
func (s *Queue) seatsAtTurn(ctx context.Context, t *QueueTicket, l *layout.Layout, r *boxoffice.QueuedRequest, prog boxoffice.QueueProgress) {
	inv, err := s.inventory(ctx, l)
	if err != nil || inv == nil {
		return
	}
	kind, wanted := ask{}, len(r.SeatIDs)
	if b := r.Best; b != nil {
		kind, wanted = ask{b.Section, b.PriceTier}, b.Quantity
	} else if len(r.SeatIDs) > 0 {
		kind = ask{section: boxoffice.SectionOf(r.SeatIDs[0])}
	}
	left, all := inv.left[kind], inv.left[ask{}]
	perRequest := float64(wanted)
	if prog.Served > 0 {
		perRequest = min(float64(l.Len()-all)/float64(prog.Served), float64(s.cfg.MaxSeatsPerRequest))
	}
	expected := 0
	if all > 0 {
		expected = int(math.Round(float64(left) * max(0, 1-float64(t.Ahead)*perRequest/float64(all))))
	}
	t.SeatsLeft, t.ExpectedSeatsLeft = &left, &expected
	if expected < wanted {
		t.WaitlistURL = boxoffice.WaitlistURL(r.EventID)
	}
}

// QueueStatus returns a queued request as its owner sees it (ENOTFOUND for
// anyone else but an admin).
func (s *Queue) QueueStatus(ctx context.Context, u boxoffice.User, id boxoffice.ID) (*QueueTicket, error) {
	if s.queue == nil {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	e, err := s.queue.Entry(ctx, id)
	if err != nil {
		return nil, err
	}
	if e.Request.UserID != u.ID && !(u.IsAdmin() && u.InScope(e.Request.EventID)) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	return s.ticket(ctx, e)
}

func (s *Queue) ticket(ctx context.Context, e *boxoffice.QueueEntry) (*QueueTicket, error) {
	r := e.Request
	u := QueueURL(r.ID)
	t := &QueueTicket{RequestID: r.ID, EventID: r.EventID, Status: e.Status, QueuePosition: r.Position,
		StatusURL: u, EventsURL: u + "/events", Reason: e.Reason, Message: e.Message}
	l, lerr := s.Layout(ctx, r.EventID)
	if lerr == nil {
		t.SaleOpensAt = l.Event.SaleOpensAt
	}
	if e.Reason == boxoffice.ESOLDOUT {
		t.WaitlistURL = boxoffice.WaitlistURL(r.EventID)
	}
	switch e.Status {
	case boxoffice.QueueHeld:
		held := e.HeldUntil
		t.BookingID, t.HeldUntil, t.PaymentURL = e.BookingID, &held, PaymentURL(e.BookingID)
	case boxoffice.QueueQueued:
		p, err := s.estimator.sample(ctx, r.EventID)
		if err != nil {
			return nil, err
		}
		prog := p.prog
		if lerr == nil && s.soldOutMark(ctx, l, prog).SoldOut(r.Position) {
			// Queued before the sell-out: told now, decided by the drain
			// (without a hold) when it gets there, unless a worker is at
			// it already.
			if decided, told := s.toldSoldOut(ctx, r); decided != nil {
				return s.ticket(ctx, decided)
			} else if told {
				t.Status, t.Reason, t.Message = boxoffice.QueueRejected, boxoffice.ESOLDOUT, boxoffice.ErrorMessage(errSoldOut(r.EventID))
				t.WaitlistURL = boxoffice.WaitlistURL(r.EventID)
				break
			}
		}
		t.Ahead, t.EstimatedWaitSeconds = s.estimator.estimate(p, r.Position)
		if lerr == nil {
			s.seatsAtTurn(ctx, t, l, r, prog)
		}
	case boxoffice.QueueWaiting:
		// Until the draw nobody knows the place; the wait is at least the
		// time to the opening.
		w := math.Ceil(max(0, t.SaleOpensAt.Sub(s.now()).Seconds()))
		t.EstimatedWaitSeconds = &w
	}
	return t, nil
}

// toldSoldOut decides whether a queued request at or before its event's
// sold-out mark is told sold out now. The mark is raised by whoever sees
// the inventory at nothing, and the seats of a batch a worker is holding
// count as taken before their outcomes are recorded: that worker's own
// requests are behind the mark too, and must not be told sold out while
// they are being held. So the request's in-flight lease is taken first
// (the lease its worker holds from before it reads the mark until after
// it records the outcome): taken, no worker is at it, and none gets to it
// before reading the mark, which then turns it down as told; refused, a
// worker is at it, and the request is still queued for its owner. With
// the lease, the entry is read again: a worker may have recorded an
// outcome (decided) since it was read. Last, a request with an
// idempotency record was booked by a worker that died before recording
// the outcome (its lease ran out): the next delivery gives it that
// booking, so it is not told sold out either. Anything that cannot be
// read leaves the request queued: nothing is told that may not hold.
func (s *Queue) toldSoldOut(ctx context.Context, r *boxoffice.QueuedRequest) (decided *boxoffice.QueueEntry, told bool) {
	release, err := s.leases.TryLease(ctx, requestLease(r), toldLease)
	if err != nil {
		return nil, false
	}
	defer release()
	e, err := s.queue.Entry(ctx, r.ID)
	switch {
	case err != nil:
		return nil, false
	case e.Status != boxoffice.QueueQueued:
		return e, false
	}
	recs, err := s.store.Idempotencies(ctx, []string{r.UserID}, []string{r.IdempotencyKey})
	return nil, err == nil && recs[0] == nil
}

// toldLease bounds how long a status keeps a request from its worker
// while it reads the request's entry again.
const toldLease = 5 * time.Second

// retryable errors leave a request for another delivery instead of
// rejecting it: the outcome was not decided.
func retryable(err error) bool {
	switch boxoffice.ErrorCode(err) {
	case boxoffice.EUNAVAILABLE, boxoffice.EIDEMINFLIGHT, boxoffice.EINTERNAL:
		return true
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// RunWorker drains the request log until ctx ends.
func (s *Queue) RunWorker(ctx context.Context) error {
	if s.queue == nil {
		return boxoffice.Errorf(boxoffice.EUNAVAILABLE, "this server runs no flash-sale queue")
	}
	return s.reqLog.Consume(ctx, s.ServeBatch)
}

// OpenQueue draws the pre-queue of an event whose sale has opened and puts
// the drawn requests in the log. Safe to call any number of times and from
// several processes: the draw happens once, under a lease, and a release
// cut short by a crash is finished by the next call. An event without a
// draw (one the opener never lists) is ENOTFOUND.
//
// An event opens even when nobody waited: the queue state then admits
// whoever comes next straight into the queue (a request a node still took
// for the waiting room included), and the empty draw is recorded. Once the
// drawn requests are in the log the store's draw is marked released, and
// the event is no longer due (DrawsDue); until then every pass of the
// opener finishes what a crashed one left.
func (s *Queue) OpenQueue(ctx context.Context, eventID boxoffice.ID) error {
	release, err := s.leases.TryLease(ctx, "queue-open:"+eventID.String(), time.Minute)
	if isCode(err, boxoffice.EIDEMINFLIGHT) {
		return nil // another process is at it
	}
	if err != nil {
		return err
	}
	defer release()
	p, err := s.queue.Progress(ctx, eventID)
	if err != nil {
		return err
	}
	// The event is due (DrawsDue), so it has a draw: a seed committed to
	// at its creation, or by migration 0013 / 0011 for an older one.
	d, err := s.store.Draw(ctx, eventID)
	if err != nil {
		return err
	}
	if p.Opened && p.Released && d.Drawn() {
		return s.store.MarkDrawReleased(ctx, eventID)
	}
	drawn, err := s.queue.Open(ctx, eventID, func(ids []boxoffice.ID) []boxoffice.ID { return boxoffice.DrawOrder(d.Seed, ids) })
	if err != nil {
		return err
	}
	if !d.Drawn() {
		// Published before the requests go on: whoever sees a position
		// can check it (GET /events/{id}/draw).
		rec := &boxoffice.Draw{EventID: eventID, Seed: d.Seed, DrawnAt: s.now()}
		if len(drawn) > 0 {
			// By position, with a gap (0) where a position of the range
			// went to a request outside the draw (see Draw.Order).
			rec.FirstPosition = drawn[0].Position
			rec.Order = make([]boxoffice.ID, drawn[len(drawn)-1].Position-rec.FirstPosition+1)
			for _, r := range drawn {
				rec.Order[r.Position-rec.FirstPosition] = r.ID
			}
		}
		if err := s.store.RecordDraw(ctx, rec); err != nil {
			return err
		}
	}
	if !p.Released {
		for i := 0; i < len(drawn); i += 1000 {
			if err := s.reqLog.Append(ctx, drawn[i:min(i+1000, len(drawn))]...); err != nil {
				return err
			}
		}
		if err := s.queue.MarkReleased(ctx, eventID); err != nil {
			return err
		}
		s.log.InfoContext(ctx, "pre-queue drawn", "event", eventID, "requests", len(drawn))
	}
	return s.store.MarkDrawReleased(ctx, eventID)
}

// RunOpener opens the pre-queues of queued events as their sales open,
// checking every interval, until ctx ends. It asks the store for the
// draws due (an index of those not released), not for a page of events: with
// thousands of events on sale, one opening next among them is still found.
func (s *Queue) RunOpener(ctx context.Context, interval time.Duration) {
	every(ctx, interval, nil, func() { s.openDue(ctx) })
}

// openerBatch is how many due draws one pass of the opener takes; the
// next pass takes the rest, as each opened one leaves the list.
const openerBatch = 100

// openDue opens the events whose draw is due; an event that fails is
// logged and tried again on the next pass.
func (s *Queue) openDue(ctx context.Context) {
	due, err := s.store.DrawsDue(ctx, s.now(), openerBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "list the draws due", "err", err)
		}
		return
	}
	for _, id := range due {
		if err := s.OpenQueue(ctx, id); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "open pre-queue", "event", id, "err", err)
		}
	}
}
