// Package drill replays a flash sale's peak against a running boxoffice
// and answers what a user of the system asks first: did it oversell, did
// it lose anyone, how fast did it take requests, how long did people wait.
//
// A drill creates a queued event (70,000 seats by default, in sections of
// 2,000 with four price tiers, the sale opening a few seconds later), then
// lets a planned crowd arrive: a share in the waiting room before the
// opening, a burst at the opening, a tail after it. Each user picks
// adjacent seats from a possibly stale view of the seat map (or, a share of
// them, asks for the best available in a section), reserves with
// an idempotency key (retried with the same key on a timeout or a 5xx),
// polls the queue or listens on its stream, and pays, walks away, or tries
// other seats after a rejection. Readers hammer the seat map meanwhile.
//
// Everything users do goes through the public HTTP contract; the verdict
// does not. At the end the drill reads the store and the queue state
// directly (Auditor, boxoffice.QueueState): seats with two valid tickets,
// requests that got a 202 and no outcome, paid bookings the store does not
// have. The machine's ceilings (a bare net/http handler through the same
// client, and Redis's SET NX when Redis is in play) are measured in the
// same run, so every rate in the report is also a ratio.
package drill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Config is a drill's size, crowd and pace. DefaultConfig is the seed's
// peak scenario scaled to one machine.
type Config struct {
	Users       int
	Seats       int
	SectionSize int
	TicketLimit int
	// OpensIn is how long after the event's creation the sale opens; the
	// pre-queue share of the crowd arrives in that window.
	OpensIn time.Duration
	// Burst bounds 95% of the burst after the opening; the tail share
	// arrives uniformly over Tail after it (0: a third of Duration, at most
	// a minute, so that the tail arrives within the drill).
	Burst, Tail         time.Duration
	PreShare, TailShare float64
	// AbandonShare never poll; NoPayShare poll but never pay (their holds
	// expire).
	AbandonShare, NoPayShare float64
	// BestShare of users ask for the best seats side by side in a section
	// (best_available) instead of naming seats picked from the map.
	BestShare float64
	// Attempts is how many reserve requests a user sends at most, each
	// after the previous one was rejected because a seat was taken.
	Attempts int
	// ThinkMin and ThinkMax bound a payer's pause between the hold and the
	// confirm.
	ThinkMin, ThinkMax time.Duration
	// Duration caps the load: no user acts after it. Settle then bounds the
	// wait for the queue to drain before the audit.
	Duration, Settle time.Duration
	// Conns is the load generator's concurrency, Timeout one attempt's
	// bound, Retries the further attempts after a timeout or 5xx.
	Conns    int
	Timeout  time.Duration
	Retries  int
	PollRate float64
	// Readers hammer the seat map (alternately the full map with
	// If-None-Match and the compact view) while the sale runs.
	Readers int
	// SSE users listen on the live stream instead of polling.
	SSE int
	// Ceiling is how long the bare handler is measured (0: not at all).
	Ceiling time.Duration
	Seed    uint64
}

// DefaultConfig is 200,000 users for 70,000 seats, capped at 3 minutes.
func DefaultConfig() Config {
	return Config{
		Users: 200_000, Seats: 70_000, SectionSize: 2_000, TicketLimit: 6,
		OpensIn: 5 * time.Second, Burst: 10 * time.Second,
		PreShare: 0.30, TailShare: 0.15, AbandonShare: 0.10, NoPayShare: 0.15,
		Attempts: 3, ThinkMin: 2 * time.Second, ThinkMax: 8 * time.Second,
		Duration: 3 * time.Minute, Settle: 2 * time.Minute,
		Conns: 256, Timeout: 5 * time.Second, Retries: 4, PollRate: 3000,
		Readers: 2, SSE: 100, Ceiling: 3 * time.Second, Seed: 1,
	}
}

// TailSpan is the tail's length: Tail, or by default a third of the
// duration, at most a minute.
func (c Config) TailSpan() time.Duration {
	if c.Tail > 0 {
		return c.Tail
	}
	return min(time.Minute, c.Duration/3)
}

