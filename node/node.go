// Package node builds and runs one boxoffice process from Options, as
// nats-server's server.New(opts) does: the parts chosen by configuration
// (Open), the use cases over them (sale), the seat map (seatmap), the HTTP
// API with the browser UI and the metrics (httpapi, web, metrics), and the
// roles switched on by options: the API, booking workers, and the upkeep
// every deployment needs somewhere (the outbox relay, the returns pass, the
// reconciler). cmd/boxoffice, the HTTP contract suite (apitest) and the
// drill all run a node, so the tests run what ships.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/layout"
	"github.com/boxoffice/boxoffice/metrics"
	"github.com/boxoffice/boxoffice/outbox"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/testpay"
	"github.com/boxoffice/boxoffice/web"
)

// Options configure a node. With Auth and Data alone it is the embedded
// default: SQLite in Data, in-process holds and queue.
type Options struct {
	// Where the state lives: the SQLite file in Data unless Postgres is
	// set; Redis for holds, leases and the queue's state (absent:
	// in-process); Kafka for the request log (absent: the embedded
	// queue; it needs Redis and PostgreSQL).
	Data, Postgres, Redis, Kafka string
	// Shards are the URLs of the other PostgreSQL shards, in shard order
	// (1, 2, ...): Postgres is then the directory, shard 0, and events are
	// spread over all of them (postgres.Sharded).
	Shards []string
	// Parts, when set, are used instead of opening the ones above: a test
	// builds its own (a fake clock, a prefix of its own). The node does
	// not close them.
	Parts *Parts

	// NodeID is the Snowflake node id (0-1023). With PostgreSQL it is
	// leased unless FixedNodeID.
	NodeID      int
	FixedNodeID bool
	// QueueSlots spreads each new queued event's queue over that many
	// Redis hash slots (1-64; with Kafka). Default 1.
	QueueSlots int
	// KafkaSession is Kafka's session.timeout.ms for the booking workers'
	// group. Default 10s.
	KafkaSession time.Duration

	// Sale is the use cases' policy; AdmitDeadline comes from the parts.
	Sale sale.Config
	// SeatmapTTL is how long a seat-map snapshot is served. Default 10s.
	SeatmapTTL time.Duration
	// CacheMemory bounds the bytes of the seat maps and layouts this
	// process caches (0: only Sale.CacheEvents bounds them): three quarters
	// for the seat maps, the rest for the layouts.
	CacheMemory int64
	// Payments is the payment gateway; nil: testpay, its slow token taking
	// SlowPayment.
	Payments    boxoffice.PaymentGateway
	SlowPayment time.Duration

	// Auth verifies bearer tokens; required.
	Auth *auth.Authenticator
	// Limits are the API's rate and stream limits (zero: none).
	Limits httpapi.Limits
	// Metrics has the API count its requests for Prometheus; they are
	// served by MetricsHandler and, unless MetricsSeparate, at /metrics
	// on the API's handler to an organiser's token.
	Metrics, MetricsSeparate bool

	// The roles Start runs. API: the notices into the live status streams
	// and the pre-queue opener. Workers: that many booking workers
	// draining the request log (and the opener). Upkeep: the outbox
	// relay, the returns pass and the reconciler, each safe to run in
	// several processes. The parts' own sweepers run with any role.
	API     bool
	Workers int
	Upkeep  bool
	// Intervals of the background work. Defaults: the returns pass 1s, the
	// reconciler 30s, the opener 250ms.
	ReturnsEvery, ReconcileEvery, OpenerEvery time.Duration

	// Now is the clock of the use cases and the seat map; nil: time.Now.
	Now func() time.Time
	// Log; nil: slog.Default().
	Log *slog.Logger
}

func (o *Options) logger() *slog.Logger {
	if o.Log == nil {
		return slog.Default()
	}
	return o.Log
}

