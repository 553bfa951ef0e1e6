package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/metrics"
	"github.com/boxoffice/boxoffice/outbox"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/testpay"
	"github.com/boxoffice/boxoffice/web"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c config
	fs := newServeFlagSet(&c)
	fs.SetOutput(stderr)
	fs.Usage = usage(stderr, fs, "Usage: boxoffice serve [flags]\n\nBOXOFFICE_AUTH_SECRET (env only) signs the bearer tokens; unset, the embedded server keeps a secret of its own in --data.\n\nFlags:")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	c.AuthSecret = getenv("BOXOFFICE_AUTH_SECRET")
	log := newLogger(stderr, c.LogLevel)
	c.print(stdout)

	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	a, err := authenticator(c.AuthSecret, c.Data, c.Auth, log)
	if err != nil {
		return err
	}
	app, err := newApp(ctx, c, fs, getenv, log)
	if err != nil {
		return err
	}
	defer app.close()
	svc := app.svc
	api := httpapi.New(svc, app.seats, a, log)
	api.SetLimits(httpapi.Limits{PerUser: rate.Limit(c.RatePerUser), UserBurst: c.RateUserBurst,
		ReadsPerUser: rate.Limit(c.ReadsPerUser), PerAddress: rate.Limit(c.RatePerAddr), AddressBurst: c.RateAddrBurst,
		Streams: c.MaxStreams, StreamsPerUser: c.StreamsPerUser})

	var demo, queuedDemo *boxoffice.Event
	if c.Demo {
		if demo, queuedDemo, err = ensureDemo(ctx, svc); err != nil {
			return fmt.Errorf("demo event: %w", err)
		}
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	handler, metricsHandler := withMetrics(c, api, a, web.Mount(api)) // the browser UI at /app/, the JSON API everywhere else
	if metricsHandler != nil {
		mln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		msrv := &http.Server{Handler: metricsHandler, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		fmt.Fprintf(stdout, "metrics at http://%s/metrics\n", mln.Addr())
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      c.SlowPayment + 60*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(api.CloseStreams)
	base := "http://" + ln.Addr().String()
	// Sign-in tokens are printed for the embedded default on this machine
	// alone: a server on a shared store or a public address logs its
	// output, where a token is a credential.
	printWelcome(stdout, base, a, demo, queuedDemo, c.PrintTokens && c.Postgres == "" && isLoopback(ln.Addr()))

	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = api.Listen(bg, app.p.notifier) })
	app.background(bg, &wg, c.Workers, c.Relay)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		log.Info("shutting down: draining requests")
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
	}
	stopBG()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	log.Info("stopped")
	return err
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// app is what every command that runs the service shares: the parts the
// configuration chose and the service over them.
type app struct {
	p     *parts
	svc   *sale.Service
	seats *seatmap.Cache
	log   *slog.Logger
	c     config
}

func newApp(ctx context.Context, c config, fs *flag.FlagSet, getenv func(string) string, log *slog.Logger) (*app, error) {
	nodeIDSet := getenv(envName("node-id")) != ""
	fs.Visit(func(f *flag.Flag) { nodeIDSet = nodeIDSet || f.Name == "node-id" })
	p, err := openParts(ctx, c, log, nodeIDSet)
	if err != nil {
		return nil, err
	}
	pay := testpay.New()
	pay.SlowDelay = c.SlowPayment
	svc := sale.New(sale.Deps{Store: p.store, Holds: p.holds, Leases: p.leases, Payments: pay, IDs: p.ids, Log: log,
		Queue: p.queue, RequestLog: p.reqLog, Notifier: p.notifier},
		sale.Config{HoldTTL: c.Hold, PendingGrace: c.PendingGrace, MaxSeatsPerRequest: c.MaxSeats,
			MaxLivePerUser: c.QueueMaxLive, PreQueueWindow: c.PreQueue, HandoverGrace: c.HandoverGrace,
			OfferWindow: c.OfferWindow, PublicFirst: c.PublicFirst, AdmitDeadline: p.admitDeadline, DrainPrior: c.DrainPrior,
			CacheEvents: c.CacheEvents})
	seats := seatmap.New(svc, p.store, p.holds, c.SeatmapTTL, nil)
	seats.SetMaxEvents(c.CacheEvents)
	if p.shared != nil {
		seats.Share(p.shared, p.leases)
	}
	svc.UseAvailability(seats)
	return &app{p: p, svc: svc, seats: seats, log: log, c: c}, nil
}

