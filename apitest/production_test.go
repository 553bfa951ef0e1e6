package apitest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/pgcluster"
	"github.com/boxoffice/boxoffice/kafka"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/queuestate"
	"github.com/boxoffice/boxoffice/redis"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/snowflake"
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

// TestProductionSharded runs the suite on PostgreSQL sharded by event: the
// directory (shard 0) on the machine's server, shard 1 on a cluster of its
// own (pg_createcluster, dropped at the end), each test in a schema of its
// own on both. The placement spreads the suite's events over the two (the
// least seats; a queued sale on a shard with no other), and every request
// finds its shard from the event or the id.
func TestProductionSharded(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers, real waiting")
	}
	env := newProductionEnv(t, "Redis", envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0"))
	second := secondCluster(t)
	Run(t, func(t *testing.T) *Stack { return env.shardedStack(t, second) })
	// The suite ran on both shards, not on the directory alone.
	second.mu.Lock()
	defer second.mu.Unlock()
	if second.events[0] == 0 || second.events[1] == 0 {
		t.Fatalf("events per shard over the suite = %v: want both shards used", second.events)
	}
	t.Logf("events per shard over the suite: %v", second.events)
}

// secondCluster starts a PostgreSQL cluster for the tests' second shard
// and returns an admin connection to its database, or skips (fails when
// CI=true) where clusters cannot be made.
func secondCluster(t *testing.T) *shardServer {
	if err := pgcluster.Available(); err != nil {
		unreachable(t, "a second PostgreSQL cluster", err)
	}
	c, err := pgcluster.New("boxapi_")
	if err != nil {
		unreachable(t, "a second PostgreSQL cluster", err)
	}
	t.Cleanup(c.Drop)
	u, err := c.CreateDB("shard1")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(ctx) })
	return &shardServer{url: u, admin: admin}
}

type shardServer struct {
	url   string
	admin *pgx.Conn

	mu     sync.Mutex
	events [2]int // the suite's events per shard
}

// shardedStack is a production stack on two shards: a schema on the
// machine's server (the directory) and one on the second cluster.
func (e *productionEnv) shardedStack(t *testing.T, second *shardServer) *Stack {
	dir := openSchemaStore(t, e.admin, e.pgURL, "apishard0_")
	one := openSchemaStore(t, second.admin, second.url, "apishard1_")
	sh, err := postgres.NewSharded(ctx, []*postgres.Store{dir, one}, postgres.ShardedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := snowflake.New(int(time.Now().UnixNano()%postgres.ShardNodes), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the stores' own clean-ups, so it runs after the
	// stack has stopped and before they close.
	t.Cleanup(func() {
		for k, st := range sh.Shards() {
			var n int
			if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
				t.Errorf("count shard %d's events: %v", k, err)
			}
			second.mu.Lock()
			second.events[k] += n
			second.mu.Unlock()
		}
	})
	return productionStack(t, sh, postgres.ShardedIDs{IDs: gen, Store: sh}, e.client, e.kc, 1)
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
	return productionStack(t, openSchemaStore(t, e.admin, e.pgURL, "apitest_"), nil, e.client, e.kc, slots)
}

// productionStore is the store of a production stack and the queue's
// journal: a postgres.Store or a postgres.Sharded.
type productionStore interface {
	boxoffice.Store
	queuestate.Journal
}

// productionStack is a stack of the production shape on store (each test
// in a schema of its own), under a key prefix and on a topic of its own;
// slots is the queue's (redis.QueueState.Slots); ids nil: the stack's.
func productionStack(t *testing.T, store productionStore, ids boxoffice.IDGenerator, client rueidis.Client, kc *kafka.Client, slots int) *Stack {
	prefix := redisPrefix(t, client, "apitest:")
	topic := "sale.requests." + randomHex(4)
	const partitions = 4
	if err := kc.EnsureTopics(ctx, map[string]int32{topic: partitions}); err != nil {
		t.Fatal(err)
	}
	log := kafka.NewRequestLog(kc, kafka.RequestLogConfig{Topic: topic, Group: "workers-" + topic, HeartbeatInterval: 200 * time.Millisecond})
	return NewStack(t, Parts{
		Store: store, IDs: ids, Holds: redis.NewHolds(client, prefix), Leases: redis.NewLeases(client, prefix), Shared: redis.NewSnapshots(client, prefix),
		Queue: productionQueue(t, client, prefix, store, log, slots), AdmitDeadline: sale.DefaultAdmitDeadline,
		Log:      log,
		Notifier: redis.NewNotifier(client, prefix),
		Advance:  time.Sleep, HoldTTL: 3 * time.Second, PendingGrace: time.Second, SeatmapTTL: time.Second,
		// PostgreSQL commits each booking: a smaller storm keeps the run short.
		QueueStorm: 3_000,
		QueueSlots: slots, SlotOf: func(user string) int { return redis.UserSlot(user, slots) },
		LogPartitions: partitions,
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
// warnLogger says only what went wrong: the suite's and the benchmarks'
// output is not interleaved with every queue's first build.
var warnLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func productionQueue(t testing.TB, client rueidis.Client, prefix string, store queuestate.Journal, log *kafka.RequestLog, slots int) *queuestate.State {
	t.Helper()
	cache := redis.NewQueueState(client, prefix)
	cache.Slots = slots
	st := queuestate.New(cache, store, log, redis.NewLeases(client, prefix), warnLogger)
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
