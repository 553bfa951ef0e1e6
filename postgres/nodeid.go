package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/snowflake"
)

// DefaultNodeLeaseTTL is how long a node id lease lasts past each renewal.
const DefaultNodeLeaseTTL = 10 * time.Second

// NodeLeaseConfig configures a NodeLease. The zero value takes the defaults.
type NodeLeaseConfig struct {
	// TTL: each acquisition or renewal keeps the lease until the
	// database's now() + TTL (default DefaultNodeLeaseTTL). Run renews
	// every TTL/3; each renewal also reserves TTL worth of milliseconds
	// ahead of the clock.
	TTL time.Duration
	// Margin is cut off the process's own view of the lease (default
	// TTL/5): it hands out ids until TTL - Margin after the successful
	// statement was sent. It absorbs clock rate differences and the time
	// between checking the lease and using an id.
	Margin time.Duration
	// Wall is the wall clock whose milliseconds go into ids (default
	// time.Now). It decides only what is reserved, never how long the
	// lease is valid.
	Wall func() time.Time
	// Mono is a monotonic clock: any origin, never steps (default: Go's
	// monotonic clock). Validity is measured on it.
	Mono func() time.Duration
	// Log gets acquisitions, lost leases and failing renewals (nil: none).
	Log *slog.Logger
	// MaxNode is the largest node id the lease may take (0: any,
	// snowflake.MaxNode). A sharded deployment leases from the first
	// ShardNodes only, and maps them onto each shard's block (Sharded).
	MaxNode int
}

// NodeLease leases a Snowflake node id from the node_leases table
// (migration 0004) and is the snowflake.Lease of a leased generator
// (snowflake.NewLeased). It replaces session advisory locks, which a
// PostgreSQL restart drops without the holder noticing.
//
// Exclusion in time: a lease row is live until expires_at, set by the
// database's clock to now() + TTL at each acquisition and renewal, and
// only a row whose expires_at < now() can be taken (one statement, the
// row locked, SKIP LOCKED so takers do not queue). The process measures
// its side on the monotonic clock: a statement sent at t0 that succeeds
// lets it hand out ids until t0 + TTL - Margin. The database's now() for
// that statement is later than t0, so another process can take the row
// only after t0 + TTL (as long as the database's clock does not jump ahead
// by more than Margin): the two never overlap. A process paused
// past its lease (SIGSTOP), cut off from the database, or whose renewal
// finds another holder, refuses ids (EUNAVAILABLE) until Run has renewed
// or taken a node id again. The rows are a table, so a database restart
// keeps them; the pool reconnects and renewals go on.
//
// Uniqueness of ids does not rest on clocks at all: reserved_ms, per node
// id, is the highest millisecond its holders may use, and it never goes
// down. A renewal raises it (GREATEST) to the generator's clock or latest
// millisecond, whichever is later, plus TTL, and only when the row still
// names this holder; only then does the generator's ceiling rise. A new
// holder reads reserved_ms under the row lock when it takes the row, and
// its generator starts strictly above it (snowflake.Grant.Floor). So the
// milliseconds of successive holders of one node id never overlap, even if
// an old holder, paused or partitioned, still issued ids (it cannot pass
// its last ceiling), and even if a restarted process's wall clock stepped
// back. See the package comment of snowflake.
//
// A lease is safe for concurrent use; its statements run one at a time.
type NodeLease struct {
	pool   *pgxpool.Pool
	ttl    time.Duration
	margin time.Duration
	wall   func() time.Time
	mono   func() time.Duration
	log    *slog.Logger
	max    int // the largest node id to take

	kick    chan struct{} // asks Run for a renewal now
	reached atomic.Int64  // the generator's latest millisecond
	ceiling atomic.Int64  // mirror of grant.Ceiling for Reached

	op sync.Mutex // one statement at a time

	mu         sync.Mutex
	held       bool
	holder     string // the random token of this acquisition
	grant      snowflake.Grant
	validUntil time.Duration // on mono
}

var _ snowflake.Lease = (*NodeLease)(nil)

// errLeaseLost marks a renewal that found the row taken by someone else
// (or released).
var errLeaseLost = errors.New("node id lease lost")