// Validate reports a configuration the drill cannot run.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Users > 0, "--users must be positive")
	check(c.Seats > 0 && c.Seats <= boxoffice.MaxSeatsPerEvent, "--seats must be between 1 and %d", boxoffice.MaxSeatsPerEvent)
	check(c.SectionSize > 0, "--section-size must be positive")
	check(c.SectionSize <= 0 || (c.Seats+c.SectionSize-1)/c.SectionSize <= boxoffice.MaxSections,
		"--seats / --section-size makes more than %d sections", boxoffice.MaxSections)
	check(c.TicketLimit >= 6 && c.TicketLimit <= boxoffice.MaxTicketLimit, "the ticket limit must be 6 to %d (parties are up to 6)", boxoffice.MaxTicketLimit)
	check(c.OpensIn >= time.Second, "--opens-in must be at least 1s")
	check(c.Burst > 0 && c.Tail >= 0, "--burst must be positive and --tail not negative")
	check(c.PreShare >= 0 && c.TailShare >= 0 && c.PreShare+c.TailShare <= 1, "--pre-share + --tail-share must be within 0..1")
	check(c.AbandonShare >= 0 && c.NoPayShare >= 0 && c.AbandonShare+c.NoPayShare <= 1, "--abandon-share + --no-pay-share must be within 0..1")
	check(c.BestShare >= 0 && c.BestShare <= 1, "--best-available-share must be within 0..1")
	check(c.Attempts >= 1, "--attempts must be at least 1")
	check(c.ThinkMin >= 0 && c.ThinkMax >= c.ThinkMin, "--think-min must not exceed --think-max")
	check(c.Duration > 0 && c.Settle >= 0, "--duration must be positive")
	check(c.OpensIn+c.TailSpan() < c.Duration, "--opens-in + --tail must end before --duration, or the tail never arrives")
	check(c.Conns >= 1 && c.Conns <= 4096, "--conns must be 1 to 4096")
	check(c.Timeout > 0 && c.Retries >= 0, "--timeout must be positive")
	check(c.PollRate >= 0 && c.Readers >= 0 && c.SSE >= 0, "--poll-rate, --readers and --sse must not be negative")
	return errors.Join(errs...)
}

// Target is the boxoffice under drill and the direct access the audit
// needs.
type Target struct {
	// URL is the server's base URL (loopback only: see CheckLoopback).
	URL string
	// Token issues a bearer token for a user (role "admin" for the
	// organiser who creates the event).
	Token func(sub, role string) (string, error)
	// Queue is the queue state the server uses (the embedded database's,
	// or Redis's), read directly by the audit.
	Queue boxoffice.QueueState
	// Audit reads the store's tables directly.
	Audit Auditor
	// Shape describes the stores and workers, for the report.
	Shape string
	// RedisAddr, when the target uses Redis, is measured for the ceiling.
	RedisAddr string
	// Progress receives a line every few seconds while the drill runs
	// (nil: none).
	Progress io.Writer
}

// Run runs the drill and returns its result; the verdict is
// Result.Failed. An error means the drill itself could not run.
func Run(ctx context.Context, cfg Config, t Target) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckLoopback(t.URL); err != nil {
		return nil, err
	}
	if t.Queue == nil || t.Audit == nil || t.Token == nil {
		return nil, errors.New("drill: the target needs a token issuer, the queue state and a store auditor")
	}
	res := &Result{Config: cfg, Shape: t.Shape, Started: time.Now()}
	var err error
	if res.Ceilings, err = measureCeilings(ctx, cfg, t, t.Progress); err != nil {
		return nil, err
	}
	r := newRunner(cfg, t)
	defer r.c.hc.CloseIdleConnections()
	defer r.sse.CloseIdleConnections()
	if err := r.setUp(ctx, res); err != nil {
		return nil, err
	}
	r.load(ctx)
	res.LoadEnded = time.Since(r.t0)
	r.settle(ctx, res)
	res.Ended = time.Since(r.t0)
	if err := r.audit(ctx, res); err != nil {
		return nil, fmt.Errorf("drill: audit: %w", err)
	}
	r.results(res)
	return res, nil
}

// runner is one drill in progress.
type runner struct {
	cfg   Config
	t     Target
	runID string
	c     *client // the users'
	rc    *client // the seat-map readers' (no retries)
	sse   *http.Client
	sched *scheduler
	view  *View
	users []*user

	eventID string
	event   boxoffice.ID
	t0      time.Time // the event's creation: second 0 of every series
	open    time.Time
	ready   time.Time // set-up done: no user acts before

	arrivals, sent, admitted, refused, polls, confirmed, reads200, reads304 *series
	to202, sendLag, service, confirmTime, pollLag                           samples
	reserveService, pollService, confirmService                             samples
	answers, outcomes, confirms, ends, pollErrors                           counter
	retries, noEstimate                                                     atomic.Int64

	mu     sync.Mutex
	reqs   []*request
	paid   []string
	queue  []QueueSample
	avail  []AvailSample
	soldAt time.Duration // first time the map showed nothing available; -1 never

	active      atomic.Int64
	allDone     chan struct{}
	allDoneOnce sync.Once
	streams     sync.WaitGroup
	sampling    sync.WaitGroup
	stopSampler context.CancelFunc
}

func newRunner(cfg Config, t Target) *runner {
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	r := &runner{cfg: cfg, t: t, runID: hex.EncodeToString(id), allDone: make(chan struct{}), soldAt: -1}
	tr := newTransport(cfg.Conns + cfg.Readers + 1)
	hc := &http.Client{Transport: tr}
	r.c = &client{base: strings.TrimRight(t.URL, "/"), hc: hc, timeout: cfg.Timeout, retries: cfg.Retries,
		attempt: func(method, path string, d time.Duration) {
			r.service.add(d)
			if path == "/bookings/reserve" {
				r.reserveService.add(d)
			} else if strings.HasPrefix(path, "/queue/") {
				r.pollService.add(d)
			} else if strings.HasSuffix(path, "/confirm") {
				r.confirmService.add(d)
			}
		}}
	r.rc = &client{base: r.c.base, hc: hc, timeout: 30 * time.Second}
	r.sse = &http.Client{Transport: newTransport(cfg.SSE + 1)}
	r.sched = newScheduler(cfg.PollRate)
	return r
}

