package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/boxoffice/boxoffice/auth"
	"github.com/boxoffice/boxoffice/drill"
	"github.com/boxoffice/boxoffice/node"
)

// loadTarget is what a load command (drill, steady) drives and audits: a
// node started in this process, or the server at a loopback URL with its
// stores opened beside it; the token issuer; the store's auditor.
type loadTarget struct {
	url       string
	auth      *auth.Authenticator
	parts     *node.Parts
	auditor   drill.Auditor
	inProcess bool
	closers   []func()
}

// close closes what openLoadTarget opened, in reverse order.
func (t *loadTarget) close() {
	for i := len(t.closers) - 1; i >= 0; i-- {
		t.closers[i]()
	}
}

// loadTargetFlags declares the flags every load command has for its
// target: a server at --url, or one in this process; its stores; its
// token secret; the in-process server's hold and upkeep.
func loadTargetFlags(fs *flag.FlagSet, c *config, url, secret *string) {
	fs.StringVar(url, "url", "", "base URL of a running boxoffice on loopback (absent: start one in this process)")
	fs.StringVar(&c.Data, "data", "", "embedded database directory: the --url server's (for the audit), or the in-process server's (absent: a temporary one, removed after)")
	fs.StringVar(&c.Postgres, "postgres", "", "PostgreSQL URL of the store (the --url server's, or for the in-process server)")
	fs.StringVar(&c.Redis, "redis", "", "Redis URL of the holds and the queue's state (as --postgres)")
	fs.StringVar(&c.Kafka, "kafka", "", "Kafka brokers of the queue, e.g. a boxoffice kafka-fake (as --postgres)")
	fs.StringVar(secret, "auth-secret", "", "the server's token secret (in-process: a random one when absent; with --url: --data's auth.secret when absent)")
	fs.DurationVar(&c.Hold, "hold", 2*time.Minute, "in-process server: how long a hold lasts (short, so that unpaid holds come back during the run)")
	fs.DurationVar(&c.PendingGrace, "pending-grace", 10*time.Second, "in-process server: grace before the reconciler expires a pending booking")
	fs.DurationVar(&c.ReconcileEvery, "reconcile-every", 5*time.Second, "in-process server: reconciler interval")
	fs.DurationVar(&c.SeatmapTTL, "seatmap-ttl", 10*time.Second, "in-process server: seat-map cache TTL (the users' view is this stale)")
	fs.StringVar(&c.LogLevel, "log-level", "warn", "in-process server's log level")
	fs.Float64Var(&c.DrainPrior, "queue-drain-prior", 2000, "in-process server: the drain rate (requests/s) wait estimates assume until one is measured, and the least capacity during a burst")
}

// openLoadTarget opens the target of a load command named name: without
// url, a node with every role on 127.0.0.1 (embedded in a temporary data
// directory unless c.Data, or on c's servers) signed with secret or a
// random one; with url, that server (loopback only), its token secret
// from secret or its --data, and its stores as c names them.
func openLoadTarget(ctx context.Context, name string, c config, fs *flag.FlagSet, getenv func(string) string,
	log *slog.Logger, url, secret string, stderr io.Writer) (_ *loadTarget, err error) {
	t := &loadTarget{url: url}
	defer func() {
		if err != nil {
			t.close()
		}
	}()
	if url == "" {
		t.inProcess = true
		// The server in this process runs as serve would (the load
		// generator, and the bare handler it measures, share the setting).
		tuneGC(getenv, log)
		if c.Data == "" {
			dir, err := os.MkdirTemp("", "boxoffice-"+name+"-")
			if err != nil {
				return nil, err
			}
			t.closers = append(t.closers, func() { os.RemoveAll(dir) })
			c.Data = dir
		} else if err := os.MkdirAll(c.Data, 0o700); err != nil {
			return nil, err
		}
		if secret == "" {
			b := make([]byte, 32)
			_, _ = rand.Read(b)
			secret = hex.EncodeToString(b)
		}
		if t.auth, err = auth.New([]byte(secret), nil); err != nil {
			return nil, err
		}
		srv, err := startDrillServer(ctx, c, fs, getenv, log, t.auth)
		if err != nil {
			return nil, err
		}
		t.closers = append(t.closers, srv.stop)
		t.url, t.parts = srv.base, srv.node.Parts()
		fmt.Fprintf(stderr, "%s: boxoffice started in this process at %s (data %s)\n", name, t.url, c.Data)
	} else {
		if err := drill.CheckLoopback(url); err != nil {
			return nil, err
		}
		if c.Postgres == "" {
			if c.Data == "" {
				c.Data = "boxoffice-data" // serve's default
			}
			// sqlite.Open would make an empty database and audit that.
			if _, err := os.Stat(filepath.Join(c.Data, "boxoffice.db")); err != nil {
				return nil, fmt.Errorf("the audit reads the server's embedded database: give its --data (%w)", err)
			}
		}
		if t.auth, err = drillAuth(secret, c.Data); err != nil {
			return nil, err
		}
		if t.parts, err = node.Open(ctx, c.options(log, t.auth, true)); err != nil {
			return nil, err
		}
		t.closers = append(t.closers, t.parts.Close)
	}
	if c.Postgres != "" {
		t.auditor, err = drill.OpenPostgresAuditor(ctx, c.Postgres)
	} else {
		t.auditor, err = drill.OpenSQLiteAuditor(filepath.Join(c.Data, "boxoffice.db"))
	}
	if err != nil {
		return nil, err
	}
	t.closers = append(t.closers, func() { t.auditor.Close() })
	return t, nil
}