// NewNodeLease returns a lease on the store's database holding no node id
// yet: call Acquire, then Run in the background, and Release at the end.
func (s *Store) NewNodeLease(cfg NodeLeaseConfig) *NodeLease {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultNodeLeaseTTL
	}
	if cfg.Margin <= 0 || cfg.Margin >= cfg.TTL {
		cfg.Margin = cfg.TTL / 5
	}
	if cfg.Wall == nil {
		cfg.Wall = time.Now
	}
	if cfg.Mono == nil {
		start := time.Now()
		cfg.Mono = func() time.Duration { return time.Since(start) } // monotonic
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxNode <= 0 || cfg.MaxNode > snowflake.MaxNode {
		cfg.MaxNode = snowflake.MaxNode
	}
	return &NodeLease{pool: s.pool, ttl: cfg.TTL, margin: cfg.Margin, wall: cfg.Wall, mono: cfg.Mono,
		log: cfg.Log, max: cfg.MaxNode, kick: make(chan struct{}, 1)}
}

// acquireSQL takes the lowest node id (up to $5) whose lease ran out by the
// database's clock, with a fresh holder token, and reserves milliseconds
// for it: it returns the node id, the floor (reserved_ms as the previous
// holders left it, read under the row lock) and the new ceiling.
const acquireSQL = `
	WITH free AS (
	    SELECT node_id, reserved_ms FROM node_leases
	    WHERE (expires_at IS NULL OR expires_at < now()) AND node_id <= $5
	    ORDER BY node_id
	    LIMIT 1
	    FOR UPDATE SKIP LOCKED
	)
	UPDATE node_leases n
	SET holder = $1, expires_at = now() + $2::bigint * interval '1 millisecond',
	    reserved_ms = GREATEST(free.reserved_ms, $3::bigint) + $4::bigint
	FROM free
	WHERE n.node_id = free.node_id AND n.reserved_ms = free.reserved_ms
	RETURNING n.node_id, free.reserved_ms, n.reserved_ms`

// renewSQL extends the lease and raises the reservation, only for the
// holder of record: no row means the lease is lost.
const renewSQL = `
	UPDATE node_leases
	SET expires_at = now() + $3::bigint * interval '1 millisecond',
	    reserved_ms = GREATEST(reserved_ms, $4::bigint)
	WHERE node_id = $1 AND holder = $2
	RETURNING reserved_ms`

const releaseSQL = `
	UPDATE node_leases SET holder = NULL, expires_at = NULL
	WHERE node_id = $1 AND holder = $2`

// leaseError translates a failed lease statement; one cut short by its
// context (a renewal that took too long) is an outage too.
func leaseError(err error) error {
	err = translate(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return boxoffice.Unavailable("database", err)
	}
	return err
}

// want is the millisecond the next reservation must cover: the wall
// clock's or the generator's latest, whichever is later.
func (l *NodeLease) want() int64 {
	return max(snowflake.Millis(l.wall()), l.reached.Load())
}

// Acquire takes a free node id, unless the lease holds one already.
// EUNAVAILABLE if the database cannot be reached; ECONFLICT if every node
// id is taken.
func (l *NodeLease) Acquire(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held {
		return nil
	}
	token := rand.Text()
	t0 := l.mono()
	var node int32
	var floor, ceiling int64
	err := l.pool.QueryRow(ctx, acquireSQL, token, l.ttl.Milliseconds(), l.want(), l.ttl.Milliseconds(), l.max).
		Scan(&node, &floor, &ceiling)
	if errors.Is(err, pgx.ErrNoRows) {
		return boxoffice.Errorf(boxoffice.ECONFLICT, "all %d Snowflake node ids are leased", l.max+1)
	}
	if err != nil {
		return leaseError(err)
	}
	l.mu.Lock()
	l.held, l.holder = true, token
	l.grant = snowflake.Grant{Node: int(node), Term: l.grant.Term + 1, Floor: floor, Ceiling: ceiling}
	l.validUntil = t0 + l.ttl - l.margin
	l.ceiling.Store(ceiling)
	l.mu.Unlock()
	l.log.Info("Snowflake node id leased", "node_id", node, "after_ms", floor, "reserved_ms", ceiling)
	return nil
}

