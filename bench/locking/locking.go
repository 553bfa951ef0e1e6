package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/redis"
)

// Config is one run: every strategy and every ceiling is measured for each
// number of clients, each strategy at both contention levels.
type Config struct {
	Postgres string        // PostgreSQL URL
	Redis    string        // Redis URL (redis.Dial syntax)
	Duration time.Duration // per cell
	Clients  []int         // concurrent callers, one cell each
	Seats    int           // low contention: a random seat among this many
	Hot      int           // flash-sale contention: a random seat among this many hot ones
	// Progress, if not nil, gets one line per cell as it finishes.
	Progress io.Writer
}

// holdTTL is the hold of every Redis strategy: SET ... PX 600000.
const holdTTL = 10 * time.Minute

// Seats are numbered 0, 1, 2, ... Supply beyond the window is sized from
// these rates (per second of a cell), well above what this machine does,
// so that a cell never runs out of fresh seats; if one does, its row says so.
const (
	pgSupplyRate    = 15_000
	redisSupplyRate = 200_000
)

// outcome is how one attempt on one seat ended.
type outcome int

const (
	granted outcome = iota // the caller was told the seat is theirs
	taken                  // the caller saw the seat held and gave up
	lost                   // the caller saw it free but lost the race (CAS: 0 rows updated)
)

// attemptFunc makes one attempt to hold seat for owner. It returns the
// outcome and the round trips it cost.
type attemptFunc func(ctx context.Context, seat int, owner int64) (outcome, int, error)

// strategy is one way to hold a seat.
type strategy struct {
	name  string // in the table
	short string // in the chart
	store string // "postgres" or "redis"
	safe  bool   // must never oversell
	// prepare gives the cell a fresh store: supply free seats, numbered from 0.
	prepare func(ctx context.Context, supply int) error
	attempt attemptFunc
	// held counts the seats the store shows held after the cell, read from
	// the store itself (rows with status 'held'; seat keys that existed when
	// deleted, for every seat number the cell used), and cleans up.
	held func(ctx context.Context, used int) (int64, error)
}

// contention is where callers pick their seat: a random one of window
// seats. A seat that is granted is replaced in the window by a fresh one,
// so the window stays that size all along: low contention is 70,000 seats
// almost never asked for twice, flash-sale contention is everybody on the
// same 10 seats, each sold the moment it appears.
type contention struct {
	name   string // "low" or "hot"
	window int
}

func (c contention) label() string {
	return fmt.Sprintf("%s (1 of %s)", c.name, commas(int64(c.window)))
}

// Cell is one strategy at one contention level and one number of clients.
type Cell struct {
	Strategy, Short, Store string
	Safe                   bool
	Contention             string // "low" or "hot"
	Window                 int
	Clients                int
	Elapsed                time.Duration

	Attempts   int64
	Holds      int64 // attempts told "the seat is yours"
	Taken      int64 // attempts that found the seat held
	Lost       int64 // attempts that found it free and lost the race (CAS)
	Errors     int64
	FirstError string
	RoundTrips int64

	// Counted by the harness from what each caller was told, not from the
	// strategy's own bookkeeping.
	Seats       int   // distinct seats granted
	Oversold    int   // seats granted to more than one caller
	ExtraGrants int64 // grants beyond the first on those seats
	// StoreHeld is what the store shows held afterwards, counted in the
	// store (rows, keys); it should equal Seats.
	StoreHeld int64
	Used      int  // seat numbers 0 .. Used-1 were in the window at some point
	Exhausted bool // the supply of fresh seats ran out

	P50, P99 time.Duration

	CeilingName string  // the ceiling the ratios are against
	CeilingRate float64 // its ops/s at the same number of clients
}

func (c Cell) secs() float64 { return c.Elapsed.Seconds() }

// AttemptRate is attempts per second.
func (c Cell) AttemptRate() float64 { return float64(c.Attempts) / c.secs() }

