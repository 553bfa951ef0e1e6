package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice/kafka"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/queuestate"
	"github.com/boxoffice/boxoffice/redis"
	"github.com/boxoffice/boxoffice/sale"
)

// TestProduction runs the suite on PostgreSQL and Redis, on the real clock
// (Redis expires holds on its own), each test in a schema and under a key
// prefix of its own. Unreachable servers skip it, or fail it when CI=true.
func TestProduction(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers, real waiting")
	}
	pgURL := envOr("BOXOFFICE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	redisURL := envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0")
	admin, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		unreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	client, err := redis.Dial(redisURL)
	if err != nil {
		unreachable(t, "Redis", err)
	}
	t.Cleanup(client.Close)

	// One in-process Kafka broker for the run; each stack has a topic and
	// a consumer group of its own.
	seeds, stopKafka, err := kafka.StartFake("127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopKafka)
	kc, err := kafka.Open(kafka.Config{Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)

	Run(t, func(t *testing.T) *Stack {
		store := openSchemaStore(t, admin, pgURL, "apitest_")
		prefix := redisPrefix(t, client, "apitest:")
		topic := "sale.requests." + randomHex(4)
		if err := kc.EnsureTopics(ctx, map[string]int32{topic: 4}); err != nil {
			t.Fatal(err)
		}
		log := kafka.NewRequestLog(kc, kafka.RequestLogConfig{Topic: topic, Group: "workers-" + topic, HeartbeatInterval: 200 * time.Millisecond})
		return NewStack(t, Parts{
			Store: store, Holds: redis.NewHolds(client, prefix), Leases: redis.NewLeases(client, prefix), Shared: redis.NewSnapshots(client, prefix),
			Queue: productionQueue(t, client, prefix, store, log), AdmitDeadline: sale.DefaultAdmitDeadline,
			Log:      log,
			Notifier: redis.NewNotifier(client, prefix),
			Advance:  time.Sleep, HoldTTL: 3 * time.Second, PendingGrace: time.Second, SeatmapTTL: time.Second,
			// PostgreSQL commits each booking: a smaller storm keeps the run short.
			QueueStorm: 3_000,
		})
	})
}

// openSchemaStore opens a postgres.Store on a fresh schema of its own,
// dropped when the test ends, so that runs never see each other's rows.
func openSchemaStore(t testing.TB, admin *pgx.Conn, pgURL, prefix string) *postgres.Store {
	t.Helper()
	name := prefix + randomHex(6)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(ctx, "DROP SCHEMA "+name+" CASCADE") })
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	store, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func unreachable(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is unreachable and CI=true: %v", what, err)
	}
	t.Skipf("%s is unreachable: %v", what, err)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// redisPrefix returns a fresh key prefix under base whose keys are deleted
// when the test ends: the runs share the machine's Redis, and what a test
// leaves (queue entries keep a day) would pile up.
func redisPrefix(tb testing.TB, client rueidis.Client, base string) string {
	prefix := base + randomHex(6) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, node := range client.Nodes() {
			var cursor uint64
			for {
				e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
				if err != nil {
					tb.Logf("clean-up of %s*: %v", prefix, err)
					return
				}
				if len(e.Elements) > 0 {
					_ = node.Do(ctx, node.B().Unlink().Key(e.Elements...).Build()).Error()
				}
				if cursor = e.Cursor; cursor == 0 {
					break
				}
			}
		}
	})
	return prefix
}

// productionQueue is the queue state of the production shape: Redis,
// rebuilt from the log and PostgreSQL's outcomes, its epoch recorded.
func productionQueue(t testing.TB, client rueidis.Client, prefix string, store *postgres.Store, log *kafka.RequestLog) *queuestate.State {
	t.Helper()
	st := queuestate.New(redis.NewQueueState(client, prefix), store, log, redis.NewLeases(client, prefix), nil)
	st.Settle = 0 // nothing was admitted before
	// A topic just made may not be listed yet: wait for it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := st.Rebuild(ctx)
		if err == nil {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
