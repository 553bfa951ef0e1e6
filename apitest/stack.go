// Package apitest is the contract suite of the whole service over HTTP: the
// fixed API (httpapi/openapi.json) driven against a running node, with
// storms, expiry races, idempotent retries and authorization checks, and an
// audit of the store afterwards. Every deployment shape runs it: the
// embedded default (SQLite + in-process holds) and the production stores.
package apitest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/node"
	"github.com/boxoffice/boxoffice/queuetest"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/snowflake"
	"github.com/boxoffice/boxoffice/testpay"
)

// Clock is a settable clock shared by the service and the stores that take
// one, so expiry is tested without sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Parts are the adapters a stack is built from.
type Parts struct {
	Store boxoffice.Store
	// IDs makes the service's ids; nil: a generator of a random node id.
	// A sharded store needs its own (postgres.ShardedIDs).
	IDs    boxoffice.IDGenerator
	Holds  boxoffice.Holds
	Leases boxoffice.Leases
	// Now is the clock of the service; nil means time.Now.
	Now func() time.Time
	// Advance moves time for the service and the holds together: the fake
	// clock's Advance when Holds runs on Now, a sleep for a real server.
	Advance func(time.Duration)
	// HoldTTL of the stack; short for a real lock server, whose expiry runs
	// on its own clock.
	HoldTTL time.Duration
	// PendingGrace and SeatmapTTL: defaults 1m and 10s; short on a real
	// clock so that tests that wait them out stay quick.
	PendingGrace time.Duration
	SeatmapTTL   time.Duration
	// HandoverGrace and OfferWindow of the service: defaults 30s (at most
	// HoldTTL) and HoldTTL.
	HandoverGrace time.Duration
	OfferWindow   time.Duration
	// Shared, when set, is the seat map's cache across nodes.
	Shared seatmap.Shared
	// Queue, Log and Notifier run queued sales; nil Queue skips the queue
	// tests.
	Queue    boxoffice.QueueState
	Log      boxoffice.RequestLog
	Notifier boxoffice.Notifier
	// AdmitDeadline is sale.Config.AdmitDeadline (production's queue).
	AdmitDeadline time.Duration
	// QueueStorm is the number of requests of the queue storm test
	// (default 10,500).
	QueueStorm int
	// QueueSlots and SlotOf describe a queue spread over slots (see
	// queuetest.Harness); zero: one sequence.
	QueueSlots int
	SlotOf     func(user string) int
	// LogPartitions is how many partitions the request log has (0: one).
	// A log of several is delivered in order per partition alone, and
	// the partitions' first records may reach a worker at different times.
	LogPartitions int
}

// Stack is a running service and what tests need to drive and audit it.
type Stack struct {
	URL     string
	Service *sale.Service
	Store   boxoffice.Store
	Holds   boxoffice.Holds
	Pay     *testpay.Gateway
	Seats   *seatmap.Cache
	Auth    *auth.Authenticator
	// Advance moves time and then runs one returns pass, as the pass that
	// runs every second in a server would after that much time.
	Advance func(time.Duration)
	// AdvanceClock moves time and nothing else.
	AdvanceClock func(time.Duration)
	HoldTTL      time.Duration
	// LeaseTTL is how long a reserve's in-flight lease lasts after its
	// grant (sale.Config.LeaseTTL).
	LeaseTTL     time.Duration
	OfferWindow  time.Duration
	PendingGrace time.Duration
	SeatmapTTL   time.Duration
	Now          func() time.Time
	Queue        boxoffice.QueueState
	Log          boxoffice.RequestLog
	QueueStorm   int
	queueSlots   int
	// logPartitions: Parts.LogPartitions.
	logPartitions int
	slotOf        func(user string) int
}

// positions predicts the positions a fresh event's queue gives.
func (s *Stack) positions() *queuetest.Positions {
	return queuetest.NewPositions(s.queueSlots, s.slotOf)
}

// Secret signs the stacks' tokens.
const Secret = "apitest-secret-apitest-secret-0123456789"