// setUp creates the event, reads its layout and plans the crowd.
func (r *runner) setUp(ctx context.Context, res *Result) error {
	admin, err := r.t.Token("drill-organiser-"+r.runID, "admin")
	if err != nil {
		return err
	}
	venue := Venue(r.cfg.Seats, r.cfg.SectionSize)
	r.t0 = time.Now()
	r.open = r.t0.Add(r.cfg.OpensIn)
	span := r.cfg.Duration + r.cfg.Settle + time.Minute
	for _, s := range []**series{&r.arrivals, &r.sent, &r.admitted, &r.refused, &r.polls, &r.confirmed, &r.reads200, &r.reads304} {
		*s = newSeries(r.t0, span)
	}
	a := r.rc.call(ctx, http.MethodPost, "/events", admin, map[string]any{
		"name": "Drill " + r.runID, "venue": "Drill Arena", "sale_mode": "queued",
		"starts_at":     r.t0.Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339),
		"sale_opens_at": r.open.UTC().Format(time.RFC3339Nano),
		"ticket_limit":  r.cfg.TicketLimit, "sections": venue,
	}, "")
	if a.Status != http.StatusCreated {
		return fmt.Errorf("drill: create the event: %s %s", a.label(), bytesHead(a.Body))
	}
	var ev struct {
		ID        string `json:"event_id"`
		SeatCount int    `json:"seat_count"`
	}
	if err := json.Unmarshal(a.Body, &ev); err != nil {
		return fmt.Errorf("drill: create the event: %w", err)
	}
	r.eventID = ev.ID
	if r.event, err = boxoffice.ParseID(ev.ID); err != nil {
		return err
	}
	a = r.rc.call(ctx, http.MethodGet, "/events/"+ev.ID+"/layout", "", nil, "")
	if a.Status != http.StatusOK {
		return fmt.Errorf("drill: the layout: %s", a.label())
	}
	layout, err := ParseLayout(a.Body)
	if err != nil {
		return err
	}
	r.view = NewView(layout)
	// The waiting room's share arrives over what is left of the window
	// once the event exists (a 70,000-seat event takes a second or two to
	// create): arrivals due before that would all land at once.
	window := max(time.Until(r.open), 100*time.Millisecond)
	plan := Plan(Shape{Users: r.cfg.Users, OpensIn: window, PreShare: r.cfg.PreShare, TailShare: r.cfg.TailShare,
		Burst: r.cfg.Burst, Tail: r.cfg.TailSpan(), AbandonShare: r.cfg.AbandonShare, NoPayShare: r.cfg.NoPayShare,
		BestShare: r.cfg.BestShare, SSE: r.cfg.SSE, Seed: r.cfg.Seed})
	r.users = make([]*user, len(plan))
	for i, p := range plan {
		r.users[i] = &user{plan: p, sub: fmt.Sprintf("drill-%s-%d", r.runID, p.Index),
			rng: mrand.New(mrand.NewPCG(p.Seed, r.cfg.Seed))}
	}
	r.active.Store(int64(len(r.users)))
	r.ready = time.Now()

	res.EventID, res.Seats, res.Sections = ev.ID, ev.SeatCount, len(venue)
	seen := map[string]bool{}
	for _, s := range venue {
		if !seen[s.PriceTier] {
			seen[s.PriceTier] = true
			res.Tiers = append(res.Tiers, s.PriceTier)
		}
	}
	res.OpensAt, res.Opened = r.open.Sub(r.t0), r.open
	res.SetUp = r.ready.Sub(r.t0)
	return nil
}

// load runs the crowd until every user is done or --duration is up.
func (r *runner) load(ctx context.Context) {
	lctx, stop := context.WithDeadline(ctx, r.t0.Add(r.cfg.Duration))
	defer stop()
	for _, u := range r.users {
		r.sched.push(&job{due: later(r.open.Add(u.plan.Arrival), r.ready), kind: jobReserve, u: u})
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.sched.run(lctx) })
	for range r.cfg.Conns {
		wg.Go(func() {
			for {
				select {
				case <-lctx.Done():
					return
				case j := <-r.sched.jobs:
					r.exec(lctx, j)
				}
			}
		})
	}
	wg.Go(func() { r.readMap(lctx, "/availability", true, 250*time.Millisecond) })
	for i := range r.cfg.Readers {
		path := "/seats"
		if i%2 == 1 {
			path = "/availability"
		}
		wg.Go(func() { r.readMap(lctx, path, false, 0) })
	}
	sctx, stopSampler := context.WithCancel(ctx)
	r.sampling.Go(func() { r.sample(sctx) })
	r.stopSampler = stopSampler
	select {
	case <-r.allDone:
	case <-lctx.Done():
	}
	stop()
	wg.Wait()
	r.streams.Wait()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func bytesHead(b []byte) string {
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}