// check refuses options that cannot make a node.
func (o *Options) check() error {
	if o.QueueSlots == 0 {
		o.QueueSlots = 1
	}
	if o.QueueSlots < 1 || o.QueueSlots > 64 {
		return fmt.Errorf("queue slots %d: want 1 to 64", o.QueueSlots)
	}
	if o.CacheMemory < 0 {
		return fmt.Errorf("cache memory %d: want 0 or more bytes", o.CacheMemory)
	}
	if o.Sale.CacheEvents < 0 {
		return fmt.Errorf("cache events %d: want 1 or more", o.Sale.CacheEvents)
	}
	if o.Kafka != "" && (o.Redis == "" || o.Postgres == "") {
		return errors.New("kafka needs redis and postgres: the queue's state lives in Redis, its outcomes in PostgreSQL")
	}
	if len(o.Shards) > 0 && o.Postgres == "" {
		return errors.New("shards need postgres: the first PostgreSQL database is the shards' directory")
	}
	if len(o.Shards) > 0 && o.FixedNodeID && o.NodeID >= postgres.ShardNodes {
		return fmt.Errorf("node id %d: a sharded deployment's node ids are below %d", o.NodeID, postgres.ShardNodes)
	}
	if o.Parts == nil && o.Postgres == "" && o.Data == "" {
		return errors.New("no store: give a data directory for the embedded database, or a PostgreSQL URL")
	}
	if o.KafkaSession <= 0 {
		o.KafkaSession = 10 * time.Second
	}
	return nil
}

// Node is one boxoffice process. Create it with New; Start (or Serve)
// runs its roles; Close stops them and closes what New opened.
type Node struct {
	opts  Options
	parts *Parts
	owned bool // the node opened parts and closes them

	// Layouts, Sale, Seats and API are the node's components, for the
	// commands and tests that drive one directly.
	Layouts *layout.Cache
	Sale    *sale.Service
	Seats   *seatmap.Cache
	API     *httpapi.Server
	// Payments is the gateway in use.
	Payments boxoffice.PaymentGateway

	metrics *metrics.Registry
	handler http.Handler

	mu      sync.Mutex
	stop    context.CancelFunc
	wg      sync.WaitGroup
	started bool
}

