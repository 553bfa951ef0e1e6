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
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/node"
	"github.com/boxoffice/boxoffice/tracing"
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
	tuneGC(getenv, log)
	flush, err := setupTracing(ctx, "serve", log)
	if err != nil {
		return err
	}
	defer flush()

	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	a, err := authenticator(c.AuthSecret, c.Data, c.Auth, log)
	if err != nil {
		return err
	}
	o := c.options(log, a, nodeIDFixed(fs, getenv))
	o.API, o.Workers, o.Upkeep = true, c.Workers, c.Relay
	n, err := node.New(ctx, o)
	if err != nil {
		return err
	}
	defer n.Close()

	var demo, queuedDemo *boxoffice.Event
	if c.Demo {
		if demo, queuedDemo, err = ensureDemo(ctx, n.Sale); err != nil {
			return fmt.Errorf("demo event: %w", err)
		}
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	stopAsides, err := serveAsides(c, n, stdout)
	if err != nil {
		return err
	}
	defer stopAsides()
	base := "http://" + ln.Addr().String()
	// Sign-in tokens are printed for the embedded default on this machine
	// alone: a server on a shared store or a public address logs its
	// output, where a token is a credential.
	printWelcome(stdout, base, a, demo, queuedDemo, c.PrintTokens && c.Postgres == "" && isLoopback(ln.Addr()))
	err = n.Serve(ctx, ln, 20*time.Second)
	log.Info("stopped")
	return err
}

// serveAsides starts the listeners beside the API that serve and worker
// both have (serveMetrics, serveProfiles); stop closes them.
func serveAsides(c config, n *node.Node, stdout io.Writer) (stop func(), err error) {
	stopMetrics, err := serveMetrics(c, n, stdout)
	if err != nil {
		return nil, err
	}
	stopProfiles, err := serveProfiles(c, stdout)
	if err != nil {
		stopMetrics()
		return nil, err
	}
	return func() { stopProfiles(); stopMetrics() }, nil
}

// serveMetrics serves the node's /metrics on --metrics-addr alone, if
// given; stop closes the listener.
func serveMetrics(c config, n *node.Node, stdout io.Writer) (stop func(), err error) {
	if !c.Metrics || c.MetricsAddr == "" || n.MetricsHandler() == nil {
		return func() {}, nil
	}
	own := http.NewServeMux()
	own.Handle("GET /metrics", n.MetricsHandler())
	at, stop, err := serveAside(c.MetricsAddr, own)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	fmt.Fprintf(stdout, "metrics at http://%s/metrics\n", at)
	return stop, nil
}

// serveProfiles serves Go's runtime profiles (net/http/pprof) on
// --pprof-addr, if given: what an operator reads when a process burns CPU
// or memory under real load, where a benchmark cannot reproduce it.
func serveProfiles(c config, stdout io.Writer) (stop func(), err error) {
	if c.PprofAddr == "" {
		return func() {}, nil
	}
	own := http.NewServeMux()
	own.HandleFunc("GET /debug/pprof/", pprof.Index)
	own.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	own.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	own.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	own.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	at, stop, err := serveAside(c.PprofAddr, own)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	fmt.Fprintf(stdout, "profiles at http://%s/debug/pprof/\n", at)
	return stop, nil
}

// serveAside serves h on a listener of its own at addr, beside the API;
// stop closes it.
func serveAside(addr string, h http.Handler) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr(), func() { srv.Close() }, nil
}

// newLogger logs text at level; a record logged with a traced request's
// context carries its trace_id (tracing.LogHandler).
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(tracing.LogHandler{Handler: slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})})
}

// setupTracing turns OpenTelemetry traces on as the OTEL_* variables say
// (off without an OTLP endpoint); the returned func flushes them.
func setupTracing(ctx context.Context, part string, log *slog.Logger) (func(), error) {
	shutdown, err := tracing.Setup(ctx, "boxoffice-"+part)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: %w", err)
	}
	if tracing.Enabled() {
		log.Info("traces exported over OTLP", "part", part)
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("flush traces", "err", err)
		}
	}, nil
}

// nodeIDFixed reports whether --node-id was given (flag or variable):
// a fixed id instead of one leased from PostgreSQL.
func nodeIDFixed(fs *flag.FlagSet, getenv func(string) string) bool {
	set := getenv(envName("node-id")) != ""
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "node-id" })
	return set
}

// worker runs booking workers only: more of them means more processes.
func worker(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runPart(ctx, "worker", args, getenv, stdout, stderr, func(c config, o *node.Options) error {
		o.Workers = max(c.Workers, 1)
		return nil
	})
}

// relay runs the background upkeep only: the outbox relay, the returns
// pass and the reconciler.
func relay(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runPart(ctx, "relay", args, getenv, stdout, stderr, func(c config, o *node.Options) error {
		o.Upkeep = true
		return nil
	})
}

// runPart runs a node with the roles role switches on, and no API,
// until ctx ends.
func runPart(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer,
	role func(c config, o *node.Options) error) error {
	var c config
	fs := newServeFlagSet(&c)
	fs.SetOutput(stderr)
	fs.Usage = usage(stderr, fs, "Usage: boxoffice "+name+" [flags]\n\nThe same flags and variables as serve; the HTTP ones are ignored.\n\nFlags:")
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	log := newLogger(stderr, c.LogLevel)
	tuneGC(getenv, log)
	flush, err := setupTracing(ctx, name, log)
	if err != nil {
		return err
	}
	defer flush()
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	// The authenticator is unused without the API; any key will do.
	a, err := auth.New([]byte(strings.Repeat("unused-", 6)), nil)
	if err != nil {
		return err
	}
	o := c.options(log, a, nodeIDFixed(fs, getenv))
	// Without the API, metrics are served on --metrics-addr alone.
	o.Metrics, o.MetricsSeparate = c.Metrics && c.MetricsAddr != "", true
	if err := role(c, &o); err != nil {
		return err
	}
	n, err := node.New(ctx, o)
	if err != nil {
		return err
	}
	defer n.Close()
	stopAsides, err := serveAsides(c, n, stdout)
	if err != nil {
		return err
	}
	defer stopAsides()
	if o.Workers > 0 && n.Parts().Queue == nil {
		return errors.New("no queue in this configuration: give --kafka (with --redis) or use the embedded store")
	}
	n.Start(context.WithoutCancel(ctx))
	log.Info("running", "part", name, "workers", o.Workers, "upkeep", o.Upkeep)
	fmt.Fprintf(stdout, "boxoffice %s running\n", name)
	<-ctx.Done()
	n.Stop()
	log.Info("stopped")
	return nil
}

// isLoopback reports whether addr listens on a loopback address only.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