// Renew extends the lease and reserves milliseconds ahead. An error with
// code EUNAVAILABLE either way: the lease is lost (another process holds
// the node id now, or it was released; the lease then holds nothing and
// Acquire takes a new one), or the database did not answer (the lease is
// kept, and runs out by itself unless a later renewal succeeds).
func (l *NodeLease) Renew(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	held, node, token, term := l.held, l.grant.Node, l.holder, l.grant.Term
	l.mu.Unlock()
	if !held {
		return &boxoffice.Error{Code: boxoffice.EUNAVAILABLE, Message: "this process holds no Snowflake node id", Err: errLeaseLost}
	}
	t0 := l.mono()
	var reserved int64
	err := l.pool.QueryRow(ctx, renewSQL, node, token, l.ttl.Milliseconds(), l.want()+l.ttl.Milliseconds()).Scan(&reserved)
	if errors.Is(err, pgx.ErrNoRows) {
		l.mu.Lock()
		if l.held && l.grant.Term == term {
			l.held = false
		}
		l.mu.Unlock()
		l.log.Warn("Snowflake node id lease lost: another process holds it now; ids paused until a new one is leased", "node_id", node)
		return &boxoffice.Error{Code: boxoffice.EUNAVAILABLE, Message: "the Snowflake node id lease was lost", Err: errLeaseLost}
	}
	if err != nil {
		return leaseError(err)
	}
	l.mu.Lock()
	if l.held && l.grant.Term == term {
		l.validUntil = max(l.validUntil, t0+l.ttl-l.margin)
		l.grant.Ceiling = max(l.grant.Ceiling, reserved)
		l.ceiling.Store(l.grant.Ceiling)
	}
	l.mu.Unlock()
	return nil
}

// Release gives the node id back at once (instead of letting it run out),
// if this lease still holds it. Ids stop first. Call it on clean shutdown,
// after Run has returned.
func (l *NodeLease) Release(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	l.mu.Lock()
	held, node, token := l.held, l.grant.Node, l.holder
	l.held = false
	l.mu.Unlock()
	if !held {
		return nil
	}
	if _, err := l.pool.Exec(ctx, releaseSQL, node, token); err != nil {
		return leaseError(err)
	}
	return nil
}

// Run keeps the lease: it renews every TTL/3 (sooner when the generator
// needs milliseconds past its ceiling), and when the lease is lost or was
// never taken it acquires a node id, retrying failures with backoff. It
// returns when ctx is done.
func (l *NodeLease) Run(ctx context.Context) {
	const minBackoff = 10 * time.Millisecond
	backoff := max(l.ttl/50, minBackoff)
	for {
		l.mu.Lock()
		held := l.held
		l.mu.Unlock()
		octx, cancel := context.WithTimeout(ctx, l.ttl/3)
		var err error
		if held {
			err = l.Renew(octx)
		} else {
			err = l.Acquire(octx)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		wait := l.ttl / 3
		var kick <-chan struct{}
		switch {
		case err == nil:
			backoff = max(l.ttl/50, minBackoff)
			kick = l.kick
		case errors.Is(err, errLeaseLost):
			wait = 0 // take another node id at once
		default:
			l.log.Warn("Snowflake node id lease: renewal failed", "held", held, "err", err)
			wait = min(backoff, l.ttl/3)
			backoff = min(2*backoff, l.ttl/3)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-kick:
		}
		timer.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// Grant implements snowflake.Lease: the current grant while the lease is
// held and, by the monotonic clock, still valid; EUNAVAILABLE otherwise.
func (l *NodeLease) Grant() (snowflake.Grant, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return snowflake.Grant{}, boxoffice.Errorf(boxoffice.EUNAVAILABLE, "this process holds no Snowflake node id at the moment")
	}
	if l.mono() >= l.validUntil {
		return snowflake.Grant{}, boxoffice.Errorf(boxoffice.EUNAVAILABLE, "the Snowflake node id lease is overdue for renewal")
	}
	return l.grant, nil
}

// Reached implements snowflake.Lease.
func (l *NodeLease) Reached(ms int64) {
	for {
		cur := l.reached.Load()
		if ms <= cur || l.reached.CompareAndSwap(cur, ms) {
			break
		}
	}
	if ms > l.ceiling.Load() {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

// Node returns the node id the lease holds, and whether it holds one
// (valid or not).
func (l *NodeLease) Node() (node int, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grant.Node, l.held
}
