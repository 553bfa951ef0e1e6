package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/boxoffice/boxoffice"
)

// The sale's own metrics are counted where the use cases meet their
// ports: Instrument wraps the store, the lock layer, the payment gateway
// and the queue's state, and counts what each call did by its result. The
// use cases stay free of metrics, and every process (API, worker, relay)
// counts what it did itself. Labels are bounded sets of words, never ids:
// a flash sale's per-event detail is in the logs and the API.

// saleMetrics are the counters the wrappers feed.
type saleMetrics struct {
	holds       *prometheus.CounterVec // outcome
	heldSeats   prometheus.Counter
	released    prometheus.Counter
	bookings    *prometheus.CounterVec // transition
	guards      *prometheus.CounterVec // check
	payments    *prometheus.CounterVec // op, outcome
	admitted    prometheus.Counter
	decided     *prometheus.CounterVec // status, reason
	unavailable *prometheus.CounterVec // port
	purged      *prometheus.CounterVec // what
	upkeep      *prometheus.CounterVec // action
	waits       prometheus.Histogram
	waitErrors  prometheus.Histogram
	estimates   *prometheus.CounterVec // accuracy
}

// Label values, all registered at start so that every series is scraped
// (at 0) before it first moves: an alert on a rate needs the series.
var (
	holdOutcomes    = []string{"granted", "refused", "unavailable", "error"}
	transitions     = []string{"held", "confirmed", "released", "expired", "cancelled"}
	guardChecks     = []string{"seat_sold_at_reserve", "seat_sold_at_confirm", "fencing"}
	paymentOps      = []string{"authorize", "capture", "void", "refund"}
	paymentOutcomes = []string{"ok", "declined", "unavailable", "error"}
	ports           = []string{"store", "holds", "payments", "queue"}
	upkeepActions   = []string{"return_handled", "waitlist_offer", "refund_recorded", "capture_recorded"}
	decisions       = map[string][]string{
		"held":     {""},
		"rejected": {boxoffice.ESOLDOUT, boxoffice.ESEATTAKEN, boxoffice.ELIMIT, boxoffice.ESALECLOSED, boxoffice.EINVALID, "other"},
	}
)