// NewStack starts the service over p on an httptest server, stopped at the
// end of the test.
func NewStack(t testing.TB, p Parts) *Stack {
	t.Helper()
	now := p.Now
	if now == nil {
		now = time.Now
	}
	if p.HoldTTL == 0 {
		p.HoldTTL = 10 * time.Minute
	}
	if p.PendingGrace == 0 {
		p.PendingGrace = time.Minute
	}
	if p.SeatmapTTL == 0 {
		p.SeatmapTTL = 10 * time.Second
	}
	if p.HandoverGrace == 0 {
		p.HandoverGrace = min(30*time.Second, p.HoldTTL)
	}
	if p.OfferWindow == 0 {
		p.OfferWindow = p.HoldTTL
	}
	ids := p.IDs
	if ids == nil {
		gen, err := snowflake.New(int(time.Now().UnixNano()%snowflake.MaxNode), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = gen
	}
	a, err := auth.New([]byte(Secret), nil)
	if err != nil {
		t.Fatal(err)
	}
	pay := testpay.New()
	pay.SlowDelay = 50 * time.Millisecond
	// Errors go to stderr, not t.Log: background rebuilds may outlive a test.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if p.Notifier == nil {
		p.Notifier = inmem.NewNotifier()
	}
	if p.QueueStorm == 0 {
		p.QueueStorm = 10_500
	}
	// The node serve runs, on the test's parts and clock: the API with the
	// browser UI and the metrics, the live streams' notices and, with a
	// queue, the pre-queue opener. Workers start on demand; the upkeep's
	// returns pass runs when a test advances time (Stack.Advance).
	scfg := sale.Config{HoldTTL: p.HoldTTL, PendingGrace: p.PendingGrace, PaymentTimeout: 5 * time.Second,
		HandoverGrace: p.HandoverGrace, OfferWindow: p.OfferWindow}
	n, err := node.New(ctx, node.Options{
		Parts: &node.Parts{Store: p.Store, Holds: p.Holds, Leases: p.Leases, Shared: p.Shared,
			Queue: p.Queue, RequestLog: p.Log, Notifier: p.Notifier, IDs: ids, AdmitDeadline: p.AdmitDeadline},
		Sale:       scfg,
		SeatmapTTL: p.SeatmapTTL, Payments: pay, Auth: a, Metrics: true,
		API: true, OpenerEvery: 20 * time.Millisecond, Now: now, Log: log,
		Limits: httpapi.Limits{InFlight: httpapi.DefaultInFlight()}, // the door serve keeps
	})
	if err != nil {
		t.Fatal(err)
	}
	svc := n.Sale
	srv := httptest.NewServer(n.Handler())
	st := &Stack{URL: srv.URL, Service: svc, Store: p.Store, Holds: p.Holds, Pay: pay, Seats: n.Seats, Auth: a,
		AdvanceClock: p.Advance, HoldTTL: p.HoldTTL, LeaseTTL: scfg.LeaseTTL(), OfferWindow: p.OfferWindow, PendingGrace: p.PendingGrace,
		SeatmapTTL: p.SeatmapTTL, Now: now, Queue: p.Queue, Log: p.Log, QueueStorm: p.QueueStorm,
		queueSlots: p.QueueSlots, slotOf: p.SlotOf, logPartitions: p.LogPartitions}
	st.Advance = func(d time.Duration) {
		p.Advance(d)
		if _, err := svc.ProcessReturns(ctx); err != nil {
			t.Errorf("returns pass: %v", err)
		}
	}
	n.Start(context.Background())
	t.Cleanup(func() { srv.Close(); n.Close() })
	return st
}

// StartWorkers starts n booking workers draining the request log, stopped
// by the returned func or at the end of the test.
func (s *Stack) StartWorkers(t testing.TB, n int) (stop func()) {
	t.Helper()
	return s.startWorkers(t, n, s.Service.RunWorker)
}

// StartWorkersGated starts n booking workers that hold their first batch
// until open is closed: they join the log's consumer group before the
// requests arrive, and the drain is timed from open, as in a deployment
// whose workers run all along. (Workers started after the requests are in
// the log drain one at a time until the group has rebalanced: the first
// member takes every partition, and the second waits for its next
// heartbeat, about a second on the kafka-fake broker.)
func (s *Stack) StartWorkersGated(t testing.TB, n int, open <-chan struct{}) (stop func()) {
	t.Helper()
	return s.startWorkers(t, n, func(ctx context.Context) error {
		return s.Log.Consume(ctx, func(ctx context.Context, batch []*boxoffice.QueuedRequest) error {
			select {
			case <-open:
			case <-ctx.Done():
				return ctx.Err()
			}
			return s.Service.ServeBatch(ctx, batch)
		})
	})
}

func (s *Stack) startWorkers(t testing.TB, n int, run func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// Token returns a bearer token for sub with role.
func (s *Stack) Token(t testing.TB, sub, role string, events ...boxoffice.ID) string {
	t.Helper()
	tok, err := s.Auth.IssueScoped(sub, role, time.Hour, events)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ctx is the context of suite calls into the stores.
var ctx = context.Background()