// HoldRate is successful holds per second.
func (c Cell) HoldRate() float64 { return float64(c.Holds) / c.secs() }

// Ceiling is a trivial operation on the same pool or client, the machine's
// upper bound for the strategies on that store. It is measured twice for
// each number of clients, before and after that block of cells (half the
// cell duration each), because the machine is shared: the higher of the
// two is the ceiling.
type Ceiling struct {
	Name          string
	Store         string
	Clients       int
	Before, After Pass
}

// Pass is one measurement of a ceiling.
type Pass struct {
	Ops      int64
	Elapsed  time.Duration
	P50, P99 time.Duration
}

// Rate is operations per second.
func (p Pass) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Ops) / p.Elapsed.Seconds()
}

// Best is the pass with the higher rate.
func (c Ceiling) Best() Pass {
	if c.After.Rate() > c.Before.Rate() {
		return c.After
	}
	return c.Before
}

// Rate is the ceiling: the higher of the two passes.
func (c Ceiling) Rate() float64 { return c.Best().Rate() }

// Report is the outcome of Run.
type Report struct {
	Start    time.Time
	Config   Config
	Env      string // server versions, Go, GOMAXPROCS
	Schema   string // the PostgreSQL schema used (dropped)
	Prefix   string // the Redis key prefix used (deleted)
	Ceilings []Ceiling
	Cells    []Cell
}

// Ceiling names.
const (
	ceilSelect1 = "PostgreSQL `SELECT 1` (one statement, implicit transaction)"
	ceilUpdate  = "PostgreSQL single-row `UPDATE`, autocommit (one flush per commit, grouped)"
	ceilSetNX   = "Redis `SET k v NX PX 600000` on fresh keys (raw, same client)"
)

type bench struct {
	pool   *pgxpool.Pool
	rdb    rueidis.Client
	schema string
	table  string // schema.seats
	prefix string // run's Redis key prefix
	cells  int    // cell prefixes handed out
}

