package main

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

// parts are the adapters chosen by the configuration: the embedded ones
// when no server address is given, the production ones otherwise.
type parts struct {
	store  boxoffice.Store
	holds  boxoffice.Holds
	leases boxoffice.Leases
	// shared is the seat map's cache across nodes (Redis); nil embedded.
	shared seatmap.Shared
	// The flash-sale queue: the embedded database's, or Redis + Kafka; nil
	// when the shape has none (PostgreSQL without Kafka).
	queue    boxoffice.QueueState
	reqLog   boxoffice.RequestLog
	notifier boxoffice.Notifier
	// publisher takes the outbox's booking events: Kafka, or the log.
	publisher outbox.Publisher
	// admitDeadline is sale.Config.AdmitDeadline: set where the queue's
	// state is a cache that a rebuild must find complete (Redis).
	admitDeadline time.Duration
	ids           *snowflake.Generator
	nodeID        int
	// run starts the background work the parts need (sweepers).
	run     func(ctx context.Context, wg *sync.WaitGroup)
	closers []func()
}

func (p *parts) close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}

func openParts(ctx context.Context, c config, log *slog.Logger, nodeIDSet bool) (*parts, error) {
	p := &parts{run: func(context.Context, *sync.WaitGroup) {}}
	var (
		journal queuestate.Journal // PostgreSQL: the queue's outcomes
		cache   *redis.QueueState  // Redis: the queue's state
	)
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	nodeID := c.NodeID
	var idLease *postgres.NodeLease
	if c.Postgres != "" {
		pg, err := postgres.Open(ctx, c.Postgres)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", err)
		}
		p.store = pg
		p.closers = append(p.closers, func() { pg.Close() })
		journal = pg
		// The node id is leased from PostgreSQL and renewed in the
		// background (see postgres.NodeLease): ids stop (503) while the
		// lease cannot be confirmed. An explicit --node-id is a fixed node
		// id instead: keeping it unique across live processes, and keeping
		// a restart of it from going back in time, is then the operator's
		// job.
		if !nodeIDSet {
			lease := pg.NewNodeLease(postgres.NodeLeaseConfig{Log: log})
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
			idLease = lease
			nodeID, _ = lease.Node()
		}
	} else {
		st, err := sqlite.Open(ctx, filepath.Join(c.Data, "boxoffice.db"))
		if err != nil {
			return nil, fmt.Errorf("open the embedded database: %w", err)
		}
		p.store = st
		p.closers = append(p.closers, func() { st.Close() })
	}
	if c.QueueSlots < 1 || c.QueueSlots > 64 {
		return nil, fmt.Errorf("--queue-slots %d: want 1 to 64", c.QueueSlots)
	}
	if c.CacheEvents < 0 {
		return nil, fmt.Errorf("--cache-events %d: want 1 or more", c.CacheEvents)
	}
	if c.Kafka != "" && (c.Redis == "" || c.Postgres == "") {
		return nil, fmt.Errorf("--kafka needs --redis and --postgres: the queue's state lives in Redis, its outcomes in PostgreSQL")
	}
	p.notifier = inmem.NewNotifier()
	p.publisher = outbox.LogPublisher{Log: log}
	if sq, ok := p.store.(*sqlite.Store); ok && c.Kafka == "" {
		q := sq.Queue()
		p.queue, p.reqLog = q, q
	}
	if c.Redis != "" {
		client, err := redis.Dial(c.Redis)
		if err != nil {
			return nil, fmt.Errorf("connect to Redis: %w", err)
		}
		p.closers = append(p.closers, client.Close)
		p.holds = redis.NewHolds(client, "bo:")
		p.leases = redis.NewLeases(client, "bo:")
		p.shared = redis.NewSnapshots(client, "bo:")
		p.notifier = redis.NewNotifier(client, "bo:")
		if c.Kafka != "" {
			q := redis.NewQueueState(client, "bo:")
			q.Slots = c.QueueSlots
			cache = q
			for node, policy := range redis.EvictionPolicy(ctx, client) {
				log.Warn("Redis may evict keys of the flash-sale queue: run it with maxmemory-policy noeviction",
					"node", node, "maxmemory-policy", policy)
			}
		}
	} else {
		holds, leases := inmem.NewHolds(nil), inmem.NewLeases(nil)
		p.holds, p.leases = holds, leases
		// In-process holds die with the process: give the live ones back
		// from the database before serving, or a restart would free seats
		// that pending bookings still hold.
		if sq, ok := p.store.(*sqlite.Store); ok {
			live, err := sq.LiveHolds(ctx, time.Now())
			if err != nil {
				return nil, fmt.Errorf("restore holds: %w", err)
			}
			for _, h := range live {
				holds.Restore(h)
			}
			if len(live) > 0 {
				log.Info("holds restored from the database", "bookings", len(live))
			}
		}
		p.run = func(ctx context.Context, wg *sync.WaitGroup) {
			wg.Go(func() { holds.Run(ctx, time.Second, nil) })
			wg.Go(func() { leases.Run(ctx, 10*time.Second) })
		}
	}
	if c.Kafka != "" {
		kc, err := kafka.Open(kafka.Config{Seeds: strings.Split(c.Kafka, ","), Logger: log})
		if err != nil {
			return nil, err
		}
		p.closers = append(p.closers, kc.Close)
		if err := kc.EnsureTopics(ctx, kafka.DefaultTopics()); err != nil {
			return nil, fmt.Errorf("kafka topics: %w", err)
		}
		reqLog := kafka.NewRequestLog(kc, kafka.RequestLogConfig{
			SessionTimeout: c.KafkaSession, HeartbeatInterval: max(c.KafkaSession/10, 100*time.Millisecond)})
		p.reqLog = reqLog
		p.publisher = kafka.NewPublisher(kc)
		// The queue's state is a cache in Redis, rebuilt from the log and
		// the outcome journal whenever Redis loses it; every process
		// watches for that.
		st := queuestate.New(cache, journal, reqLog, p.leases, log)
		st.Settle = sale.DefaultAdmitDeadline + time.Second
		if err := st.Ready(ctx); err != nil {
			// Redis or Kafka down at start: the watcher rebuilds once they
			// are back; queued sales answer 503 meanwhile.
			log.Warn("the flash-sale queue's state is not ready", "err", err)
		}
		p.queue, p.admitDeadline = st, sale.DefaultAdmitDeadline
		run := p.run
		p.run = func(ctx context.Context, wg *sync.WaitGroup) {
			run(ctx, wg)
			wg.Go(func() { st.Watch(ctx, time.Second) })
		}
	}
	var ids *snowflake.Generator
	if idLease != nil {
		ids = snowflake.NewLeased(idLease, nil)
	} else {
		var err error
		if ids, err = snowflake.New(nodeID, nil); err != nil {
			return nil, err
		}
	}
	p.ids, p.nodeID = ids, nodeID
	queue := "embedded"
	switch {
	case c.Kafka != "":
		queue = "kafka+redis"
	case p.queue == nil:
		queue = "none (queued sales answer 503: give --kafka)"
	}
	log.Info("parts", "store", kind(c.Postgres, "postgres", "sqlite"), "holds", kind(c.Redis, "redis", "in-process"),
		"queue", queue, "node_id", nodeID)
	ok = true
	return p, nil
}

func kind(addr, prod, embedded string) string {
	if addr != "" {
		return prod
	}
	return embedded
}
