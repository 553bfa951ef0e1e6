package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The steady-state drill: many direct-sale events on sale at once, their
// popularity Zipf-skewed, a mix of seat-map reads, holds, payments,
// releases and cancellations spread over them for minutes, sampled every
// interval so that one can see whether latency and memory stay flat. The
// flash-sale drill (Run) answers "does it hold at the peak of one sale";
// this one answers "does it hold on an ordinary day of many".

// SteadyConfig is a steady-state drill's size, mix and pace.
// DefaultSteadyConfig is 1,000 events of 500 seats for 3 minutes.
type SteadyConfig struct {
	// Events are created over HTTP before the load, each a direct sale
	// open now, its show in the future, refundable until
	// RefundCutoffHours before it. Every event has the same venue: about
	// Seats seats in Sections sections (rows of up to 50).
	Events, Seats, Sections int
	TicketLimit             int
	RefundCutoffHours       int
	// Zipf is the exponent of the events' popularity: the k-th event is
	// drawn with a weight of k^-Zipf (0: uniform).
	Zipf float64
	// Users is how many distinct signed-in users the load spreads over.
	Users int
	// Duration is the load's length; Interval the sampling period.
	Duration, Interval time.Duration
	// Conns is the load generator's concurrency: that many bookings under
	// way at once, each worker starting the next as soon as one ends.
	// Rate, when positive, caps the bookings started per second instead
	// of running flat out.
	Conns int
	Rate  float64
	// BestShare of bookings ask for the best seats side by side in a
	// section instead of naming 1-4 seats picked from the map read.
	BestShare float64
	// Of the holds, ConfirmShare are paid (testpay's tok_visa),
	// ReleaseShare released (DELETE), the rest left to expire.
	ConfirmShare, ReleaseShare float64
	// CancelShare of the paid bookings are cancelled for a refund
	// CancelAfter after their payment.
	CancelShare float64
	CancelAfter time.Duration
	// MapReads is the seat-map reads per booking (at least one: the read
	// the seats are picked from; the rest alternate the full map and the
	// compact view, with If-None-Match, as a browsing page does).
	MapReads float64
	// Attempts is how many reserves a booking sends at most, the next
	// after a seat_taken rejection (on a fresh read of the map).
	Attempts int
	// Timeout bounds one attempt, Retries the further attempts after a
	// timeout or a 5xx (with the same idempotency key).
	Timeout time.Duration
	Retries int
	// Ceiling is how long the bare handler is measured (0: not at all).
	Ceiling time.Duration
	Seed    uint64
}

// DefaultSteadyConfig is 1,000 events of 500 seats (quick to create; the
// seed's average event has 5,000), Zipf 1.1, for 3 minutes sampled every
// 5 s.
func DefaultSteadyConfig() SteadyConfig {
	return SteadyConfig{
		Events: 1000, Seats: 500, Sections: 4, TicketLimit: 8, RefundCutoffHours: 24,
		Zipf: 1.1, Users: 20_000, Duration: 3 * time.Minute, Interval: 5 * time.Second,
		Conns: 64, BestShare: 0.2, ConfirmShare: 0.8, ReleaseShare: 0.1,
		CancelShare: 0.05, CancelAfter: 10 * time.Second, MapReads: 3, Attempts: 2,
		Timeout: 5 * time.Second, Retries: 2, Ceiling: 3 * time.Second, Seed: 1,
	}
}

