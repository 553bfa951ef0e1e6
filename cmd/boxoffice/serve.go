package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/snowflake"
	"github.com/boxoffice/boxoffice/sqlite"
	"github.com/boxoffice/boxoffice/testpay"
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

	if c.Postgres != "" || c.Redis != "" || c.Kafka != "" {
		return errors.New("--postgres, --redis and --kafka are not supported by this build yet: run without them for the embedded default")
	}
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	a, err := authenticator(c.AuthSecret, c.Data)
	if err != nil {
		return err
	}
	ids, err := snowflake.New(c.NodeID, nil)
	if err != nil {
		return err
	}
	store, err := sqlite.Open(ctx, filepath.Join(c.Data, "boxoffice.db"))
	if err != nil {
		return fmt.Errorf("open the embedded database: %w", err)
	}
	defer store.Close()
	holds := inmem.NewHolds(nil)
	leases := inmem.NewLeases(nil)
	pay := testpay.New()
	pay.SlowDelay = c.SlowPayment

	svc := sale.New(sale.Deps{Store: store, Holds: holds, Leases: leases, Payments: pay, IDs: ids, Log: log},
		sale.Config{HoldTTL: c.Hold, PendingGrace: c.PendingGrace, MaxSeatsPerRequest: c.MaxSeats})
	seats := seatmap.New(svc, store, holds, c.SeatmapTTL, nil)
	api := httpapi.New(svc, seats, a, log)

	var demo *boxoffice.Event
	if c.Demo {
		if demo, err = ensureDemo(ctx, svc); err != nil {
			return fmt.Errorf("demo event: %w", err)
		}
	}

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      c.SlowPayment + 60*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	base := "http://" + ln.Addr().String()
	printWelcome(stdout, base, a, demo)

	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { svc.RunReconciler(bg, c.ReconcileEvery) })
	wg.Go(func() { holds.Run(bg, time.Second, nil) })
	wg.Go(func() { leases.Run(bg, 10*time.Second) })

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
