// Command locking measures, in one run, on the same seats and the same
// load, four ways to hold a seat, at low and at flash-sale contention:
//
//  1. naive check-then-reserve in PostgreSQL (SELECT status, then UPDATE;
//     no lock, READ COMMITTED): oversells under contention;
//  2. optimistic compare-and-swap on a version column (a 0-row UPDATE is a
//     lost race);
//  3. pessimistic SELECT ... FOR UPDATE in a transaction, UPDATE, COMMIT;
//  4. Redis SET NX PX, the design: through boxoffice's redis.Holds.Acquire
//     (its Lua script) and as a raw SET NX PX.
//
// It prints a markdown table (successful holds/s, attempts/s, wasted work,
// p50/p99 latency per attempt, oversold seats counted per seat from what
// each caller was told), with the machine's ceilings measured in the same
// run (PostgreSQL SELECT 1 and a single-row UPDATE on the same pool, raw
// Redis SET NX PX on the same client), and writes an SVG bar chart.
//
//	go run ./bench/locking                                # the default run, about a minute
//	go run ./bench/locking -duration 1s -clients 8 -svg ""
//
// Tables live in a schema with a random suffix, keys under a random prefix;
// both are removed at the end, also after an interrupt. See README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The development machine's servers (see DEVELOPERS.md); the same
// environment variables as the tests override them.
const (
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	defaultRedis    = "redis://127.0.0.1:6379/0"
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("locking: ")
	var (
		pg       = flag.String("postgres", envOr("BOXOFFICE_TEST_POSTGRES", defaultPostgres), "PostgreSQL URL (default from BOXOFFICE_TEST_POSTGRES)")
		rd       = flag.String("redis", envOr("BOXOFFICE_TEST_REDIS", defaultRedis), "Redis URL (default from BOXOFFICE_TEST_REDIS)")
		duration = flag.Duration("duration", 2*time.Second, "how long each cell (strategy × contention × clients) and each ceiling runs")
		clients  = flag.String("clients", "16,64", "comma-separated numbers of concurrent callers")
		seats    = flag.Int("seats", 70_000, "low contention: each attempt picks a random seat among this many")
		hot      = flag.Int("hot", 10, "flash-sale contention: each attempt picks a random seat among this many hot seats")
		svg      = flag.String("svg", "docs/locking.svg", `write the chart here ("" for none)`)
	)
	flag.Parse()
	cs, err := parseClients(*clients)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, Config{
		Postgres: *pg, Redis: *rd, Duration: *duration, Clients: cs, Seats: *seats, Hot: *hot,
		Progress: os.Stderr,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := rep.Markdown(os.Stdout); err != nil {
		log.Fatal(err)
	}
	if *svg != "" {
		if err := writeSVG(rep, *svg); err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "chart written to %s\n", *svg)
	}
}

func parseClients(s string) ([]int, error) {
	var cs []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-clients %q: want positive numbers separated by commas", s)
		}
		cs = append(cs, n)
	}
	return cs, nil
}

// writeSVG writes the chart to path through a temporary file, so a failed
// run never leaves half a chart.
func writeSVG(rep *Report, path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".locking-*.svg")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := rep.SVG(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