func newSaleMetrics() *saleMetrics {
	m := &saleMetrics{
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_holds_total",
			Help: "Seat holds asked of the lock layer, by outcome: granted, refused (a seat taken), unavailable (the lock store failed closed), error.",
		}, []string{"outcome"}),
		heldSeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_held_seats_total",
			Help: "Seats of the holds granted.",
		}),
		released: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_hold_releases_total",
			Help: "Holds released early (a release, a failed booking, a handed-back offer).",
		}),
		bookings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_bookings_total",
			Help: "Bookings written to the store, by transition: held (pending), confirmed (paid), released, expired, cancelled.",
		}, []string{"transition"}),
		guards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_guard_hits_total",
			Help: "The database refusing what the lock layer let through: a sold seat at reserve or at confirm (the unique index on valid tickets), a fencing token beaten by a newer hold. Should stay near 0; a burst after a Redis restart is expected, anything else is worth a look.",
		}, []string{"check"}),
		payments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_payments_total",
			Help: "Calls to the payment gateway, by operation and outcome.",
		}, []string{"op", "outcome"}),
		admitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "boxoffice_queue_admitted_total",
			Help: "Requests admitted to a queued sale's queue (new 202s; replays of one request not counted).",
		}),
		decided: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_queue_decided_total",
			Help: "Queued requests decided by the booking workers (first decisions only), by status and reason: the drain rate.",
		}, []string{"status", "reason"}),
		unavailable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_unavailable_total",
			Help: "Calls that failed closed (EUNAVAILABLE, answered 503 with Retry-After) by the port that failed: store, holds, payments, queue.",
		}, []string{"port"}),
		upkeep: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_upkeep_total",
			Help: "What the background passes did: returns handled (seats back from expiry, release or cancellation, offered to the waitlist or freed), waitlist offers booked, refunds and captures recorded.",
		}, []string{"action"}),
		waits: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "boxoffice_queue_wait_seconds",
			Help:    "Time from a queued request's 202 to its decision by a worker (requests admitted after the opening, sold-out answers excluded).",
			Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600},
		}),
		waitErrors: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "boxoffice_queue_wait_estimate_error_seconds",
			Help:    "The real wait of a queued request minus the wait its 202 estimated: positive when the buyer waited longer than told.",
			Buckets: []float64{-300, -60, -30, -10, -5, -2, -1, 0, 1, 2, 5, 10, 30, 60, 300},
		}),
		estimates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_queue_wait_estimates_total",
			Help: "Queued requests' first wait estimates measured against the real wait, by accuracy: within (off by at most 25% of the real wait + 2 s) or outside.",
		}, []string{"accuracy"}),
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "boxoffice_purged_total",
			Help: "Rows the upkeep purged, by what: idempotency records, published outbox events.",
		}, []string{"what"}),
	}
	for _, o := range holdOutcomes {
		m.holds.WithLabelValues(o)
	}
	for _, t := range transitions {
		m.bookings.WithLabelValues(t)
	}
	for _, c := range guardChecks {
		m.guards.WithLabelValues(c)
	}
	for _, op := range paymentOps {
		for _, o := range paymentOutcomes {
			m.payments.WithLabelValues(op, o)
		}
	}
	for status, reasons := range decisions {
		for _, r := range reasons {
			m.decided.WithLabelValues(status, r)
		}
	}
	for _, p := range ports {
		m.unavailable.WithLabelValues(p)
	}
	for _, a := range upkeepActions {
		m.upkeep.WithLabelValues(a)
	}
	for _, w := range []string{"idempotency", "outbox"} {
		m.purged.WithLabelValues(w)
	}
	for _, a := range []string{"within", "outside"} {
		m.estimates.WithLabelValues(a)
	}
	return m
}

func (m *saleMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.holds, m.heldSeats, m.released, m.bookings, m.guards, m.payments,
		m.admitted, m.decided, m.unavailable, m.purged, m.upkeep, m.waits, m.waitErrors, m.estimates}
}

// failed counts an outage of port; it says whether err was one.
func (m *saleMetrics) failed(port string, err error) bool {
	if boxoffice.ErrorCode(err) == boxoffice.EUNAVAILABLE {
		m.unavailable.WithLabelValues(port).Inc()
		return true
	}
	return false
}

// Ports are the ports Instrument wraps; a nil one stays nil.
type Ports struct {
	Store    boxoffice.Store
	Holds    boxoffice.Holds
	Payments boxoffice.PaymentGateway
	Queue    boxoffice.QueueState
	// QueuePurge is nil where the queue has none.
	QueuePurge boxoffice.QueuePurger
}

// Instrument returns p with each port counted into r's sale metrics.
func (r *Registry) Instrument(p Ports) Ports {
	m := r.sale
	if p.Store != nil {
		p.Store = &store{Store: p.Store, m: m}
	}
	if p.Holds != nil {
		h := &holds{Holds: p.Holds, m: m}
		p.Holds = h
		if lh, ok := h.Holds.(boxoffice.LeasedHolds); ok {
			p.Holds = &leasedHolds{holds: h, leased: lh}
		}
	}
	if p.Payments != nil {
		p.Payments = &payments{PaymentGateway: p.Payments, m: m}
	}
	if p.Queue != nil {
		p.Queue = &queue{QueueState: p.Queue, m: m}
	}
	if p.QueuePurge != nil {
		p.QueuePurge = &queuePurge{QueuePurger: p.QueuePurge, m: m}
	}
	return p
}

// --- the lock layer -------------------------------------------------------

type holds struct {
	boxoffice.Holds
	m *saleMetrics
}