// Validate reports a configuration the steady drill cannot run.
func (c SteadyConfig) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Events >= 1 && c.Events <= 100_000, "--events must be 1 to 100,000")
	check(c.Sections >= 1 && c.Sections <= boxoffice.MaxSections, "--sections must be 1 to %d", boxoffice.MaxSections)
	check(c.Seats >= 1 && c.Seats <= boxoffice.MaxSeatsPerEvent, "--seats must be 1 to %d", boxoffice.MaxSeatsPerEvent)
	if c.Seats >= 1 && c.Sections >= 1 {
		_, rows, width := steadySectionShape(c.Seats, c.Sections)
		check(rows <= boxoffice.MaxRowsPerSection && width >= 1, "--seats / --sections makes sections of more than %d rows", boxoffice.MaxRowsPerSection)
		check(c.Seats >= c.Sections, "--seats must be at least --sections")
	}
	check(c.TicketLimit >= 4 && c.TicketLimit <= boxoffice.MaxTicketLimit, "--ticket-limit must be 4 to %d (bookings are up to 4 seats)", boxoffice.MaxTicketLimit)
	check(c.RefundCutoffHours >= 0 && c.RefundCutoffHours <= 24*20, "--refund-cutoff-hours must be 0 to 480 (the shows are 30 days out)")
	check(c.Zipf >= 0 && c.Zipf <= 10, "--zipf must be 0 to 10")
	check(c.Users >= 1, "--users must be positive")
	check(c.Interval >= 100*time.Millisecond, "--interval must be at least 100ms")
	check(c.Duration >= 3*c.Interval, "--duration must be at least 3 intervals")
	check(c.Conns >= 1 && c.Conns <= 4096, "--conns must be 1 to 4096")
	check(c.Rate >= 0, "--rate must not be negative")
	check(c.BestShare >= 0 && c.BestShare <= 1, "--best-available-share must be within 0..1")
	check(c.ConfirmShare >= 0 && c.ReleaseShare >= 0 && c.ConfirmShare+c.ReleaseShare <= 1, "--confirm-share + --release-share must be within 0..1")
	check(c.CancelShare >= 0 && c.CancelShare <= 1, "--cancel-share must be within 0..1")
	check(c.CancelAfter >= 0, "--cancel-after must not be negative")
	check(c.MapReads >= 1 && c.MapReads <= 100, "--map-reads must be 1 to 100")
	check(c.Attempts >= 1, "--attempts must be at least 1")
	check(c.Timeout > 0 && c.Retries >= 0, "--timeout must be positive and --retries not negative")
	check(c.Ceiling >= 0, "--ceiling must not be negative")
	return errors.Join(errs...)
}

// SteadyTarget is the boxoffice under a steady drill: the flash drill's
// Target (its Queue is not used: the events are direct sales) and how to
// read the server's memory.
type SteadyTarget struct {
	Target
	// Memory returns the server's memory now: ProcessMemory for a server
	// in this process, MetricsMemory for one at a URL (nil: not sampled).
	Memory func(ctx context.Context) (Memory, error)
}

// RunSteady creates the events, runs the mix for cfg.Duration, sampling
// every cfg.Interval, then audits every event through the store. The
// verdict is SteadyResult.Failed; an error means the drill itself could
// not run.
func RunSteady(ctx context.Context, cfg SteadyConfig, t SteadyTarget) (*SteadyResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckLoopback(t.URL); err != nil {
		return nil, err
	}
	if t.Audit == nil || t.Token == nil {
		return nil, errors.New("drill: the target needs a token issuer and a store auditor")
	}
	res := &SteadyResult{Config: cfg, Shape: t.Shape, Started: time.Now()}
	var err error
	if res.Ceilings, err = measureCeilings(ctx, Config{Conns: cfg.Conns, Ceiling: cfg.Ceiling}, t.Target, t.Progress); err != nil {
		return nil, err
	}
	r := newSteadyRunner(cfg, t)
	defer r.c.hc.CloseIdleConnections()
	if err := r.setUp(ctx, res); err != nil {
		return nil, err
	}
	r.load(ctx, res)
	if err := r.audit(ctx, res); err != nil {
		return nil, fmt.Errorf("drill: audit: %w", err)
	}
	r.results(res)
	return res, nil
}

