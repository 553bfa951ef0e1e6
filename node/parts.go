package node

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/kafka"
	"github.com/boxoffice/boxoffice/outbox"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/queuestate"
	"github.com/boxoffice/boxoffice/redis"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/boxoffice/boxoffice/seatmap"
	"github.com/boxoffice/boxoffice/snowflake"
	"github.com/boxoffice/boxoffice/sqlite"
)

// KeyPrefix starts every Redis key boxoffice writes, so that it can share
// a Redis with other programs.
const KeyPrefix = "bo:"

// Parts are the adapters a node runs on: the embedded ones (SQLite,
// in-process holds and leases, SQLite's queue) when no server address is
// given, the production ones (PostgreSQL, Redis, Kafka) otherwise. Open
// chooses them from Options; a test may build its own and give them in
// Options.Parts.
type Parts struct {
	Store  boxoffice.Store
	Holds  boxoffice.Holds
	Leases boxoffice.Leases
	// Shared is the seat map's cache across nodes (Redis); nil: each
	// node keeps its own.
	Shared seatmap.Shared
	// Queue and RequestLog run queued sales: the embedded database's, or
	// Redis + Kafka; nil when the shape has none (PostgreSQL without
	// Kafka), and queued sales answer 503.
	Queue      boxoffice.QueueState
	RequestLog boxoffice.RequestLog
	Notifier   boxoffice.Notifier
	// QueuePurge deletes decided requests of a queue that keeps them (the
	// embedded one); nil: they expire by themselves.
	QueuePurge boxoffice.QueuePurger
	// Publisher takes the outbox's booking events: Kafka, or the log.
	Publisher outbox.Publisher
	// IDs makes the Snowflake ids; nil: a generator for Options.NodeID.
	IDs boxoffice.IDGenerator
	// AdmitDeadline is sale.Config.AdmitDeadline: set where the queue's
	// state is a cache that a rebuild must find complete (Redis).
	AdmitDeadline time.Duration
	// Describe names the parts for the log and reports.
	Describe string

	// run starts the background work the parts need (sweepers, the queue
	// state's watcher).
	run     []func(ctx context.Context)
	closers []func()
}

// Close closes what Open opened, in reverse order.
func (p *Parts) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}

func (p *Parts) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, run := range p.run {
		wg.Go(func() { run(ctx) })
	}
}