// Run measures every strategy and ceiling of cfg and cleans up after
// itself (the schema is dropped and the keys deleted, also when it fails).
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if cfg.Duration <= 0 || len(cfg.Clients) == 0 || cfg.Seats < 1 || cfg.Hot < 1 {
		return nil, errors.New("locking: duration, clients, seats and hot must be positive")
	}
	for _, c := range cfg.Clients {
		if c < 1 {
			return nil, fmt.Errorf("locking: %d clients", c)
		}
	}
	progress := cfg.Progress
	if progress == nil {
		progress = io.Discard
	}
	suffix := randomHex(6)
	b := &bench{schema: "bo_locking_" + suffix, prefix: "boxoffice-locking:" + suffix + ":"}
	b.table = b.schema + ".seats"
	rep = &Report{Start: time.Now(), Config: cfg, Schema: b.schema, Prefix: b.prefix}

	pcfg, err := pgxpool.ParseConfig(cfg.Postgres)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pcfg.MaxConns = int32(slices.Max(cfg.Clients))
	pcfg.MinConns = 0
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if b.pool, err = pgxpool.NewWithConfig(cctx, pcfg); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	defer b.pool.Close()
	var pgVersion string
	if err := b.pool.QueryRow(cctx, `SHOW server_version`).Scan(&pgVersion); err != nil {
		return nil, fmt.Errorf("postgres at %s: %w", cfg.Postgres, err)
	}
	if b.rdb, err = redis.Dial(cfg.Redis); err != nil {
		return nil, fmt.Errorf("redis at %s: %w", cfg.Redis, err)
	}
	defer b.rdb.Close()
	info, err := b.rdb.Do(cctx, b.rdb.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("redis at %s: %w", cfg.Redis, err)
	}
	rep.Env = fmt.Sprintf("PostgreSQL %s, Redis %s, %s %s/%s, GOMAXPROCS %d, %d CPUs",
		strings.Fields(pgVersion)[0], infoField(info, "redis_version"),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU())

	if _, err := b.pool.Exec(cctx, fmt.Sprintf(`CREATE SCHEMA %s; CREATE TABLE %s (
		seat_id integer PRIMARY KEY,
		status  text    NOT NULL,
		holder  bigint,
		version integer NOT NULL DEFAULT 0)`, b.schema, b.table)); err != nil {
		return nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	defer func() {
		// Clean up even if ctx was cancelled (an interrupt).
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, derr := b.pool.Exec(dctx, `DROP SCHEMA IF EXISTS `+b.schema+` CASCADE`); derr != nil && err == nil {
			err = fmt.Errorf("postgres: drop schema %s: %w", b.schema, derr)
		}
		if derr := b.sweep(dctx, b.prefix); derr != nil && err == nil {
			err = fmt.Errorf("redis: delete keys %s*: %w", b.prefix, derr)
		}
	}()
	if err := b.warm(cctx, int(pcfg.MaxConns)); err != nil {
		return nil, err
	}

	strategies := b.strategies()
	levels := []contention{{"low", cfg.Seats}, {"hot", cfg.Hot}}
	ceilings := b.ceilings(cfg.Duration)
	ceilingPass := func(clients int, pass string, into []Ceiling) error {
		for i, c := range ceilings {
			p, err := c.run(ctx, clients, cfg.Duration/2)
			if err != nil {
				return fmt.Errorf("ceiling %s: %w", c.name, err)
			}
			into[i].Name, into[i].Store, into[i].Clients = c.name, c.store, clients
			if pass == "before" {
				into[i].Before = p
			} else {
				into[i].After = p
			}
			fmt.Fprintf(progress, "ceiling %-6s %4d clients  %9.0f ops/s  %s\n", pass, clients, p.Rate(), c.name)
		}
		return nil
	}
	for _, clients := range cfg.Clients {
		ceils := make([]Ceiling, len(ceilings))
		if err := ceilingPass(clients, "before", ceils); err != nil {
			return nil, err
		}
		first := len(rep.Cells)
		for _, lv := range levels {
			for _, s := range strategies {
				t0 := time.Now()
				cell, err := b.runCell(ctx, s, lv, clients, cfg.Duration)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, %d clients: %w", s.name, lv.name, clients, err)
				}
				rep.Cells = append(rep.Cells, cell)
				fmt.Fprintf(progress, "%-13s %-3s %4d clients  %9.0f attempts/s %9.0f holds/s  oversold %d  errors %d  (setup and check %.1fs)\n",
					s.short, lv.name, clients, cell.AttemptRate(), cell.HoldRate(), cell.Oversold, cell.Errors,
					(time.Since(t0) - cell.Elapsed).Seconds())
			}
		}
		if err := ceilingPass(clients, "after", ceils); err != nil {
			return nil, err
		}
		rep.Ceilings = append(rep.Ceilings, ceils...)
		for i := first; i < len(rep.Cells); i++ {
			c := &rep.Cells[i]
			c.CeilingName = map[string]string{"postgres": ceilSelect1, "redis": ceilSetNX}[c.Store]
			for _, ceil := range ceils {
				if ceil.Name == c.CeilingName {
					c.CeilingRate = ceil.Rate()
				}
			}
		}
	}
	return rep, nil
}

// warm opens n connections at once, so no cell pays for dialing.
func (b *bench) warm(ctx context.Context, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := b.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("postgres: open %d connections: %w", n, err)
		}
		conns = append(conns, c)
	}
	return nil
}

// cellPrefix is a fresh Redis key prefix for one cell.
func (b *bench) cellPrefix() string {
	b.cells++
	return b.prefix + "c" + strconv.Itoa(b.cells) + ":"
}