// steadyRunner is one steady drill in progress.
type steadyRunner struct {
	cfg    SteadyConfig
	t      SteadyTarget
	runID  string
	c      *client // bookings (retries with the same key)
	rc     *client // set-up (more patient)
	events []*steadyEvent
	pick   *zipfPicker
	layout *Layout // every event's: one venue
	tokens []string

	ops     [NumOps]opStats
	answers [NumOps]counter
	ends    counter
	looks   counter // what each look at a map found
	cancels cancelQueue

	bookings, reserves, requests, reads, flows atomic.Int64

	rateMu sync.Mutex
	rate   bucket
}

// steadyEvent is one event on sale and what the drill did to it.
type steadyEvent struct {
	id  string
	eid boxoffice.ID
	// skipUntil (unix ns): the map last showed nothing available, so
	// bookings look elsewhere until then, as people do.
	skipUntil atomic.Int64

	mu                 sync.Mutex
	seatsTag, availTag string
	// paid answered 200 to a confirm; cancelTried had a cancel sent
	// (whatever came back), cancelled answered 200 to one.
	paid, cancelTried, cancelled []boxoffice.ID
}

// soldOutPause is how long bookings skip an event whose map showed
// nothing available (holds expire and cancellations return seats).
const soldOutPause = 15 * time.Second

func newSteadyRunner(cfg SteadyConfig, t SteadyTarget) *steadyRunner {
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	r := &steadyRunner{cfg: cfg, t: t, runID: hex.EncodeToString(id), pick: newZipfPicker(cfg.Events, cfg.Zipf)}
	hc := &http.Client{Transport: newTransport(cfg.Conns + 8)}
	count := func(string, string, time.Duration) { r.requests.Add(1) }
	r.c = &client{base: strings.TrimRight(t.URL, "/"), hc: hc, timeout: cfg.Timeout, retries: cfg.Retries, attempt: count}
	r.rc = &client{base: r.c.base, hc: hc, timeout: 30 * time.Second, retries: 4}
	if cfg.Rate > 0 {
		r.rate = bucket{rate: cfg.Rate, burst: max(1, cfg.Rate/20)}
	}
	return r
}

// organisers is how many organiser identities create the events: the
// per-user rate limit (10/s, burst 40 by default) applies to them too.
const organisers = 64

