package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/inmem"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/redis"
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
	ids    *snowflake.Generator
	nodeID int
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
	ok := false
	defer func() {
		if !ok {
			p.close()
		}
	}()
	nodeID := c.NodeID
	if c.Postgres != "" {
		pg, err := postgres.Open(ctx, c.Postgres)
		if err != nil {
			return nil, fmt.Errorf("open PostgreSQL: %w", err)
		}
		p.store = pg
		p.closers = append(p.closers, func() { pg.Close() })
		if !nodeIDSet {
			id, release, err := pg.LeaseNodeID(ctx, snowflake.MaxNode)
			if err != nil {
				return nil, err
			}
			nodeID = id
			p.closers = append(p.closers, release)
		}
	} else {
		st, err := sqlite.Open(ctx, filepath.Join(c.Data, "boxoffice.db"))
		if err != nil {
			return nil, fmt.Errorf("open the embedded database: %w", err)
		}
		p.store = st
		p.closers = append(p.closers, func() { st.Close() })
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
	} else {
		holds, leases := inmem.NewHolds(nil), inmem.NewLeases(nil)
		p.holds, p.leases = holds, leases
		p.run = func(ctx context.Context, wg *sync.WaitGroup) {
			wg.Go(func() { holds.Run(ctx, time.Second, nil) })
			wg.Go(func() { leases.Run(ctx, 10*time.Second) })
		}
	}
	ids, err := snowflake.New(nodeID, nil)
	if err != nil {
		return nil, err
	}
	p.ids, p.nodeID = ids, nodeID
	log.Info("parts", "store", kind(c.Postgres, "postgres", "sqlite"), "holds", kind(c.Redis, "redis", "in-process"), "node_id", nodeID)
	ok = true
	return p, nil
}

func kind(addr, prod, embedded string) string {
	if addr != "" {
		return prod
	}
	return embedded
}