// resetTable empties the seats table and fills it with supply free seats.
func (b *bench) resetTable(ctx context.Context, supply int) error {
	_, err := b.pool.Exec(ctx, fmt.Sprintf(
		`TRUNCATE %[1]s; INSERT INTO %[1]s (seat_id, status) SELECT g, 'free' FROM generate_series(0, %[2]d) g; ANALYZE %[1]s`,
		b.table, supply-1))
	return err
}

func (b *bench) countHeldRows(ctx context.Context, _ int) (int64, error) {
	var n int64
	err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+b.table+` WHERE status = 'held'`).Scan(&n)
	return n, err
}

// unlink deletes the keys key(0) .. key(n-1) and returns how many existed.
// One UNLINK per key, pipelined, so that it works on a cluster too.
func (b *bench) unlink(ctx context.Context, n int, key func(i int) string) (int64, error) {
	const batch = 10_000
	var existed int64
	cmds := make(rueidis.Commands, 0, batch)
	for lo := 0; lo < n; lo += batch {
		cmds = cmds[:0]
		for i := lo; i < min(n, lo+batch); i++ {
			cmds = append(cmds, b.rdb.B().Unlink().Key(key(i)).Build())
		}
		for _, r := range b.rdb.DoMulti(ctx, cmds...) {
			v, err := r.AsInt64()
			if err != nil {
				return existed, err
			}
			existed += v
		}
	}
	return existed, nil
}