func (h *holds) count(hold boxoffice.Hold, err error) {
	switch code := boxoffice.ErrorCode(err); {
	case err == nil:
		h.m.holds.WithLabelValues("granted").Inc()
		h.m.heldSeats.Add(float64(len(hold.SeatIDs)))
	case code == boxoffice.ESEATTAKEN:
		h.m.holds.WithLabelValues("refused").Inc()
	case h.m.failed("holds", err):
		h.m.holds.WithLabelValues("unavailable").Inc()
	default:
		h.m.holds.WithLabelValues("error").Inc()
	}
}

func (h *holds) Acquire(ctx context.Context, req boxoffice.HoldRequest) (boxoffice.Hold, error) {
	hold, err := h.Holds.Acquire(ctx, req)
	h.count(hold, err)
	return hold, err
}

// leasedHolds is holds over a LeasedHolds, which it stays.
type leasedHolds struct {
	*holds
	leased boxoffice.LeasedHolds
}

// AcquireLeased counts a hold's outcome; a lease in flight is no hold's.
func (h *leasedHolds) AcquireLeased(ctx context.Context, req boxoffice.HoldRequest, key string, ttl time.Duration) (boxoffice.Hold, func(), error) {
	hold, release, err := h.leased.AcquireLeased(ctx, req, key, ttl)
	if boxoffice.ErrorCode(err) != boxoffice.EIDEMINFLIGHT {
		h.count(hold, err)
	}
	return hold, release, err
}

func (h *leasedHolds) OpenMarks(ctx context.Context, eventID boxoffice.ID, sections []string, keep time.Duration) error {
	return h.leased.OpenMarks(ctx, eventID, sections, keep)
}

var _ boxoffice.LeasedHolds = (*leasedHolds)(nil)

func (h *holds) AcquireMany(ctx context.Context, reqs []boxoffice.HoldRequest) ([]boxoffice.Hold, []error) {
	hs, errs := h.Holds.AcquireMany(ctx, reqs)
	for i := range reqs {
		var hold boxoffice.Hold
		if i < len(hs) {
			hold = hs[i]
		}
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		h.count(hold, err)
	}
	return hs, errs
}

func (h *holds) Release(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID) (int, error) {
	n, err := h.Holds.Release(ctx, eventID, seatIDs, owner)
	if !h.m.failed("holds", err) && err == nil && n > 0 {
		h.m.released.Inc()
	}
	return n, err
}

func (h *holds) Verify(ctx context.Context, eventID boxoffice.ID, seatIDs []string, owner boxoffice.ID, fence int64) error {
	err := h.Holds.Verify(ctx, eventID, seatIDs, owner, fence)
	h.m.failed("holds", err)
	return err
}

// --- the store ---------------------------------------------------------------

type store struct {
	boxoffice.Store
	m *saleMetrics
}

func (s *store) booked(err error) {
	switch {
	case err == nil:
		s.m.bookings.WithLabelValues("held").Inc()
	case boxoffice.ErrorCode(err) == boxoffice.ESEATTAKEN:
		s.m.guards.WithLabelValues("seat_sold_at_reserve").Inc()
	default:
		s.m.failed("store", err)
	}
}

func (s *store) CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error {
	err := s.Store.CreateBooking(ctx, nb)
	s.booked(err)
	if err == nil && nb.Booking.WaitlistEntryID != 0 {
		s.m.upkeep.WithLabelValues("waitlist_offer").Inc()
	}
	return err
}

func (s *store) DeleteReturn(ctx context.Context, id int64) error {
	err := s.Store.DeleteReturn(ctx, id)
	if err == nil {
		s.m.upkeep.WithLabelValues("return_handled").Inc()
	}
	s.m.failed("store", err)
	return err
}

func (s *store) MarkCaptured(ctx context.Context, eventID, bookingID boxoffice.ID) error {
	err := s.Store.MarkCaptured(ctx, eventID, bookingID)
	if err == nil {
		s.m.upkeep.WithLabelValues("capture_recorded").Inc()
	}
	s.m.failed("store", err)
	return err
}

func (s *store) MarkRefunded(ctx context.Context, bookingID boxoffice.ID, now time.Time) error {
	err := s.Store.MarkRefunded(ctx, bookingID, now)
	if err == nil {
		s.m.upkeep.WithLabelValues("refund_recorded").Inc()
	}
	s.m.failed("store", err)
	return err
}

