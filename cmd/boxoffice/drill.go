package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/drill"
	"github.com/boxoffice/boxoffice/node"
)

const drillUsage = `Usage: boxoffice drill [flags]

Replays a flash sale's peak (package drill): creates a queued event, lets a
crowd arrive in a burst at the opening, polls, pays, hammers the seat map,
then audits the store directly and prints a markdown report. It exits
non-zero if a seat was oversold or a request or payment was lost.

Without --url it starts a boxoffice in this process, wired as serve is, on
127.0.0.1 (embedded in a temporary --data directory, or on --postgres,
--redis and --kafka). With --url it drills that server, which must be on
loopback, and audits the stores given by --data or --postgres/--redis/--kafka,
which must be the server's own.

Flags:`

// runDrill is "boxoffice drill": flags and wiring only; package drill
// does the drill.
func runDrill(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c config
	newServeFlagSet(&c) // serve's defaults for everything the drill does not set
	dc := drill.DefaultConfig()
	var url, out, svgPath, secret string
	fs := flag.NewFlagSet("drill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loadTargetFlags(fs, &c, &url, &secret)
	fs.IntVar(&c.Workers, "workers", 2, "in-process server: booking workers")
	fs.IntVar(&c.QueueSlots, "queue-slots", 1, "in-process server: Redis hash slots of the event's queue (see serve --queue-slots)")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "in-process server: requests handled at once (see serve --max-in-flight)")

	fs.IntVar(&dc.Users, "users", dc.Users, "users in the crowd")
	fs.IntVar(&dc.Seats, "seats", dc.Seats, "seats of the event")
	fs.IntVar(&dc.SectionSize, "section-size", dc.SectionSize, "seats per section (rows of 50)")
	fs.DurationVar(&dc.OpensIn, "opens-in", dc.OpensIn, "the sale opens this long after the event is created; the pre-queue share arrives meanwhile")
	fs.DurationVar(&dc.Burst, "burst", dc.Burst, "95% of the burst arrives within this after the opening")
	fs.DurationVar(&dc.Tail, "tail", dc.Tail, "the tail share arrives uniformly over this after the opening (0: a third of --duration, at most 1m)")
	fs.Float64Var(&dc.PreShare, "pre-share", dc.PreShare, "share of users arriving before the opening")
	fs.Float64Var(&dc.TailShare, "tail-share", dc.TailShare, "share of users in the tail")
	fs.Float64Var(&dc.AbandonShare, "abandon-share", dc.AbandonShare, "share of users who never poll nor pay")
	fs.Float64Var(&dc.NoPayShare, "no-pay-share", dc.NoPayShare, "share of users who poll but never pay (their holds expire)")
	fs.Float64Var(&dc.BestShare, "best-available-share", dc.BestShare, "share of users asking for the best seats side by side in a section (best_available) instead of naming seats from the map")
	fs.IntVar(&dc.Attempts, "attempts", dc.Attempts, "reserve requests per user at most (another after a seat_taken rejection)")
	fs.DurationVar(&dc.ThinkMin, "think-min", dc.ThinkMin, "a payer's shortest pause between hold and confirm")
	fs.DurationVar(&dc.ThinkMax, "think-max", dc.ThinkMax, "a payer's longest pause between hold and confirm")
	fs.DurationVar(&dc.Duration, "duration", dc.Duration, "cap on the load; the drill stops by itself")
	fs.DurationVar(&dc.Settle, "settle", dc.Settle, "after the load, how long to wait at most for the queue to drain before the audit")
	fs.IntVar(&dc.Conns, "conns", dc.Conns, "concurrent requests of the load generator")
	fs.DurationVar(&dc.Timeout, "timeout", dc.Timeout, "one attempt's timeout")
	fs.IntVar(&dc.Retries, "retries", dc.Retries, "retries with the same idempotency key after a timeout, 5xx or 409 in flight")
	fs.Float64Var(&dc.PollRate, "poll-rate", dc.PollRate, "queue polls per second at most, all users together (0: unbounded)")
	fs.IntVar(&dc.Readers, "readers", dc.Readers, "goroutines hammering the seat map meanwhile")
	fs.IntVar(&dc.SSE, "sse", dc.SSE, "users listening on the live stream instead of polling")
	fs.DurationVar(&dc.Ceiling, "ceiling", dc.Ceiling, "how long to measure the bare net/http handler (0: skip)")
	fs.Uint64Var(&dc.Seed, "seed", dc.Seed, "seed of the crowd")
	fs.StringVar(&out, "out", "", "also write the report to this file")
	fs.StringVar(&svgPath, "svg", "", "write the chart (SVG) to this file")
	var cpuProfile, waitsPath string
	fs.StringVar(&waitsPath, "waits", "", "write each queued request's first estimate and real wait, and the queue's counters, to this file (CSV)")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this process (load generator and in-process server) over the run to this file")
	fs.Usage = usage(stderr, fs, drillUsage)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := dc.Validate(); err != nil {
		return err
	}
	log := newLogger(stderr, c.LogLevel)

	t, err := openLoadTarget(ctx, "drill", c, fs, getenv, log, url, secret, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	where := "at " + t.url
	if t.inProcess {
		where = fmt.Sprintf("in this process, %d booking workers, hold %s, at most %d requests in the handlers", c.Workers, c.Hold, c.MaxInFlight)
	}
	if t.parts.Queue == nil {
		return errors.New("the drill needs a flash-sale queue: with --postgres, give --redis and --kafka too")
	}
	a, p := t.auth, t.parts

	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ttl := dc.Duration + dc.Settle + time.Hour
	res, err := drill.Run(ctx, dc, drill.Target{
		URL:       t.url,
		Token:     func(sub, role string) (string, error) { return a.Issue(sub, role, ttl) },
		Queue:     p.Queue,
		Audit:     t.auditor,
		Shape:     p.Describe + "; boxoffice " + where,
		RedisAddr: c.Redis,
		Progress:  stderr,
	})
	if err != nil {
		return err
	}
	if svgPath != "" {
		if err := writeFile(svgPath, func(w io.Writer) error { return drill.WriteSVG(w, res) }); err != nil {
			return err
		}
	}
	if waitsPath != "" {
		if err := writeFile(waitsPath, func(w io.Writer) error { return drill.WriteWaits(w, res) }); err != nil {
			return err
		}
	}
	drill.WriteReport(stdout, res, svgPath)
	if out != "" {
		if err := writeFile(out, func(w io.Writer) error { drill.WriteReport(w, res, svgPath); return nil }); err != nil {
			return err
		}
	}
	if err := res.Failed(); err != nil {
		return fmt.Errorf("drill failed: %w", err)
	}
	return nil
}

// drillAuth is the token issuer for a server at --url: its secret from
// the flag or BOXOFFICE_AUTH_SECRET, else the one an embedded server keeps
// in its data directory. It never makes a secret: a new one would sign
// tokens the server refuses.
func drillAuth(secret, dataDir string) (*auth.Authenticator, error) {
	if secret == "" {
		if dataDir == "" {
			return nil, errors.New("give --auth-secret (or BOXOFFICE_AUTH_SECRET): the server's token secret")
		}
		if _, err := os.Stat(filepath.Join(dataDir, "auth.secret")); err != nil {
			return nil, fmt.Errorf("give --auth-secret (or BOXOFFICE_AUTH_SECRET): no secret in %s (%w)", dataDir, err)
		}
	}
	return authenticator(secret, dataDir, auth.Options{}, nil)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drillServer is a boxoffice serving in this process, a node as serve
// runs it.
type drillServer struct {
	base string
	node *node.Node
	stop func()
}

// startDrillServer starts a node with every role (the API, the workers,
// the upkeep) on 127.0.0.1, as serve does, minus the demo event and the
// welcome.
func startDrillServer(ctx context.Context, c config, fs *flag.FlagSet, getenv func(string) string, log *slog.Logger, a *auth.Authenticator) (*drillServer, error) {
	o := c.options(log, a, nodeIDFixed(fs, getenv))
	o.API, o.Workers, o.Upkeep = true, c.Workers, c.Relay
	n, err := node.New(ctx, o)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Serve(sctx, ln, 10*time.Second) }()
	stop := func() {
		cancel()
		<-done
		n.Close()
	}
	return &drillServer{base: "http://" + ln.Addr().String(), node: n, stop: stop}, nil
}