// Open opens the parts o names: PostgreSQL at o.Postgres or the SQLite
// file in o.Data; Redis at o.Redis or in-process holds; Kafka at o.Kafka
// (with Redis and PostgreSQL) or the embedded queue.
func Open(ctx context.Context, o Options) (_ *Parts, err error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	log := o.logger()
	p := &Parts{Notifier: inmem.NewNotifier(), Publisher: outbox.LogPublisher{Log: log}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	var (
		journal queuestate.Journal // PostgreSQL: the queue's outcomes
		idLease *postgres.NodeLease
		nodeID  = o.NodeID
		shards  *postgres.Sharded // several PostgreSQL databases
	)
	if o.Postgres != "" {
		sharded, dir, err := openPostgres(ctx, o, log)
		if err != nil {
			return nil, err
		}
		if sharded != nil {
			p.Store, journal = sharded, sharded
			p.closers = append(p.closers, func() { sharded.Close() })
		} else {
			p.Store, journal = dir, dir
			p.closers = append(p.closers, func() { dir.Close() })
		}
		// The node id is leased from PostgreSQL (the directory, when
		// sharded) and renewed in the background (see
		// postgres.NodeLease): ids stop (503) while the lease cannot be
		// confirmed. A fixed node id is the operator's to keep unique
		// across live processes and from going back in time.
		if !o.FixedNodeID {
			maxNode := 0
			if sharded != nil {
				maxNode = postgres.ShardNodes - 1
			}
			if idLease, err = leaseNodeID(ctx, dir, maxNode, p, log); err != nil {
				return nil, err
			}
			nodeID, _ = idLease.Node()
		}
		shards = sharded
	} else {
		st, err := sqlite.Open(ctx, filepath.Join(o.Data, "boxoffice.db"))
		if err != nil {
			return nil, fmt.Errorf("open the embedded database: %w", err)
		}
		p.Store = st
		p.closers = append(p.closers, func() { st.Close() })
		if o.Kafka == "" {
			q := st.Queue()
			p.Queue, p.RequestLog, p.QueuePurge = q, q, q
		}
		if o.Redis == "" {
			// In-process holds die with the process: the live ones come
			// back from the database before serving, or a restart would
			// free seats that pending bookings still hold.
			live, err := st.LiveHolds(ctx, time.Now())
			if err != nil {
				return nil, fmt.Errorf("restore holds: %w", err)
			}
			if len(live) > 0 {
				log.Info("holds restored from the database", "bookings", len(live))
			}
			p.inProcessHolds(live)
		}
	}
	var cache *redis.QueueState // Redis: the queue's state
	if o.Redis != "" {
		client, err := redis.Dial(o.Redis)
		if err != nil {
			return nil, fmt.Errorf("connect to Redis: %w", err)
		}
		p.closers = append(p.closers, client.Close)
		p.Holds = redis.NewHolds(client, KeyPrefix)
		p.Leases = redis.NewLeases(client, KeyPrefix)
		p.Shared = redis.NewSnapshots(client, KeyPrefix)
		p.Notifier = redis.NewNotifier(client, KeyPrefix)
		if o.Kafka != "" {
			cache = redis.NewQueueState(client, KeyPrefix)
			cache.Slots = o.QueueSlots
			for node, policy := range redis.EvictionPolicy(ctx, client) {
				log.Warn("Redis may evict keys of the flash-sale queue: run it with maxmemory-policy noeviction",
					"node", node, "maxmemory-policy", policy)
			}
		}
	} else if p.Holds == nil {
		// PostgreSQL without Redis: holds in this process alone, for a
		// single node (a restart frees them; the database still refuses
		// a second ticket).
		p.inProcessHolds(nil)
	}
	if o.Kafka != "" {
		if err := p.kafkaQueue(ctx, o, cache, journal, log); err != nil {
			return nil, err
		}
	}
	var ids boxoffice.IDGenerator
	if idLease != nil {
		ids = snowflake.NewLeased(idLease, nil)
	} else if ids, err = snowflake.New(nodeID, nil); err != nil {
		return nil, err
	}
	p.IDs = ids
	if shards != nil {
		// An event's rows' ids name its shard (postgres.ShardedIDs).
		p.IDs = postgres.ShardedIDs{IDs: ids, Store: shards}
	}
	p.Describe = describe(o, p)
	log.Info("parts", "shape", p.Describe, "node_id", nodeID)
	return p, nil
}

// openPostgres opens the PostgreSQL store: one database, or the shards
// (o.Shards, or a database that says it is a shard: given alone it must
// be the directory of a deployment of one, or it is refused). dir is the
// database the node ids are leased from: the one, or the directory.
func openPostgres(ctx context.Context, o Options, log *slog.Logger) (*postgres.Sharded, *postgres.Store, error) {
	if len(o.Shards) == 0 {
		pg, err := postgres.Open(ctx, o.Postgres)
		if err != nil {
			return nil, nil, fmt.Errorf("open PostgreSQL: %w", err)
		}
		_, sharded, err := pg.ShardIdentity(ctx)
		if err != nil || !sharded {
			if err != nil {
				pg.Close()
				return nil, nil, fmt.Errorf("open PostgreSQL: %w", err)
			}
			return nil, pg, nil
		}
		sh, err := postgres.NewSharded(ctx, []*postgres.Store{pg}, postgres.ShardedConfig{})
		if err != nil {
			pg.Close()
			return nil, nil, fmt.Errorf("open PostgreSQL: %w", err)
		}
		return sh, pg, nil
	}
	sh, err := postgres.OpenSharded(ctx, append([]string{o.Postgres}, o.Shards...), postgres.ShardedConfig{})
	if err != nil {
		return nil, nil, fmt.Errorf("open the PostgreSQL shards: %w", err)
	}
	log.Info("PostgreSQL sharded by event", "shards", len(sh.Shards()))
	return sh, sh.Shards()[0], nil
}

// leaseNodeID leases a Snowflake node id from PostgreSQL (up to maxNode;
// 0: any), renewed in the background and released when p closes.
func leaseNodeID(ctx context.Context, pg *postgres.Store, maxNode int, p *Parts, log *slog.Logger) (*postgres.NodeLease, error) {
	lease := pg.NewNodeLease(postgres.NodeLeaseConfig{Log: log, MaxNode: maxNode})
	if err := lease.Acquire(ctx); err != nil {
		return nil, fmt.Errorf("lease a Snowflake node id: %w", err)
	}
	lctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); lease.Run(lctx) }()
	p.closers = append(p.closers, func() {
		stop()
		<-done
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := lease.Release(rctx); err != nil {
			log.Warn("release the Snowflake node id", "err", err)
		}
	})
	return lease, nil
}