// setUp creates the events (a few at a time), reads the venue's layout,
// warms every event's seat map once (a node that has been up for hours
// has them all cached) and issues the users' tokens.
func (r *steadyRunner) setUp(ctx context.Context, res *SteadyResult) error {
	start := time.Now()
	admins := make([]string, organisers)
	for i := range admins {
		tok, err := r.t.Token(fmt.Sprintf("steady-organiser-%s-%d", r.runID, i), "admin")
		if err != nil {
			return err
		}
		admins[i] = tok
	}
	venue := SteadyVenue(r.cfg.Seats, r.cfg.Sections)
	r.events = make([]*steadyEvent, r.cfg.Events)
	seatCounts := make([]int, r.cfg.Events)
	var created atomic.Int64
	err := r.each(ctx, r.cfg.Events, func(i int) error {
		now := time.Now()
		body := map[string]any{
			"name": fmt.Sprintf("Steady %s #%d", r.runID, i+1), "venue": "Steady Hall", "sale_mode": "direct",
			// Shows 30-60 days out, the sale open since a minute ago.
			"starts_at":           now.Add(time.Duration(30*24+i%(30*24)) * time.Hour).UTC().Format(time.RFC3339),
			"sale_opens_at":       now.Add(-time.Minute).UTC().Format(time.RFC3339),
			"ticket_limit":        r.cfg.TicketLimit,
			"refund_cutoff_hours": r.cfg.RefundCutoffHours,
			"sections":            venue,
		}
		a := r.rc.call(ctx, http.MethodPost, "/events", admins[i%organisers], body, "")
		if a.Status != http.StatusCreated {
			return fmt.Errorf("drill: create event %d: %s %s", i+1, a.label(), bytesHead(a.Body))
		}
		var ev struct {
			ID        string `json:"event_id"`
			SeatCount int    `json:"seat_count"`
		}
		if err := json.Unmarshal(a.Body, &ev); err != nil {
			return fmt.Errorf("drill: create event %d: %w", i+1, err)
		}
		eid, err := boxoffice.ParseID(ev.ID)
		if err != nil {
			return err
		}
		r.events[i], seatCounts[i] = &steadyEvent{id: ev.ID, eid: eid}, ev.SeatCount
		if n := created.Add(1); r.t.Progress != nil && (n%200 == 0 || int(n) == r.cfg.Events) {
			fmt.Fprintf(r.t.Progress, "steady: %d of %d events created (%.0fs)\n", n, r.cfg.Events, time.Since(start).Seconds())
		}
		return nil
	})
	if err != nil {
		return err
	}
	res.Created = time.Since(start)
	// One venue: the client keeps one layout, as a browser keeps an
	// immutable resource. The first and the last event's must agree.
	for _, i := range []int{0, len(r.events) - 1} {
		a := r.rc.call(ctx, http.MethodGet, "/events/"+r.events[i].id+"/layout", "", nil, "")
		if a.Status != http.StatusOK {
			return fmt.Errorf("drill: the layout of event %s: %s", r.events[i].id, a.label())
		}
		l, err := ParseLayout(a.Body)
		if err != nil {
			return err
		}
		if r.layout == nil {
			r.layout = l
		} else if !slices.Equal(r.layout.Seats, l.Seats) {
			return fmt.Errorf("drill: events %s and %s have different layouts", r.events[0].id, r.events[i].id)
		}
	}
	err = r.each(ctx, r.cfg.Events, func(i int) error {
		a := r.rc.call(ctx, http.MethodGet, "/events/"+r.events[i].id+"/availability", "", nil, "")
		if a.Status != http.StatusOK {
			return fmt.Errorf("drill: the map of event %s: %s", r.events[i].id, a.label())
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.tokens = make([]string, r.cfg.Users)
	for i := range r.tokens {
		if r.tokens[i], err = r.t.Token(fmt.Sprintf("steady-%s-%d", r.runID, i), ""); err != nil {
			return err
		}
	}
	res.Events, res.SeatsPerEvent, res.Sections = len(r.events), seatCounts[0], len(venue)
	for _, n := range seatCounts {
		res.Seats += n
	}
	seen := map[string]bool{}
	for _, s := range venue {
		if !seen[s.PriceTier] {
			seen[s.PriceTier] = true
			res.Tiers = append(res.Tiers, s.PriceTier)
		}
	}
	res.SetUp = time.Since(start)
	if r.t.Progress != nil {
		fmt.Fprintf(r.t.Progress, "steady: set up in %.1fs (events created in %.1fs, maps warmed, %d user tokens)\n",
			res.SetUp.Seconds(), res.Created.Seconds(), len(r.tokens))
	}
	return nil
}

// each runs fn(0..n-1), eight at a time, and returns the first error.
func (r *steadyRunner) each(ctx context.Context, n int, fn func(i int) error) error {
	work := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range min(8, n) {
		wg.Go(func() {
			for i := range work {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// load runs the workers for the duration, sampling every interval. The
// workers start no new booking once the duration is up, but finish the
// one under way, so that no answer is left unknown for the audit.
func (r *steadyRunner) load(ctx context.Context, res *SteadyResult) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range r.cfg.Conns {
		wg.Go(func() { r.worker(ctx, stop, w) })
	}
	t0 := time.Now()
	deadline := t0.Add(r.cfg.Duration)
	tick := time.NewTicker(r.cfg.Interval)
	s := sampler{r: r, t0: t0, last: t0}
	end := time.NewTimer(r.cfg.Duration)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-tick.C:
			if now.Before(deadline) {
				res.Intervals = append(res.Intervals, s.sample(ctx, now))
			}
		case now := <-end.C:
			// The last, partial interval counts if it is at least half one.
			if now.Sub(s.last) >= r.cfg.Interval/2 {
				res.Intervals = append(res.Intervals, s.sample(ctx, now))
			}
			break loop
		}
	}
	tick.Stop()
	end.Stop()
	res.Load = time.Since(t0)
	close(stop)
	wg.Wait()
	res.Drained = time.Since(t0) - res.Load
}

// worker starts booking after booking until stop, doing the
// cancellations that have come due in between.
func (r *steadyRunner) worker(ctx context.Context, stop <-chan struct{}, w int) {
	rng := mrand.New(mrand.NewPCG(r.cfg.Seed, uint64(w)+1))
	for seq := 1; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		if ctx.Err() != nil {
			return
		}
		if j, ok := r.cancels.pop(time.Now()); ok {
			r.cancel(ctx, j)
			continue
		}
		if !r.pace(ctx, stop) {
			return
		}
		r.flow(ctx, rng, fmt.Sprintf("steady-%s-%d-%d", r.runID, w, seq))
	}
}

// pace waits for the rate's next token when a rate is set; false when
// the load ended meanwhile.
func (r *steadyRunner) pace(ctx context.Context, stop <-chan struct{}) bool {
	if r.cfg.Rate <= 0 {
		return true
	}
	for {
		r.rateMu.Lock()
		ok, next := r.rate.take(time.Now())
		r.rateMu.Unlock()
		if ok {
			return true
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-stop:
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// pickEvent draws an event by popularity, drawing again (a few times) when
// the map last showed the one drawn sold out.
func (r *steadyRunner) pickEvent(rng *mrand.Rand) *steadyEvent {
	now := time.Now().UnixNano()
	var ev *steadyEvent
	for range 20 {
		ev = r.events[r.pick.pick(rng)]
		if ev.skipUntil.Load() <= now {
			return ev
		}
	}
	return ev
}

// steadyPartyWeights is the share of each party size 1..4.
var steadyPartyWeights = [...]float64{0.25, 0.45, 0.10, 0.20}

func steadyParty(p float64) int { return sizeOf(steadyPartyWeights[:], p) }

// SteadyVenue is the venue of every event of a steady drill: about seats
// seats in sections sections of equal size, in rows of up to 50, priced
// by quality as the flash drill's (Venue). A section's seats round up to
// whole rows of equal width.
func SteadyVenue(seats, sections int) []Section {
	n, rows, width := steadySectionShape(seats, sections)
	out := make([]Section, n)
	for i := range out {
		tier, cents := tierOf(i, n)
		out[i] = Section{Name: fmt.Sprintf("S%02d", i+1), PriceTier: tier, PriceCents: cents, Rows: rows, SeatsPerRow: width}
	}
	return out
}

func steadySectionShape(seats, sections int) (n, rows, width int) {
	if seats < 1 || sections < 1 {
		return 0, 0, 0
	}
	per := (seats + sections - 1) / sections
	rows = (per + seatsPerRow - 1) / seatsPerRow
	width = (per + rows - 1) / rows
	return sections, rows, width
}

// zipfPicker draws an index in [0, n) with probability proportional to
// (i+1)^-s, by inverting the cumulative weights: exact for any s >= 0
// (math/rand's Zipf needs s > 1).
type zipfPicker struct {
	cdf []float64
}

func newZipfPicker(n int, s float64) *zipfPicker {
	z := &zipfPicker{cdf: make([]float64, n)}
	total := 0.0
	for i := range z.cdf {
		total += math.Pow(float64(i+1), -s)
		z.cdf[i] = total
	}
	for i := range z.cdf {
		z.cdf[i] /= total
	}
	return z
}

func (z *zipfPicker) pick(rng *mrand.Rand) int {
	i, _ := slices.BinarySearch(z.cdf, rng.Float64())
	return min(i, len(z.cdf)-1)
}

// top is the share of the draws that go to the k most popular.
func (z *zipfPicker) top(k int) float64 {
	if k <= 0 || len(z.cdf) == 0 {
		return 0
	}
	return z.cdf[min(k, len(z.cdf))-1]
}
