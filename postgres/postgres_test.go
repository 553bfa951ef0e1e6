package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/storetest"
)

// TestStore runs the contract every boxoffice.Store passes. Each subtest
// gets a schema of its own, so they run in parallel.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) boxoffice.Store {
		t.Parallel()
		return newStore(t)
	})
}

// TestBatchAgainstAlone holds CreateBookings to bookings written one by one
// each in a transaction of its own: TestStore compares it with
// CreateBooking, which the group commit makes a batch of its own.
func TestBatchAgainstAlone(t *testing.T) {
	storetest.RunBatch(t, func(t *testing.T) boxoffice.Store {
		t.Parallel()
		return alone{newStore(t)}
	})
}

// alone is a Store whose CreateBooking writes each booking alone.
type alone struct{ *postgres.Store }

func (a alone) CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error {
	return a.CreateBookingAlone(ctx, nb)
}

// defaultTestURL is the server every machine of this project runs (README);
// BOXOFFICE_TEST_POSTGRES overrides it.
const defaultTestURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var (
	reachOnce sync.Once
	reachErr  error
)

// serverURL returns the test server's URL. When the server cannot be
// reached the test is skipped, or fails when CI=true: CI must not pass by
// skipping.
func serverURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv("BOXOFFICE_TEST_POSTGRES")
	if u == "" {
		u = defaultTestURL
	}
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			reachErr = err
			return
		}
		reachErr = conn.Ping(ctx)
		conn.Close(ctx)
	})
	if reachErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("PostgreSQL at BOXOFFICE_TEST_POSTGRES is unreachable (CI=true, so this fails): %v", reachErr)
		}
		tb.Skipf("PostgreSQL unreachable (set BOXOFFICE_TEST_POSTGRES): %v", reachErr)
	}
	return u
}

// freshSchema creates an empty schema, drops it when the test ends, and
// returns a URL whose connections use it (search_path as a runtime
// parameter), so that tests running in parallel never see each other's rows.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	base := serverURL(tb)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "bo_test_" + hex.EncodeToString(b)

	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(`CREATE SCHEMA ` + schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		if err := exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(tb, base, schema)
}

func withSearchPath(tb testing.TB, base, schema string) string {
	tb.Helper()
	if !strings.Contains(base, "://") { // a key=value DSN
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("BOXOFFICE_TEST_POSTGRES: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// newStore opens a Store on a fresh schema; it is closed, and the schema
// dropped, when the test ends.
func newStore(tb testing.TB) *postgres.Store {
	tb.Helper()
	return openStore(tb, freshSchema(tb))
}

// openStore opens another Store on the schema of u: a second process, as
// far as the database can tell.
func openStore(tb testing.TB, u string) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(context.Background(), u)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// The pool is sized for a server's concurrent transactions unless the URL
// says otherwise: pgxpool's own default (one per CPU, at least 4) lets the
// batch writers starve every other transaction.
func TestPoolSize(t *testing.T) {
	schema := freshSchema(t)
	if got := openStore(t, schema).Pool().Config().MaxConns; got != postgres.DefaultPoolConns {
		t.Errorf("pool without pool_max_conns: %d connections, want %d", got, postgres.DefaultPoolConns)
	}
	if got := openStore(t, withParam(t, schema, "pool_max_conns", "7")).Pool().Config().MaxConns; got != 7 {
		t.Errorf("pool_max_conns=7: %d connections", got)
	}
}