// inProcessHolds makes the in-process holds and leases, the holds of live
// holding them to begin with, and runs their sweepers with the parts.
func (p *Parts) inProcessHolds(live []boxoffice.Hold) {
	holds, leases := inmem.NewHolds(nil), inmem.NewLeases(nil)
	for _, h := range live {
		holds.Restore(h)
	}
	p.Holds, p.Leases = holds, leases
	p.run = append(p.run, func(ctx context.Context) { holds.Run(ctx, time.Second, nil) },
		func(ctx context.Context) { leases.Run(ctx, 10*time.Second) })
}

// kafkaQueue makes the production queue: the request log in Kafka, its
// state a cache in Redis, rebuilt from the log and the outcome journal
// whenever Redis loses it; every process watches for that.
func (p *Parts) kafkaQueue(ctx context.Context, o Options, cache *redis.QueueState, journal queuestate.Journal, log *slog.Logger) error {
	kc, err := kafka.Open(kafka.Config{Seeds: strings.Split(o.Kafka, ","), Logger: log})
	if err != nil {
		return err
	}
	p.closers = append(p.closers, kc.Close)
	if err := kc.EnsureTopics(ctx, kafka.DefaultTopics()); err != nil {
		return fmt.Errorf("kafka topics: %w", err)
	}
	reqLog := kafka.NewRequestLog(kc, kafka.RequestLogConfig{
		SessionTimeout: o.KafkaSession, HeartbeatInterval: max(o.KafkaSession/10, 100*time.Millisecond)})
	p.RequestLog = reqLog
	p.Publisher = kafka.NewPublisher(kc)
	st := queuestate.New(cache, journal, reqLog, p.Leases, log)
	st.Settle = sale.DefaultAdmitDeadline + time.Second
	if err := st.Ready(ctx); err != nil {
		// Redis or Kafka down at start: the watcher rebuilds once they
		// are back; queued sales answer 503 meanwhile.
		log.Warn("the flash-sale queue's state is not ready", "err", err)
	}
	p.Queue, p.AdmitDeadline = st, sale.DefaultAdmitDeadline
	p.run = append(p.run, func(ctx context.Context) { st.Watch(ctx, time.Second) })
	return nil
}

func describe(o Options, p *Parts) string {
	store, holds, queue := "SQLite", "in-process holds", "embedded queue (SQLite)"
	if o.Postgres != "" {
		store = "PostgreSQL"
		if sh, ok := p.Store.(*postgres.Sharded); ok {
			store = fmt.Sprintf("PostgreSQL (%d shards by event)", len(sh.Shards()))
		}
	}
	if o.Redis != "" {
		holds = "Redis holds"
	}
	switch {
	case o.Kafka != "":
		queue = "Kafka log + Redis queue state"
	case p.Queue == nil:
		queue = "no queue (queued sales answer 503: give --kafka)"
	}
	return store + ", " + holds + ", " + queue
}
