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
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/httpapi"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
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

	if c.Kafka != "" {
		return errors.New("--kafka: the flash-sale queue is not in this build yet; run without it")
	}
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	a, err := authenticator(c.AuthSecret, c.Data)
	if err != nil {
		return err
	}
	nodeIDSet := getenv(envName("node-id")) != ""
	fs.Visit(func(f *flag.Flag) { nodeIDSet = nodeIDSet || f.Name == "node-id" })
	p, err := openParts(ctx, c, log, nodeIDSet)
	if err != nil {
		return err
	}
	defer p.close()
	store, holds, leases, ids := p.store, p.holds, p.leases, p.ids
	pay := testpay.New()
	pay.SlowDelay = c.SlowPayment

	svc := sale.New(sale.Deps{Store: store, Holds: holds, Leases: leases, Payments: pay, IDs: ids, Log: log},
		sale.Config{HoldTTL: c.Hold, PendingGrace: c.PendingGrace, MaxSeatsPerRequest: c.MaxSeats})
	seats := seatmap.New(svc, store, holds, c.SeatmapTTL, nil)
	if p.shared != nil {
		seats.Share(p.shared, leases)
	}
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
	p.run(bg, &wg)

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