// New builds a node from o: it opens the parts (unless o.Parts gives
// them) and wires the use cases, the seat map and the API over them. It
// starts nothing: see Start and Serve.
func New(ctx context.Context, o Options) (*Node, error) {
	if o.Auth == nil {
		return nil, errors.New("node: no authenticator")
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	n := &Node{opts: o, parts: o.Parts}
	if n.parts == nil {
		p, err := Open(ctx, o)
		if err != nil {
			return nil, err
		}
		n.parts, n.owned = p, true
	}
	p, log := n.parts, o.logger()
	if p.IDs == nil {
		return nil, errors.New("node: parts without an id generator")
	}
	if p.Notifier == nil {
		p.Notifier = inmem.NewNotifier()
	}
	if p.Publisher == nil {
		p.Publisher = outbox.LogPublisher{Log: log}
	}
	if n.Payments = o.Payments; n.Payments == nil {
		pay := testpay.New()
		pay.SlowDelay = o.SlowPayment
		n.Payments = pay
	}
	cfg := o.Sale
	cfg.AdmitDeadline = p.AdmitDeadline
	n.Layouts = layout.NewCache(p.Store, cacheEvents(cfg.CacheEvents))
	n.Layouts.SetClock(o.Now)
	if o.CacheMemory > 0 {
		n.Layouts.SetMaxBytes(o.CacheMemory - o.CacheMemory/4*3)
	}
	n.Seats = seatmap.New(n.Layouts, p.Store, p.Holds, o.SeatmapTTL, o.Now)
	n.Seats.SetMaxEvents(cacheEvents(cfg.CacheEvents))
	if o.CacheMemory > 0 {
		n.Seats.SetMaxBytes(o.CacheMemory / 4 * 3)
	}
	if p.Shared != nil {
		n.Seats.Share(p.Shared, p.Leases)
	}
	// The use cases' ports, counted for the sale's metrics.
	ports := metrics.Ports{Store: p.Store, Holds: p.Holds, Payments: n.Payments, Queue: p.Queue, QueuePurge: p.QueuePurge}
	if o.Metrics {
		n.metrics = metrics.New()
		ports = n.metrics.Instrument(ports)
	}
	n.Sale = sale.New(sale.Deps{Store: ports.Store, Holds: ports.Holds, Leases: p.Leases, Payments: ports.Payments, IDs: p.IDs,
		Now: o.Now, Log: log, Queue: ports.Queue, RequestLog: p.RequestLog, Notifier: p.Notifier,
		QueuePurge: ports.QueuePurge, Layouts: n.Layouts, Availability: n.Seats, Answers: httpapi.Answers{}}, cfg)
	n.API = httpapi.New(n.Sale, n.Seats, o.Auth, log)
	n.API.SetLimits(o.Limits)
	n.handler = web.Mount(n.API) // the browser UI at /app/, the JSON API everywhere else
	if o.Metrics {
		n.API.Observe(n.metrics)
		n.metrics.Gauge("boxoffice_live_streams", "Live status streams (SSE) this process has open.",
			func() float64 { return float64(n.API.LiveStreams()) })
		n.metrics.Gauge("boxoffice_http_waiting", "Requests waiting for a place in the handlers (--max-in-flight).",
			func() float64 { return float64(n.API.Waiting()) })
		// The seats of the events whose maps were built in the last
		// minute (or three TTLs): the sales being watched now.
		recent := max(time.Minute, 3*o.SeatmapTTL)
		n.metrics.Seats(func(yield func(string, map[string]int)) {
			var snaps []*seatmap.Snapshot // yielded outside the cache's lock
			n.Seats.Recent(recent, func(s *seatmap.Snapshot) {
				if !s.Degraded {
					snaps = append(snaps, s)
				}
			})
			for _, s := range snaps {
				yield(s.EventID.String(), s.Counts)
			}
		})
		// The queues of the sales whose tickets were read in the last
		// minute, read afresh at each scrape.
		n.metrics.Queues(func(yield func(string, int64, int64, float64)) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n.Sale.QueueDepths(ctx, time.Minute, func(id boxoffice.ID, p boxoffice.QueueProgress, rate float64) {
				yield(id.String(), max(0, p.Admitted-p.Served), p.Waiting, rate)
			})
		})
		if o.Upkeep {
			n.metrics.Gauge("boxoffice_outbox_lag_seconds",
				"Age of the oldest booking event not yet published (0: none pending); read from the store at each scrape, NaN if it cannot be read.",
				outboxLag(p.Store, o.Now))
		}
		if !o.MetricsSeparate {
			n.handler = metricsForOrganisers(n.handler, n.metrics.Handler(), o.Auth)
		}
	}
	return n, nil
}

// outboxLag reads the age of the oldest unpublished outbox event.
func outboxLag(st boxoffice.OutboxStore, now func() time.Time) func() float64 {
	if now == nil {
		now = time.Now
	}
	return func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		evs, err := st.PendingOutbox(ctx, 1)
		switch {
		case err != nil:
			return math.NaN()
		case len(evs) == 0:
			return 0
		}
		return max(now().Sub(evs[0].CreatedAt).Seconds(), 0)
	}
}

func cacheEvents(n int) int {
	if n <= 0 {
		return sale.DefaultCacheEvents
	}
	return n
}

// Parts returns the parts the node runs on.
func (n *Node) Parts() *Parts { return n.parts }

// Handler returns the node's HTTP handler: the JSON API, the browser UI
// at /app/ and, with Metrics and not MetricsSeparate, /metrics.
func (n *Node) Handler() http.Handler { return n.handler }

// MetricsHandler returns the Prometheus metrics' handler without any
// token check, for a listener of its own on a private network; nil
// without Options.Metrics.
func (n *Node) MetricsHandler() http.Handler {
	if n.metrics == nil {
		return nil
	}
	return n.metrics.Handler()
}

