package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice/drill"
)

const steadyUsage = `Usage: boxoffice steady [flags]

Runs a steady state (package drill, RunSteady): creates many direct-sale
events over HTTP (1,000 of 500 seats by default), then for --duration
spreads seat-map reads, holds, payments, releases and cancellations over
them, each on an event drawn from a Zipf law of popularity. Every
--interval it samples bookings/s, holds/s, p50/p99 latency per operation
and the server's memory; at the end it audits every event in the store and
prints a markdown report: the intervals, whether latency and memory stayed
flat (the last third against the first), and the rates as ratios of this
machine's ceilings measured in the same run. It exits non-zero if a seat
was oversold or a payment or cancellation lost; latency and memory are
reported, never judged.

Without --url it starts a boxoffice in this process, wired as serve is, on
127.0.0.1 (embedded in a temporary --data directory, or on --postgres,
--redis and --kafka), and samples the process's heap after a collection.
With --url it loads that server, which must be on loopback, audits the
stores given by --data or --postgres/--redis/--kafka, which must be the
server's own, and reads its memory from --metrics-url (default URL/metrics,
with an organiser's token).

Flags:`

// runSteady is "boxoffice steady": flags and wiring only; package drill
// does the drill.
func runSteady(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c config
	newServeFlagSet(&c) // serve's defaults for everything the drill does not set
	sc := drill.DefaultSteadyConfig()
	var url, metricsURL, out, secret string
	fs := flag.NewFlagSet("steady", flag.ContinueOnError)
	fs.SetOutput(stderr)
	loadTargetFlags(fs, &c, &url, &secret)
	fs.StringVar(&metricsURL, "metrics-url", "", "with --url: where the server's Prometheus metrics are, for its memory (default URL/metrics, read with an organiser's token)")
	fs.IntVar(&c.Workers, "workers", 1, "in-process server: booking workers (they drain queued sales; direct sales do not use them)")
	fs.IntVar(&c.CacheEvents, "cache-events", c.CacheEvents, "in-process server: events each in-process cache keeps (see serve --cache-events)")
	fs.Var(&c.CacheMemory, "cache-memory", "in-process server: bytes the cached seat maps and layouts may take (see serve --cache-memory)")

	fs.IntVar(&sc.Events, "events", sc.Events, "events on sale at once, created before the load")
	fs.IntVar(&sc.Seats, "seats", sc.Seats, "seats per event (the seed's average is 5,000)")
	fs.IntVar(&sc.Sections, "sections", sc.Sections, "sections per event (rows of up to 50)")
	fs.IntVar(&sc.TicketLimit, "ticket-limit", sc.TicketLimit, "seats one user may hold or own per event")
	fs.IntVar(&sc.RefundCutoffHours, "refund-cutoff-hours", sc.RefundCutoffHours, "events are refundable until this many hours before the show (the shows are 30-60 days out)")
	fs.Float64Var(&sc.Zipf, "zipf", sc.Zipf, "exponent of the events' popularity: the k-th event is drawn with weight k^-zipf (0: uniform)")
	fs.IntVar(&sc.Users, "users", sc.Users, "distinct signed-in users the bookings spread over")
	fs.DurationVar(&sc.Duration, "duration", sc.Duration, "length of the load; the drill stops by itself")
	fs.DurationVar(&sc.Interval, "interval", sc.Interval, "sampling interval (rates, p50/p99, memory)")
	fs.IntVar(&sc.Conns, "conns", sc.Conns, "bookings under way at once (the load generator's concurrency)")
	fs.Float64Var(&sc.Rate, "rate", sc.Rate, "bookings started per second at most (0: each worker starts the next as soon as one ends)")
	fs.Float64Var(&sc.BestShare, "best-available-share", sc.BestShare, "share of bookings asking for the best seats side by side in a section instead of naming seats from the map")
	fs.Float64Var(&sc.ConfirmShare, "confirm-share", sc.ConfirmShare, "share of holds paid with tok_visa")
	fs.Float64Var(&sc.ReleaseShare, "release-share", sc.ReleaseShare, "share of holds released (the rest expire)")
	fs.Float64Var(&sc.CancelShare, "cancel-share", sc.CancelShare, "share of paid bookings cancelled for a refund")
	fs.DurationVar(&sc.CancelAfter, "cancel-after", sc.CancelAfter, "how long after payment a booking is cancelled")
	fs.Float64Var(&sc.MapReads, "map-reads", sc.MapReads, "seat-map reads per booking, at least 1 (the last is the one seats are picked from)")
	fs.IntVar(&sc.Attempts, "attempts", sc.Attempts, "reserves per booking at most (the next after a seat_taken rejection)")
	fs.DurationVar(&sc.Timeout, "timeout", sc.Timeout, "one attempt's timeout")
	fs.IntVar(&sc.Retries, "retries", sc.Retries, "retries with the same idempotency key after a timeout, 5xx or 409 in flight")
	fs.DurationVar(&sc.Ceiling, "ceiling", sc.Ceiling, "how long to measure the bare net/http handler (0: skip)")
	fs.Uint64Var(&sc.Seed, "seed", sc.Seed, "seed of the load's draws")
	fs.StringVar(&out, "out", "", "also write the report to this file")
	fs.Usage = usage(stderr, fs, steadyUsage)
	if err := parseFlags(fs, args, getenv); err != nil {
		return err
	}
	if err := sc.Validate(); err != nil {
		return err
	}
	log := newLogger(stderr, c.LogLevel)
	ttl := sc.Duration + time.Hour

	tgt, done, err := steadyTarget(ctx, c, fs, getenv, log, url, metricsURL, secret, ttl, stderr)
	if err != nil {
		return err
	}
	defer done()
	res, err := drill.RunSteady(ctx, sc, tgt)
	if err != nil {
		return err
	}
	drill.WriteSteadyReport(stdout, res)
	if out != "" {
		if err := writeFile(out, func(w io.Writer) error { drill.WriteSteadyReport(w, res); return nil }); err != nil {
			return err
		}
	}
	if err := res.Failed(); err != nil {
		return fmt.Errorf("steady drill failed: %w", err)
	}
	return nil
}