func (s *store) CreateBookings(ctx context.Context, nbs []boxoffice.NewBooking) ([]error, error) {
	errs, err := s.Store.CreateBookings(ctx, nbs)
	if err != nil {
		s.m.failed("store", err)
		return errs, err
	}
	for _, e := range errs {
		s.booked(e)
	}
	return errs, err
}

func (s *store) ConfirmBooking(ctx context.Context, c boxoffice.ConfirmBooking) (*boxoffice.Booking, error) {
	b, err := s.Store.ConfirmBooking(ctx, c)
	switch boxoffice.ErrorCode(err) {
	case "":
		s.m.bookings.WithLabelValues("confirmed").Inc()
	case boxoffice.ESEATTAKEN:
		s.m.guards.WithLabelValues("seat_sold_at_confirm").Inc()
	case boxoffice.EHOLDLOST:
		s.m.guards.WithLabelValues("fencing").Inc()
	default:
		s.m.failed("store", err)
	}
	return b, err
}

func (s *store) ReleaseBooking(ctx context.Context, id boxoffice.ID, to boxoffice.BookingStatus, now time.Time) (*boxoffice.Booking, error) {
	b, err := s.Store.ReleaseBooking(ctx, id, to, now)
	if err == nil && b != nil && b.Status == to {
		s.m.bookings.WithLabelValues(string(to)).Inc()
	}
	s.m.failed("store", err)
	return b, err
}

func (s *store) ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*boxoffice.Booking, error) {
	bs, err := s.Store.ExpireBookings(ctx, cutoff, limit)
	s.m.bookings.WithLabelValues("expired").Add(float64(len(bs)))
	s.m.failed("store", err)
	return bs, err
}

func (s *store) CancelBooking(ctx context.Context, c boxoffice.CancelBooking) (*boxoffice.Booking, error) {
	b, err := s.Store.CancelBooking(ctx, c)
	if err == nil {
		s.m.bookings.WithLabelValues("cancelled").Inc()
	}
	s.m.failed("store", err)
	return b, err
}

func (s *store) PurgeIdempotency(ctx context.Context, now time.Time) (int, error) {
	n, err := s.Store.PurgeIdempotency(ctx, now)
	s.m.purged.WithLabelValues("idempotency").Add(float64(n))
	s.m.failed("store", err)
	return n, err
}

func (s *store) PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error) {
	n, err := s.Store.PurgeOutbox(ctx, cutoff)
	s.m.purged.WithLabelValues("outbox").Add(float64(n))
	s.m.failed("store", err)
	return n, err
}

type queuePurge struct {
	boxoffice.QueuePurger
	m *saleMetrics
}

func (q *queuePurge) PurgeDecided(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	n, err := q.QueuePurger.PurgeDecided(ctx, cutoff, limit)
	q.m.purged.WithLabelValues("queue_request").Add(float64(n))
	q.m.failed("store", err)
	return n, err
}

// --- the payment gateway -----------------------------------------------------

type payments struct {
	boxoffice.PaymentGateway
	m *saleMetrics
}

func (p *payments) count(op string, err error) {
	switch code := boxoffice.ErrorCode(err); {
	case err == nil:
		p.m.payments.WithLabelValues(op, "ok").Inc()
	case code == boxoffice.EPAYMENTDECLINED:
		p.m.payments.WithLabelValues(op, "declined").Inc()
	case p.m.failed("payments", err):
		p.m.payments.WithLabelValues(op, "unavailable").Inc()
	default:
		p.m.payments.WithLabelValues(op, "error").Inc()
	}
}

func (p *payments) Authorize(ctx context.Context, req boxoffice.PaymentRequest) (boxoffice.Authorization, error) {
	a, err := p.PaymentGateway.Authorize(ctx, req)
	p.count("authorize", err)
	return a, err
}

func (p *payments) Capture(ctx context.Context, authID string) error {
	err := p.PaymentGateway.Capture(ctx, authID)
	p.count("capture", err)
	return err
}