// Start runs the node's roles in the background until ctx ends or Close.
// It may be called once.
func (n *Node) Start(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started {
		return
	}
	n.started = true
	ctx, n.stop = context.WithCancel(ctx)
	o, p, wg := n.opts, n.parts, &n.wg
	p.start(ctx, wg)
	if o.API {
		wg.Go(func() { _ = n.API.Listen(ctx, p.Notifier) })
	}
	if p.Queue != nil && (o.API || o.Workers > 0) {
		every := o.OpenerEvery
		if every <= 0 {
			every = 250 * time.Millisecond
		}
		wg.Go(func() { n.Sale.RunOpener(ctx, every) })
	}
	if p.Queue != nil {
		for range o.Workers {
			wg.Go(func() {
				if err := n.Sale.RunWorker(ctx); err != nil && ctx.Err() == nil {
					o.logger().Error("worker stopped", "err", err)
				}
			})
		}
	}
	if o.Upkeep {
		returns, reconcile := o.ReturnsEvery, o.ReconcileEvery
		if returns <= 0 {
			returns = time.Second
		}
		if reconcile <= 0 {
			reconcile = 30 * time.Second
		}
		// The log publisher's events are kept nowhere else: the outbox
		// keeps them a day. Kafka keeps them itself.
		_, logged := p.Publisher.(outbox.LogPublisher)
		r := &outbox.Relay{Store: p.Store, Publisher: p.Publisher, Leases: p.Leases, Log: o.logger(), DropPublished: !logged}
		wg.Go(func() { r.Run(ctx) })
		wg.Go(func() { n.Sale.RunReturns(ctx, returns) })
		wg.Go(func() { n.Sale.RunReconciler(ctx, reconcile) })
	}
}

// Server returns the http.Server the node serves its handler with: the
// timeouts a public listener needs.
func (n *Node) Server() *http.Server {
	srv := &http.Server{
		Handler:           n.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      n.opts.SlowPayment + 60*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(n.opts.logger().Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(n.API.CloseStreams)
	return srv
}

// Serve starts the roles and serves the handler on ln until ctx ends,
// then drains the requests in flight (up to drain) and stops the roles.
func (n *Node) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	srv := n.Server()
	n.Start(context.WithoutCancel(ctx))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		n.opts.logger().Info("shutting down: draining requests")
		sctx, cancel := context.WithTimeout(context.Background(), drain)
		err = srv.Shutdown(sctx)
		cancel()
	}
	n.Stop()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Stop stops the roles and waits for them, and for the payment captures
// still running after their confirms' answers (bounded by captureDrain:
// the reconciler takes any left).
func (n *Node) Stop() {
	n.mu.Lock()
	stop := n.stop
	n.mu.Unlock()
	if stop != nil {
		stop()
	}
	n.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), captureDrain)
	defer cancel()
	if err := n.Sale.WaitCaptures(ctx); err != nil {
		n.opts.logger().Warn("payment captures still running at the stop; the reconciler will take them", "err", err)
	}
}

// captureDrain bounds Stop's wait for payment captures; one is bounded by
// 10 s itself.
const captureDrain = 15 * time.Second

// Close stops the roles and closes the parts the node opened.
func (n *Node) Close() {
	n.Stop()
	if n.owned {
		n.parts.Close()
	}
}

// metricsForOrganisers serves /metrics on h's address to an organiser's
// token alone: metrics tell a competitor how a sale goes.
func metricsForOrganisers(h, m http.Handler, a *auth.Authenticator) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if u, err := a.Verify(tok); err != nil || !u.IsAdmin() {
			w.Header().Set("WWW-Authenticate", `Bearer realm="boxoffice metrics"`)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"urn:boxoffice:problem:unauthorized","title":"Unauthorized","status":401,"detail":"the metrics need an organiser's token (or serve them on a listener of their own)","code":"unauthorized"}`+"\n")
			return
		}
		m.ServeHTTP(w, r)
	}))
	mux.Handle("/", h)
	return mux
}
