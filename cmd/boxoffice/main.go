// Command boxoffice is the whole ticketing backend in one binary.
//
//	boxoffice serve    run the API, the reconciler and the embedded parts
//	boxoffice token    print a bearer token for a user or an organiser
//	boxoffice migrate  apply the PostgreSQL migrations
//	boxoffice worker   run booking workers only
//	boxoffice relay    run the background upkeep only: outbox relay, returns pass, reconciler
//	boxoffice kafka-fake  run an in-process Kafka broker for tests
//	boxoffice drill    replay a flash sale's peak and audit the store
//	boxoffice steady   run many events' steady state for minutes and audit the store
//	boxoffice verify-draw  check a queued event's pre-queue draw
//	boxoffice archive  move the partitions of past shows to files, or restore one
//	boxoffice backup   copy the embedded database to a file while it runs
//	boxoffice restore  put such a copy back (serve stopped)
//
// Run "boxoffice <command> --help" for the flags of each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signalContext()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "boxoffice:", err)
		os.Exit(1)
	}
}

const topUsage = `boxoffice: a ticketing backend for flash sales.

Usage:
  boxoffice serve [flags]              run everything in one process (embedded default
                                       when no server addresses are given)
  boxoffice token --sub ID [--role admin]  print a bearer token
  boxoffice migrate --postgres URL     apply the PostgreSQL migrations
  boxoffice worker [flags]             run booking workers only (scale the queue's drain)
  boxoffice relay [flags]              run the background upkeep only: outbox relay,
                                       returns pass (waitlist offers), reconciler
  boxoffice kafka-fake [--addr A]      run an in-process Kafka broker (franz-go's kfake)
                                       for tests and demos; prints its address
  boxoffice drill [flags]              load-drill a flash sale on loopback, audit the store
  boxoffice steady [flags]             load-drill many events' steady state on loopback for
                                       minutes (latency and memory over time), audit the store
  boxoffice verify-draw [--request ID] URL  check a queued event's pre-queue draw from what
                                       the server published (URL: .../events/ID)
  boxoffice archive --postgres URL --before YYYY-MM-DD --to DIR [--dry-run]
                                       move the month partitions of shows before a day
                                       to files (CSV + manifest), then drop them
  boxoffice archive restore --postgres URL --from DIR/<partition>  restore one
  boxoffice backup --to FILE [--data DIR]
                                       copy the embedded database to FILE while serve
                                       runs (one snapshot), checked before it is kept
  boxoffice restore --from FILE [--data DIR] [--force]
                                       put a backup in place of the embedded database
                                       (serve stopped; the old one is kept beside it)

Run "boxoffice serve --help" for the server flags and their environment variables.`

// run is main without the process: arguments, environment and output are
// passed in, so tests drive it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, topUsage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr)
	case "token":
		return token(args[1:], getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, args[1:], getenv, stdout, stderr)
	case "worker":
		return worker(ctx, args[1:], getenv, stdout, stderr)
	case "relay":
		return relay(ctx, args[1:], getenv, stdout, stderr)
	case "kafka-fake":
		return kafkaFake(ctx, args[1:], getenv, stdout, stderr)
	case "drill":
		return runDrill(ctx, args[1:], getenv, stdout, stderr)
	case "steady":
		return runSteady(ctx, args[1:], getenv, stdout, stderr)
	case "verify-draw":
		return verifyDraw(ctx, args[1:], getenv, stdout, stderr)
	case "archive":
		return archive(ctx, args[1:], getenv, stdout, stderr)
	case "backup":
		return backup(ctx, args[1:], getenv, stdout, stderr)
	case "restore":
		return restore(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, topUsage)
		return nil
	default:
		fmt.Fprintln(stderr, topUsage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// signalContext ends on SIGINT or SIGTERM, which start a graceful stop.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