func (p *payments) Void(ctx context.Context, authID string) error {
	err := p.PaymentGateway.Void(ctx, authID)
	p.count("void", err)
	return err
}

func (p *payments) Refund(ctx context.Context, authID string, amountCents int64, key string) error {
	err := p.PaymentGateway.Refund(ctx, authID, amountCents, key)
	p.count("refund", err)
	return err
}

// --- the queue's state -------------------------------------------------------

type queue struct {
	boxoffice.QueueState
	m *saleMetrics
}

func (q *queue) Admit(ctx context.Context, r *boxoffice.QueuedRequest, maxLive int, preQueue bool) (*boxoffice.QueueEntry, bool, error) {
	e, replay, err := q.QueueState.Admit(ctx, r, maxLive, preQueue)
	if err == nil && !replay {
		q.m.admitted.Inc()
	}
	q.m.failed("queue", err)
	return e, replay, err
}

func (q *queue) AdmitMany(ctx context.Context, as []boxoffice.Admission) ([]boxoffice.Admitted, error) {
	out, err := q.QueueState.AdmitMany(ctx, as)
	for _, a := range out {
		if a.Err == nil && !a.Replay {
			q.m.admitted.Inc()
		}
		q.m.failed("queue", a.Err)
	}
	q.m.failed("queue", err)
	return out, err
}

func (q *queue) decided(r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) {
	status, reason := string(o.Status), ""
	if _, ok := decisions[status]; !ok {
		return
	}
	if status == "rejected" {
		reason = "other"
		for _, r := range decisions[status] {
			if o.Reason == r {
				reason = r
			}
		}
	}
	q.m.decided.WithLabelValues(status, reason).Inc()
	q.m.waited(r, o)
}

// waited measures a decided request's wait against the estimate its 202
// told. A sold-out answer is left out: it is told at the sell-out, not at
// the request's turn, which is what the estimate predicts.
func (m *saleMetrics) waited(r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) {
	if r == nil || r.EstimatedWait == nil || o.Reason == boxoffice.ESOLDOUT || o.FinishedAt.IsZero() {
		return
	}
	wait := max(0, o.FinishedAt.Sub(r.EnqueuedAt).Seconds())
	off := wait - *r.EstimatedWait
	m.waits.Observe(wait)
	m.waitErrors.Observe(off)
	if boxoffice.WaitEstimateWithin(*r.EstimatedWait, wait) {
		m.estimates.WithLabelValues("within").Inc()
	} else {
		m.estimates.WithLabelValues("outside").Inc()
	}
}

func (q *queue) Finish(ctx context.Context, r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) (bool, error) {
	first, err := q.QueueState.Finish(ctx, r, o)
	if err == nil && first {
		q.decided(r, o)
	}
	q.m.failed("queue", err)
	return first, err
}

func (q *queue) FinishMany(ctx context.Context, rs []*boxoffice.QueuedRequest, os []boxoffice.QueueOutcome) ([]bool, error) {
	first, err := q.QueueState.FinishMany(ctx, rs, os)
	return q.finished(rs, os, first, err)
}

// FinishEntries passes the entries on where the state takes them, and is
// FinishMany where it does not.
func (q *queue) FinishEntries(ctx context.Context, rs []*boxoffice.QueuedRequest, es []*boxoffice.QueueEntry, os []boxoffice.QueueOutcome) ([]bool, error) {
	first, err := boxoffice.FinishWithEntries(ctx, q.QueueState, rs, es, os)
	return q.finished(rs, os, first, err)
}

// finished counts the outcomes of a batch that were decided at last.
func (q *queue) finished(rs []*boxoffice.QueuedRequest, os []boxoffice.QueueOutcome, first []bool, err error) ([]bool, error) {
	if err == nil {
		for i, f := range first {
			if f && i < len(os) && i < len(rs) {
				q.decided(rs[i], os[i])
			}
		}
	}
	q.m.failed("queue", err)
	return first, err
}