// sweep deletes every key under prefix, on every node: the run's last
// clean-up, for whatever the cells left (an interrupted run). SCAN walks the
// whole keyspace, so it runs once.
func (b *bench) sweep(ctx context.Context, prefix string) error {
	for _, node := range b.rdb.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(10_000).Build()).AsScanEntry()
			if err != nil {
				return err
			}
			cmds := make(rueidis.Commands, 0, len(e.Elements))
			for _, k := range e.Elements {
				cmds = append(cmds, b.rdb.B().Unlink().Key(k).Build())
			}
			for _, r := range b.rdb.DoMulti(ctx, cmds...) {
				if err := r.Error(); err != nil {
					return err
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// sectionSize is the seats per section, as the 70,000-seat event of the
// other benchmarks (35 sections of 2,000).
const sectionSize = 2000

func section(i int) string { return "S" + strconv.Itoa(i) }

// seatID is seat n as a boxoffice seat id: sections of 2,000 seats in rows
// of 50.
func seatID(n int) string {
	return boxoffice.SeatID(section(n/sectionSize), boxoffice.RowLabel(n%sectionSize/50+1), n%50+1)
}

// strategies are the four ways to hold a seat, the fourth twice: through
// boxoffice's own redis.Holds and as a raw SET NX PX.
func (b *bench) strategies() []*strategy {
	t := b.table
	var (
		selStatus  = `SELECT status FROM ` + t + ` WHERE seat_id = $1`
		selVersion = `SELECT status, version FROM ` + t + ` WHERE seat_id = $1`
		selLocked  = `SELECT status FROM ` + t + ` WHERE seat_id = $1 FOR UPDATE`
		updHold    = `UPDATE ` + t + ` SET status = 'held', holder = $1 WHERE seat_id = $2`
		updCAS     = `UPDATE ` + t + ` SET status = 'held', holder = $1, version = version + 1 WHERE seat_id = $2 AND version = $3 AND status = 'free'`
	)
	pgPrepare := func(ctx context.Context, supply int) error { return b.resetTable(ctx, supply) }

	naive := &strategy{
		name: "naive check-then-reserve (PostgreSQL)", short: "naive", store: "postgres",
		prepare: pgPrepare, held: b.countHeldRows,
		attempt: func(ctx context.Context, seat int, owner int64) (outcome, int, error) {
			var status string
			if err := b.pool.QueryRow(ctx, selStatus, seat).Scan(&status); err != nil {
				return 0, 1, err
			}
			if status != "free" {
				return taken, 1, nil
			}
			if _, err := b.pool.Exec(ctx, updHold, owner, seat); err != nil {
				return 0, 2, err
			}
			return granted, 2, nil
		},
	}
	cas := &strategy{
		name: "optimistic version CAS (PostgreSQL)", short: "version CAS", store: "postgres", safe: true,
		prepare: pgPrepare, held: b.countHeldRows,
		attempt: func(ctx context.Context, seat int, owner int64) (outcome, int, error) {
			var status string
			var version int32
			if err := b.pool.QueryRow(ctx, selVersion, seat).Scan(&status, &version); err != nil {
				return 0, 1, err
			}
			if status != "free" {
				return taken, 1, nil
			}
			tag, err := b.pool.Exec(ctx, updCAS, owner, seat, version)
			if err != nil {
				return 0, 2, err
			}
			if tag.RowsAffected() == 0 {
				return lost, 2, nil
			}
			return granted, 2, nil
		},
	}
	forUpdate := &strategy{
		name: "pessimistic SELECT … FOR UPDATE (PostgreSQL)", short: "FOR UPDATE", store: "postgres", safe: true,
		prepare: pgPrepare, held: b.countHeldRows,
		attempt: func(ctx context.Context, seat int, owner int64) (outcome, int, error) {
			tx, err := b.pool.Begin(ctx)
			if err != nil {
				return 0, 1, err
			}
			var status string
			if err := tx.QueryRow(ctx, selLocked, seat).Scan(&status); err != nil {
				_ = tx.Rollback(ctx)
				return 0, 3, err
			}
			if status != "free" {
				return taken, 3, tx.Rollback(ctx)
			}
			if _, err := tx.Exec(ctx, updHold, owner, seat); err != nil {
				_ = tx.Rollback(ctx)
				return 0, 4, err
			}
			if err := tx.Commit(ctx); err != nil {
				return 0, 4, err
			}
			return granted, 4, nil
		},
	}

	var holds *redis.Holds
	var holdsPrefix string
	design := &strategy{
		name: "Redis `redis.Holds.Acquire` (boxoffice's Lua SET NX PX + fence, the design)", short: "Holds.Acquire", store: "redis", safe: true,
		prepare: func(context.Context, int) error {
			holdsPrefix = b.cellPrefix()
			holds = redis.NewHolds(b.rdb, holdsPrefix)
			return nil
		},
		attempt: func(ctx context.Context, seat int, owner int64) (outcome, int, error) {
			_, err := holds.Acquire(ctx, boxoffice.HoldRequest{
				EventID: 1, SeatIDs: []string{seatID(seat)}, Owner: boxoffice.ID(owner), TTL: holdTTL,
			})
			switch {
			case err == nil:
				return granted, 1, nil
			case boxoffice.ErrorCode(err) == boxoffice.ESEATTAKEN:
				return taken, 1, nil
			}
			return 0, 1, err
		},
		// The keys of redis.Holds (see its package comment):
		// <prefix>seat:{<event>:<section>}:<seat> and <prefix>fence:{<event>:<section>}.
		held: func(ctx context.Context, used int) (int64, error) {
			n, err := b.unlink(ctx, used, func(i int) string {
				id := seatID(i)
				return holdsPrefix + "seat:{1:" + boxoffice.SectionOf(id) + "}:" + id
			})
			if err != nil {
				return n, err
			}
			_, err = b.unlink(ctx, (used+sectionSize-1)/sectionSize, func(i int) string {
				return holdsPrefix + "fence:{1:" + section(i) + "}"
			})
			return n, err
		},
	}

	var rawPrefix string
	ttl := holdTTL.Milliseconds()
	raw := &strategy{
		name: "Redis raw `SET seat owner NX PX 600000`", short: "SET NX PX", store: "redis", safe: true,
		prepare: func(context.Context, int) error { rawPrefix = b.cellPrefix(); return nil },
		attempt: func(ctx context.Context, seat int, owner int64) (outcome, int, error) {
			err := b.rdb.Do(ctx, b.rdb.B().Set().Key(rawPrefix+"seat:"+strconv.Itoa(seat)).
				Value(strconv.FormatInt(owner, 10)).Nx().PxMilliseconds(ttl).Build()).Error()
			switch {
			case err == nil:
				return granted, 1, nil
			case rueidis.IsRedisNil(err):
				return taken, 1, nil
			}
			return 0, 1, err
		},
		held: func(ctx context.Context, used int) (int64, error) {
			return b.unlink(ctx, used, func(i int) string { return rawPrefix + "seat:" + strconv.Itoa(i) })
		},
	}
	return []*strategy{naive, cas, forUpdate, design, raw}
}

// runCell measures s at one contention level with clients callers.
func (b *bench) runCell(ctx context.Context, s *strategy, lv contention, clients int, d time.Duration) (Cell, error) {
	rate := pgSupplyRate
	if s.store == "redis" {
		rate = redisSupplyRate
	}
	supply := lv.window + int(float64(rate)*d.Seconds()) + 1000
	if err := s.prepare(ctx, supply); err != nil {
		return Cell{}, fmt.Errorf("prepare: %w", err)
	}
	cell, err := measure(ctx, s.attempt, lv.window, supply, clients, d)
	if err != nil {
		return cell, err
	}
	cell.Strategy, cell.Short, cell.Store, cell.Safe = s.name, s.short, s.store, s.safe
	cell.Contention = lv.name
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if cell.StoreHeld, err = s.held(hctx, cell.Used); err != nil {
		return cell, fmt.Errorf("count held seats: %w", err)
	}
	return cell, nil
}

// measure runs clients callers for d; each picks a random seat of the
// window and calls attempt. A seat granted is replaced in the window by
// the next fresh seat (seats window .. supply-1). Callers that are in an
// attempt when d is up finish it, so every grant the store made is counted.
// Oversold seats are counted from the callers' grants, seat by seat.
func measure(ctx context.Context, attempt attemptFunc, window, supply, clients int, d time.Duration) (Cell, error) {
	// A watchdog: a hung server cannot keep the run from stopping.
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()

	grants := make([]atomic.Int32, supply)
	slots := make([]atomic.Int64, window)
	for i := range slots {
		slots[i].Store(int64(i))
	}
	var next atomic.Int64
	next.Store(int64(window))
	var exhausted atomic.Bool

	type tally struct {
		attempts, holds, taken, lost, errs, rts int64
		firstErr                                error
		lat                                     []time.Duration
	}
	tallies := make([]*tally, clients)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range clients {
		t := &tally{lat: make([]time.Duration, 0, 4096)}
		tallies[w] = t
		wg.Go(func() {
			r := mrand.New(mrand.NewPCG(uint64(w), uint64(start.UnixNano())))
			owner := int64(w+1) << 40 // unique per attempt
			consecutiveErrs := 0
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := r.IntN(window)
				seat := slots[i].Load()
				owner++
				t0 := time.Now()
				out, rts, err := attempt(ctx, int(seat), owner)
				t.lat = append(t.lat, time.Since(t0))
				t.attempts++
				t.rts += int64(rts)
				if err != nil {
					t.errs++
					if t.firstErr == nil {
						t.firstErr = err
					}
					if consecutiveErrs++; consecutiveErrs >= 100 {
						return // the server is gone; the cell reports it
					}
					continue
				}
				consecutiveErrs = 0
				switch out {
				case granted:
					t.holds++
					grants[seat].Add(1)
					if n := next.Add(1) - 1; n < int64(supply) {
						slots[i].CompareAndSwap(seat, n)
					} else {
						exhausted.Store(true)
					}
				case taken:
					t.taken++
				case lost:
					t.lost++
				}
			}
		})
	}
	wg.Wait()
	c := Cell{Window: window, Clients: clients, Elapsed: time.Since(start), Exhausted: exhausted.Load(),
		Used: int(min(next.Load(), int64(supply)))}
	if err := ctx.Err(); err != nil {
		return c, err
	}
	var lat []time.Duration
	for _, t := range tallies {
		c.Attempts += t.attempts
		c.Holds += t.holds
		c.Taken += t.taken
		c.Lost += t.lost
		c.Errors += t.errs
		c.RoundTrips += t.rts
		if t.firstErr != nil && c.FirstError == "" {
			c.FirstError = t.firstErr.Error()
		}
		lat = append(lat, t.lat...)
	}
	c.P50, c.P99 = percentiles(lat)
	for i := range grants {
		switch n := grants[i].Load(); {
		case n == 1:
			c.Seats++
		case n > 1:
			c.Seats++
			c.Oversold++
			c.ExtraGrants += int64(n - 1)
		}
	}
	return c, nil
}

func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	slices.Sort(lat)
	return lat[len(lat)*50/100], lat[min(len(lat)-1, len(lat)*99/100)]
}