// steadyTarget is the drill's target (openLoadTarget) with the server's
// memory: this process's heap, or the server's metrics. done closes what
// it opened.
func steadyTarget(ctx context.Context, c config, fs *flag.FlagSet, getenv func(string) string, log *slog.Logger,
	url, metricsURL, secret string, ttl time.Duration, stderr io.Writer) (drill.SteadyTarget, func(), error) {
	lt, err := openLoadTarget(ctx, "steady", c, fs, getenv, log, url, secret, stderr)
	if err != nil {
		return drill.SteadyTarget{}, nil, err
	}
	var t drill.SteadyTarget
	where := "at " + lt.url
	if lt.inProcess {
		where = fmt.Sprintf("in this process, hold %s, seat-map TTL %s, cache %d events / %s", c.Hold, c.SeatmapTTL, c.CacheEvents, c.CacheMemory.String())
		t.Memory = drill.ProcessMemory
	} else {
		if metricsURL == "" {
			metricsURL = strings.TrimRight(lt.url, "/") + "/metrics"
		}
		tok, err := lt.auth.Issue("steady-metrics", "admin", ttl)
		if err != nil {
			lt.close()
			return drill.SteadyTarget{}, nil, err
		}
		t.Memory = drill.MetricsMemory(metricsURL, tok)
	}
	a := lt.auth
	t.Target = drill.Target{
		URL:       lt.url,
		Token:     func(sub, role string) (string, error) { return a.Issue(sub, role, ttl) },
		Audit:     lt.auditor,
		Shape:     lt.parts.Describe + "; boxoffice " + where,
		RedisAddr: c.Redis,
		Progress:  stderr,
	}
	return t, lt.close, nil
}