func (a *app) close() { a.p.close() }

// background starts the parts' sweepers, the pre-queue opener, workers
// booking workers and, if maintain, the outbox relay, the returns pass and
// the reconciler.
func (a *app) background(ctx context.Context, wg *sync.WaitGroup, workers int, maintain bool) {
	a.p.run(ctx, wg)
	if a.p.queue != nil {
		wg.Go(func() { a.svc.RunOpener(ctx, 250*time.Millisecond) })
		for range workers {
			wg.Go(func() {
				if err := a.svc.RunWorker(ctx); err != nil && ctx.Err() == nil {
					a.log.Error("worker stopped", "err", err)
				}
			})
		}
	}
	if maintain {
		a.maintain(ctx, wg)
	}
}

// maintain starts the background upkeep every deployment needs somewhere:
// the outbox relay, the returns pass (expired holds, returned seats to the
// waitlist) and the reconciler. Each is safe to run in several processes.
func (a *app) maintain(ctx context.Context, wg *sync.WaitGroup) {
	r := &outbox.Relay{Store: a.p.store, Publisher: a.p.publisher, Leases: a.p.leases, Log: a.log}
	wg.Go(func() { r.Run(ctx) })
	wg.Go(func() { a.svc.RunReturns(ctx, a.c.ReturnsEvery) })
	wg.Go(func() { a.svc.RunReconciler(ctx, a.c.ReconcileEvery) })
}

// worker runs booking workers only: more of them means more processes.
func worker(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runPart(ctx, "worker", args, getenv, stdout, stderr, func(a *app, ctx context.Context, wg *sync.WaitGroup) {
		if a.p.queue == nil {
			a.log.Error("no queue in this configuration: give --kafka (with --redis) or use the embedded store")
			return
		}
		a.log.Info("booking workers running", "workers", a.c.Workers)
		a.background(ctx, wg, max(a.c.Workers, 1), false)
	})
}

// relay runs the background upkeep only: the outbox relay, the returns
// pass and the reconciler.
func relay(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runPart(ctx, "relay", args, getenv, stdout, stderr, func(a *app, ctx context.Context, wg *sync.WaitGroup) {
		a.log.Info("outbox relay, returns pass and reconciler running")
		a.maintain(ctx, wg)
	})
}

// runPart runs one background part of the service until ctx ends.
func runPart(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer,
	start func(a *app, ctx context.Context, wg *sync.WaitGroup)) error {
	var c config
	fs := newServeFlagSet(&c)
	fs.SetOutput(stderr)
	fs.Usage = usage(stderr, fs, "Usage: boxoffice "+name+" [flags]\n\nThe same flags and variables as serve; the HTTP ones are ignored.\n\nFlags:")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	log := newLogger(stderr, c.LogLevel)
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	a, err := newApp(ctx, c, fs, getenv, log)
	if err != nil {
		return err
	}
	defer a.close()
	var wg sync.WaitGroup
	start(a, ctx, &wg)
	fmt.Fprintf(stdout, "boxoffice %s running\n", name)
	<-ctx.Done()
	wg.Wait()
	log.Info("stopped")
	return nil
}

// withMetrics has api report its requests to Prometheus metrics, unless
// --metrics is off, and serves them at /metrics: on the API's address to
// an organiser's token alone (metrics tell a competitor how a sale goes),
// or, with --metrics-addr, on that address alone, without a token, for a
// scraper on a private network. It returns the API's handler and the
// metrics' own (nil without --metrics-addr).
func withMetrics(c config, api *httpapi.Server, a *auth.Authenticator, h http.Handler) (http.Handler, http.Handler) {
	if !c.Metrics {
		return h, nil
	}
	m := metrics.New()
	api.Observe(m)
	if c.MetricsAddr != "" {
		own := http.NewServeMux()
		own.Handle("GET /metrics", m.Handler())
		return h, own
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if u, err := a.Verify(tok); err != nil || !u.IsAdmin() {
			w.Header().Set("WWW-Authenticate", `Bearer realm="boxoffice metrics"`)
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"urn:boxoffice:problem:unauthorized","title":"Unauthorized","status":401,"detail":"the metrics need an organiser's token (or serve them on --metrics-addr)","code":"unauthorized"}`+"\n")
			return
		}
		m.Handler().ServeHTTP(w, r)
	}))
	mux.Handle("/", h)
	return mux, nil
}

// isLoopback reports whether addr listens on a loopback address only.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