// ceiling is a trivial operation, run like a strategy.
type ceiling struct {
	name, store string
	prepare     func(ctx context.Context) error
	op          func(ctx context.Context, i int64) error
	cleanup     func(ctx context.Context, n int64) error // after ops 0 .. n-1
}

func (b *bench) ceilings(d time.Duration) []ceiling {
	updHold := `UPDATE ` + b.table + ` SET status = 'held', holder = $1 WHERE seat_id = $2`
	rows := int64(pgSupplyRate*d.Seconds()) + 1000
	var prefix string
	ttl := holdTTL.Milliseconds()
	return []ceiling{
		{
			name: ceilSelect1, store: "postgres",
			op: func(ctx context.Context, _ int64) error {
				var one int
				return b.pool.QueryRow(ctx, `SELECT 1`).Scan(&one)
			},
		},
		{
			name: ceilUpdate, store: "postgres",
			prepare: func(ctx context.Context) error { return b.resetTable(ctx, int(rows)) },
			op: func(ctx context.Context, i int64) error {
				_, err := b.pool.Exec(ctx, updHold, i+1, i%rows)
				return err
			},
		},
		{
			name: ceilSetNX, store: "redis",
			prepare: func(context.Context) error { prefix = b.cellPrefix(); return nil },
			op: func(ctx context.Context, i int64) error {
				return b.rdb.Do(ctx, b.rdb.B().Set().Key(prefix+strconv.FormatInt(i, 10)).
					Value("o").Nx().PxMilliseconds(ttl).Build()).Error()
			},
			cleanup: func(ctx context.Context, n int64) error {
				_, err := b.unlink(ctx, int(n), func(i int) string { return prefix + strconv.Itoa(i) })
				return err
			},
		},
	}
}

func (c ceiling) run(ctx context.Context, clients int, d time.Duration) (Pass, error) {
	if c.prepare != nil {
		if err := c.prepare(ctx); err != nil {
			return Pass{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	var next atomic.Int64
	lats := make([][]time.Duration, clients)
	errs := make([]int64, clients)
	var firstErr atomic.Pointer[error]
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			lat := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				if err := c.op(ctx, next.Add(1)-1); err != nil {
					errs[w]++
					firstErr.CompareAndSwap(nil, &err)
					if errs[w] >= 100 {
						break
					}
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			lats[w] = lat
		})
	}
	wg.Wait()
	res := Pass{Elapsed: time.Since(start)}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	var all []time.Duration
	for w := range lats {
		all = append(all, lats[w]...)
	}
	res.Ops = int64(len(all))
	res.P50, res.P99 = percentiles(all)
	if p := firstErr.Load(); p != nil {
		return res, *p // a ceiling must not fail
	}
	if c.cleanup != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := c.cleanup(cctx, next.Load()); err != nil {
			return res, err
		}
	}
	return res, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// infoField returns field's value from the text of Redis INFO.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "?"
}
