package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	env := newProductionEnv(t, "Redis", envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0"))
	Run(t, func(t *testing.T) *Stack { return env.stack(t, 1) })
}

// TestProductionQueueSlots runs the queue's part of the suite with every
// event's queue spread over three Redis slots, on the Redis Cluster that
// .ci/run starts (BOXOFFICE_TEST_REDIS_CLUSTER): the production shape of a
// hot event (serve --queue-slots 3).
func TestProductionQueueSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers, real waiting")
	}
	nodes := os.Getenv("BOXOFFICE_TEST_REDIS_CLUSTER")
	if nodes == "" {
		unreachable(t, "the Redis Cluster", errors.New("BOXOFFICE_TEST_REDIS_CLUSTER is not set (scripts/redis-cluster.sh start DIR prints it)"))
	}
	env := newProductionEnv(t, "the Redis Cluster", nodes)
	RunQueue(t, func(t *testing.T) *Stack { return env.stack(t, 3) })
}

// productionEnv is what the production stacks of one run share: the
// PostgreSQL admin connection, a Redis client, and one in-process Kafka
// broker (each stack has a topic and a consumer group of its own).
type productionEnv struct {
	pgURL  string
	admin  *pgx.Conn
	client rueidis.Client
	kc     *kafka.Client
}

func newProductionEnv(t *testing.T, redisName, redisAddr string) *productionEnv {
	e := &productionEnv{pgURL: envOr("BOXOFFICE_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")}
	var err error
	if e.admin, err = pgx.Connect(ctx, e.pgURL); err != nil {
		unreachable(t, "PostgreSQL", err)
	}
	t.Cleanup(func() { e.admin.Close(ctx) })
	if e.client, err = redis.Dial(redisAddr); err != nil {
		unreachable(t, redisName, err)
	}
	t.Cleanup(e.client.Close)
	seeds, stopKafka, err := kafka.StartFake("127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopKafka)
	if e.kc, err = kafka.Open(kafka.Config{Seeds: seeds}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.kc.Close)
	return e
}

func (e *productionEnv) stack(t *testing.T, slots int) *Stack {
	return productionStack(t, e.admin, e.pgURL, e.client, e.kc, slots)
}

// productionStack is a stack of the production shape, each test in a
// schema, under a key prefix and on a topic of its own; slots is the
// queue's (redis.QueueState.Slots).
func productionStack(t *testing.T, admin *pgx.Conn, pgURL string, client rueidis.Client, kc *kafka.Client, slots int) *Stack {
	store := openSchemaStore(t, admin, pgURL, "apitest_")
	prefix := redisPrefix(t, client, "apitest:")
	topic := "sale.requests." + randomHex(4)
	if err := kc.EnsureTopics(ctx, map[string]int32{topic: 4}); err != nil {
		t.Fatal(err)
	}
	log := kafka.NewRequestLog(kc, kafka.RequestLogConfig{Topic: topic, Group: "workers-" + topic, HeartbeatInterval: 200 * time.Millisecond})
	return NewStack(t, Parts{
		Store: store, Holds: redis.NewHolds(client, prefix), Leases: redis.NewLeases(client, prefix), Shared: redis.NewSnapshots(client, prefix),
		Queue: productionQueue(t, client, prefix, store, log, slots), AdmitDeadline: sale.DefaultAdmitDeadline,
		Log:      log,
		Notifier: redis.NewNotifier(client, prefix),
		Advance:  time.Sleep, HoldTTL: 3 * time.Second, PendingGrace: time.Second, SeatmapTTL: time.Second,
		// PostgreSQL commits each booking: a smaller storm keeps the run short.
		QueueStorm: 3_000,
		QueueSlots: slots, SlotOf: func(user string) int { return redis.UserSlot(user, slots) },
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
				// One key a command: on a cluster, a command's keys must
				// share a slot.
				cmds := make(rueidis.Commands, len(e.Elements))
				for i, k := range e.Elements {
					cmds[i] = node.B().Unlink().Key(k).Build()
				}
				if len(cmds) > 0 {
					node.DoMulti(ctx, cmds...)
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
func productionQueue(t testing.TB, client rueidis.Client, prefix string, store *postgres.Store, log *kafka.RequestLog, slots int) *queuestate.State {
	t.Helper()
	cache := redis.NewQueueState(client, prefix)
	cache.Slots = slots
	st := queuestate.New(cache, store, log, redis.NewLeases(client, prefix), nil)
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
