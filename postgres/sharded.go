package postgres

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/lru"
	"github.com/boxoffice/boxoffice/snowflake"
)

// Sharding by event. A deployment's events are spread over up to
// MaxShards PostgreSQL databases, each a Store of its own holding whole
// events: an event's seats, bookings, tickets, listings, waitlist and
// queue outcomes live on its shard, so every transaction stays on one
// database. The first database is also the directory: it keeps the
// event → shard map (event_shards), the shards the deployment has, and the
// Snowflake node id leases.
//
// Every request finds its shard without asking each database:
//   - by event: the directory's map, read once per event and cached (a
//     placement never moves);
//   - by id alone (a booking, ticket, listing, waitlist entry, queued
//     request): the id's node id. A process leases one node id n below
//     ShardNodes from the directory, and mints the ids of an event's rows
//     with node id shard*ShardNodes + n (ShardedIDs), so the shard is the
//     id's node id / ShardNodes, and ids stay unique across shards.
//
// What spans shards: the per-user lists and the events' listing are
// merged; the sweeps (expiry, captures, refunds, returns, the outbox
// relay, purges) run on every shard; idempotency records are looked up on
// every shard (they are written with the row they answer for, on its
// event's shard).

const (
	// MaxShards is the most shards a deployment can have: the node ids'
	// blocks (snowflake.MaxNode+1 = MaxShards*ShardNodes).
	MaxShards = 16
	// ShardNodes is how many node ids each shard's block has, and so how
	// many processes a sharded deployment can run at once.
	ShardNodes = (snowflake.MaxNode + 1) / MaxShards
	// DefaultHotSeats is ShardedConfig.HotSeats's default.
	DefaultHotSeats = 20000
	// DefaultPlacementCache is ShardedConfig.PlacementCache's default.
	DefaultPlacementCache = 200_000
)

// ShardedConfig configures a Sharded store. The zero value takes the
// defaults.
type ShardedConfig struct {
	// HotSeats: an event of at least this many seats is hot, as is every
	// queued (flash) sale. The placement gives a hot event a shard with no
	// other upcoming hot event when there is one, and keeps other events
	// off such shards while others have room.
	HotSeats int
	// PlacementCache bounds the event → shard entries kept in memory.
	PlacementCache int
	// Now is the clock of the placement's "upcoming" (default time.Now).
	Now func() time.Time
}

// Sharded is a boxoffice.Store (and the queue's journal) over several
// Stores, one per shard. Create it with OpenSharded or NewSharded.
type Sharded struct {
	shards     []*Store // by shard number; shards[0] is the directory
	deployment string
	cfg        ShardedConfig
	placed     *lru.Cache[boxoffice.ID, int]
}

var _ boxoffice.Store = (*Sharded)(nil)

// OpenSharded opens the databases at urls, the directory first (shard 0),
// the others in shard order, and joins them into one deployment (see
// NewSharded). Each is migrated as Open does.
func OpenSharded(ctx context.Context, urls []string, cfg ShardedConfig) (_ *Sharded, err error) {
	stores := make([]*Store, 0, len(urls))
	defer func() {
		if err != nil {
			for _, st := range stores {
				st.Close()
			}
		}
	}()
	for i, u := range urls {
		st, err := Open(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		stores = append(stores, st)
	}
	return NewSharded(ctx, stores, cfg)
}

// Errors of joining databases into a deployment: a configuration that
// would lose events or mix deployments is refused, never repaired.
var (
	errShardMismatch = errors.New("shard identity mismatch")
)

// NewSharded joins stores into one sharded deployment: stores[0] is the
// directory, stores[i] shard i. A database joins once, recording its shard
// number and the deployment's token (shard_identity); after that it must
// be given in the same place, with the same directory, and the directory
// must be given every shard it knows. A database joins empty (no events),
// except the directory, which may be an existing single database whose
// ids all name node ids below ShardNodes. Close closes the stores.
func NewSharded(ctx context.Context, stores []*Store, cfg ShardedConfig) (*Sharded, error) {
	if len(stores) == 0 || len(stores) > MaxShards {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "a sharded store needs 1 to %d databases, got %d", MaxShards, len(stores))
	}
	if cfg.HotSeats <= 0 {
		cfg.HotSeats = DefaultHotSeats
	}
	if cfg.PlacementCache <= 0 {
		cfg.PlacementCache = DefaultPlacementCache
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Sharded{shards: stores, cfg: cfg, placed: lru.New[boxoffice.ID, int](cfg.PlacementCache)}
	if err := s.join(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// joinLock serializes joins (and placements) in the directory.
const joinLock = 0x626f5f7368617264 // "bo_shard"

// join records or checks each database's place, under the directory's
// lock, so that processes starting together agree.
func (s *Sharded) join(ctx context.Context) error {
	dir := s.shards[0]
	return dir.transact(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(joinLock)); err != nil {
			return err
		}
		deployment, shard, ok, err := shardIdentity(ctx, tx)
		if err != nil {
			return err
		}
		switch {
		case ok && shard != 0:
			return &boxoffice.Error{Code: boxoffice.EINVALID, Err: errShardMismatch,
				Message: fmt.Sprintf("the first database given is shard %d of its deployment, not the directory (shard 0): give the databases in shard order", shard)}
		case !ok:
			// An existing database may become the directory if every id it
			// holds routes to it: minted under node ids below ShardNodes.
			var used int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM node_leases WHERE node_id >= $1 AND reserved_ms > 0`, ShardNodes).Scan(&used); err != nil {
				return err
			}
			if used > 0 {
				return boxoffice.Errorf(boxoffice.EINVALID, "the first database has minted ids under node ids %d and above, which a sharded deployment routes to other shards: it cannot become the directory", ShardNodes)
			}
			deployment = crand.Text()
			if _, err := tx.Exec(ctx, `INSERT INTO shard_identity (deployment, shard) VALUES ($1, 0)`, deployment); err != nil {
				return err
			}
		}
		s.deployment = deployment
		for i, st := range s.shards {
			if i > 0 {
				if err := st.joinAs(ctx, deployment, i); err != nil {
					return fmt.Errorf("shard %d: %w", i, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO shards (shard) VALUES ($1) ON CONFLICT DO NOTHING`, i); err != nil {
				return err
			}
		}
		var known int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM shards`).Scan(&known); err != nil {
			return err
		}
		if known != len(s.shards) {
			return &boxoffice.Error{Code: boxoffice.EINVALID, Err: errShardMismatch,
				Message: fmt.Sprintf("the directory knows %d shards but %d databases were given: give every shard, in shard order", known, len(s.shards))}
		}
		return nil
	})
}

// shardIdentity reads the database's place in a deployment, if it has one.
func shardIdentity(ctx context.Context, q querier) (deployment string, shard int, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT deployment, shard FROM shard_identity`).Scan(&deployment, &shard)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, translate(err)
	}
	return deployment, shard, true, nil
}

// ShardIdentity returns the shard this database is, and whether it is one
// at all: a process given a shard alone must not serve it as a whole
// deployment.
func (s *Store) ShardIdentity(ctx context.Context) (shard int, ok bool, err error) {
	_, shard, ok, err = shardIdentity(ctx, s.pool)
	return shard, ok, err
}

// joinAs makes this database shard i of deployment, or checks that it is.
func (s *Store) joinAs(ctx context.Context, deployment string, i int) error {
	return s.transact(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE shard_identity IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		dep, shard, ok, err := shardIdentity(ctx, tx)
		if err != nil {
			return err
		}
		if ok {
			if dep != deployment || shard != i {
				return &boxoffice.Error{Code: boxoffice.EINVALID, Err: errShardMismatch,
					Message: fmt.Sprintf("this database is shard %d of another deployment or in another place (given as shard %d): give the databases in shard order, with their own directory", shard, i)}
			}
			return nil
		}
		var events bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM events)`).Scan(&events); err != nil {
			return err
		}
		if events {
			return boxoffice.Errorf(boxoffice.EINVALID, "this database holds events of its own: only an empty database joins a deployment as a new shard")
		}
		_, err = tx.Exec(ctx, `INSERT INTO shard_identity (deployment, shard) VALUES ($1, $2)`, deployment, i)
		return err
	})
}

// Shards returns the stores, by shard number, for tools that work on
// each database (archive, migrate, tests).
func (s *Sharded) Shards() []*Store { return s.shards }

// Ping reports whether every shard is reachable.
func (s *Sharded) Ping(ctx context.Context) error {
	_, err := all(ctx, s, func(ctx context.Context, st *Store) (struct{}, error) { return struct{}{}, st.Ping(ctx) })
	return err
}

// Close closes every shard's pool.
func (s *Sharded) Close() error {
	for _, st := range s.shards {
		st.Close()
	}
	return nil
}

// --- routing -------------------------------------------------------------

// ShardOfID returns the shard an id minted by ShardedIDs names.
func ShardOfID(id boxoffice.ID) int { return snowflake.NodeOf(id) / ShardNodes }

// byID returns the store that holds the row with this id. An id naming no
// shard of the deployment goes to the directory, which then answers
// ENOTFOUND as any store does for an unknown id.
func (s *Sharded) byID(id boxoffice.ID) *Store {
	if k := ShardOfID(id); k < len(s.shards) {
		return s.shards[k]
	}
	return s.shards[0]
}

// ShardOf returns the shard event eventID lives on. An event the directory
// does not know is the directory's, which then answers ENOTFOUND for it.
func (s *Sharded) ShardOf(ctx context.Context, eventID boxoffice.ID) (int, error) {
	if k, ok := s.placed.Get(eventID); ok {
		return k, nil
	}
	var k int
	err := s.shards[0].pool.QueryRow(ctx, `SELECT shard FROM event_shards WHERE event_id = $1`, int64(eventID)).Scan(&k)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil // not cached: it may be being placed
	}
	if err != nil {
		return 0, translate(err)
	}
	if k >= len(s.shards) {
		return 0, boxoffice.Errorf(boxoffice.EINTERNAL, "event %d is placed on shard %d, beyond the %d given", eventID, k, len(s.shards))
	}
	s.placed.Add(eventID, k)
	return k, nil
}

func (s *Sharded) byEvent(ctx context.Context, eventID boxoffice.ID) (*Store, error) {
	k, err := s.ShardOf(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return s.shards[k], nil
}

// PlaceID returns id moved onto event eventID's shard: its node id becomes
// the shard's block plus id's node id modulo ShardNodes (ShardedIDs).
func (s *Sharded) PlaceID(ctx context.Context, eventID, id boxoffice.ID) (boxoffice.ID, error) {
	k, err := s.ShardOf(ctx, eventID)
	if err != nil {
		return 0, err
	}
	node := snowflake.NodeOf(id)
	if node >= ShardNodes {
		return 0, boxoffice.Errorf(boxoffice.EINTERNAL, "node id %d: a sharded deployment mints ids under node ids below %d", node, ShardNodes)
	}
	return snowflake.WithNode(id, k*ShardNodes+node), nil
}

// ShardedIDs mints ids for a sharded deployment from a generator whose
// node id is below ShardNodes (a lease with MaxNode ShardNodes-1): an
// event's own id as the generator makes it (events are found through the
// directory), the ids of an event's rows moved onto its shard's block.
type ShardedIDs struct {
	IDs   boxoffice.IDGenerator
	Store *Sharded
}

var _ boxoffice.EventIDGenerator = ShardedIDs{}

// NextID mints an id that belongs to no event yet (an event's).
func (g ShardedIDs) NextID() (boxoffice.ID, error) { return g.IDs.NextID() }

// NextIDFor mints the id of a row of event eventID, naming its shard.
func (g ShardedIDs) NextIDFor(ctx context.Context, eventID boxoffice.ID) (boxoffice.ID, error) {
	id, err := g.IDs.NextID()
	if err != nil {
		return 0, err
	}
	return g.Store.PlaceID(ctx, eventID, id)
}

// all runs fn on every shard at once and returns the results by shard; the
// first error, if any shard failed.
func all[T any](ctx context.Context, s *Sharded, fn func(context.Context, *Store) (T, error)) ([]T, error) {
	out, errs := each(ctx, s, fn)
	return out, errors.Join(errs...)
}

// each runs fn on every shard at once; errs[i] is shard i's error.
func each[T any](ctx context.Context, s *Sharded, fn func(context.Context, *Store) (T, error)) ([]T, []error) {
	out, errs := make([]T, len(s.shards)), make([]error, len(s.shards))
	if len(s.shards) == 1 {
		out[0], errs[0] = fn(ctx, s.shards[0])
		return out, errs
	}
	var wg sync.WaitGroup
	for i, st := range s.shards {
		wg.Go(func() { out[i], errs[i] = fn(ctx, st) })
	}
	wg.Wait()
	return out, errs
}

// sweep runs fn on every shard for the background passes (expiry,
// captures, refunds, returns, the outbox, purges): a shard that fails is
// left for the next pass, and the others' results are returned; the error
// only when every shard failed. One primary down must not stop the
// others' holds from expiring.
func sweep[T any](ctx context.Context, s *Sharded, fn func(context.Context, *Store) (T, error)) ([]T, error) {
	out, errs := each(ctx, s, fn)
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == len(s.shards) {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// unavailable says whether err is one a shard's outage gives.
func unavailable(err error) bool { return boxoffice.ErrorCode(err) == boxoffice.EUNAVAILABLE }

// --- events --------------------------------------------------------------

// CreateEvent places the event on a shard (placement policy, see place),
// records the placement in the directory, then creates the event there.
// The directory's key makes event ids unique across shards: a taken id is
// ECONFLICT, as on one database.
func (s *Sharded) CreateEvent(ctx context.Context, e *boxoffice.Event) error {
	seats := 0
	for _, sec := range e.Sections {
		seats += sec.Rows * sec.SeatsPerRow
	}
	hot := e.SaleMode == boxoffice.SaleQueued || seats >= s.cfg.HotSeats
	day := e.StartsAt.UTC().Truncate(24 * time.Hour)
	var k int
	err := s.shards[0].transact(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(joinLock)); err != nil {
			return err
		}
		loads, err := shardLoads(ctx, tx, len(s.shards), s.cfg.Now().UTC().Truncate(24*time.Hour))
		if err != nil {
			return err
		}
		k = place(loads, hot, e.ID)
		if _, err := tx.Exec(ctx, `INSERT INTO event_shards (event_id, shard, seats, hot, show_day) VALUES ($1, $2, $3, $4, $5)`,
			int64(e.ID), k, seats, hot, day); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO shard_load (shard, show_day, events, seats, hot) VALUES ($1, $2, 1, $3, $4::boolean::int)
			ON CONFLICT (shard, show_day) DO UPDATE
			SET events = shard_load.events + 1, seats = shard_load.seats + excluded.seats, hot = shard_load.hot + excluded.hot`,
			k, day, seats, hot)
		return err
	})
	if err != nil {
		if boxoffice.ErrorCode(err) == boxoffice.ECONFLICT {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "event %d already exists", e.ID)
		}
		return err
	}
	if err := s.shards[k].CreateEvent(ctx, e); err != nil {
		// Undo the placement, so that the id and the load are free again.
		// If the directory cannot be reached now, the row names an event
		// its shard does not have: reads of it are ENOTFOUND, as they are.
		if uerr := s.unplace(ctx, e.ID, k, day, seats, hot); uerr != nil && !unavailable(uerr) {
			return errors.Join(err, uerr)
		}
		return err
	}
	s.placed.Add(e.ID, k)
	return nil
}

func (s *Sharded) unplace(ctx context.Context, id boxoffice.ID, k int, day time.Time, seats int, hot bool) error {
	return s.shards[0].transact(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM event_shards WHERE event_id = $1 AND shard = $2`, int64(id), k)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE shard_load SET events = events - 1, seats = seats - $3, hot = hot - $4::boolean::int
			WHERE shard = $1 AND show_day = $2`, k, day, seats, hot)
		return err
	})
}

// shardLoad is what the placement weighs of one shard: its upcoming seats
// and hot events.
type shardLoad struct {
	shard int
	seats int64
	hot   int
}

// shardLoads sums each shard's load over the show days from today on.
func shardLoads(ctx context.Context, q querier, n int, today time.Time) ([]shardLoad, error) {
	loads := make([]shardLoad, n)
	for i := range loads {
		loads[i].shard = i
	}
	rows, err := q.Query(ctx, `
		SELECT shard, sum(seats)::bigint, sum(hot)::int FROM shard_load
		WHERE show_day >= $1 GROUP BY shard`, today)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var l shardLoad
		if err := rows.Scan(&l.shard, &l.seats, &l.hot); err != nil {
			return nil, err
		}
		if l.shard < n {
			loads[l.shard] = l
		}
	}
	return loads, rows.Err()
}

// place is the placement policy: the least loaded shard by upcoming seats,
// where a hot event goes to a shard with no other upcoming hot event (the
// fewest, if every shard has one), and other events avoid shards with hot
// events while any shard has none. Ties go by a hash of the event's id,
// so that shards equally empty (a new deployment, days without shows) fill
// alike, and two deployments with the same history place alike.
func place(loads []shardLoad, hot bool, id boxoffice.ID) int {
	free := slices.ContainsFunc(loads, func(l shardLoad) bool { return l.hot == 0 })
	var best []shardLoad
	for _, l := range loads {
		switch {
		case !hot && free && l.hot > 0:
		case len(best) == 0 || less(l, best[0], hot):
			best = append(best[:0], l)
		case !less(best[0], l, hot):
			best = append(best, l) // as good as the best
		}
	}
	h := uint64(id) * 0x9e3779b97f4a7c15 // Fibonacci hashing: the id's bits mixed
	return best[(h>>32)%uint64(len(best))].shard
}

// less orders shards for the placement: for a hot event, fewer hot events
// first; then fewer upcoming seats.
func less(a, b shardLoad, hot bool) bool {
	if hot && a.hot != b.hot {
		return a.hot < b.hot
	}
	return a.seats < b.seats
}

// Event reads an event from its shard.
func (s *Sharded) Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error) {
	st, err := s.byEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	return st.Event(ctx, id)
}

// Events merges the shards' pages: each returns its first f.Limit, and the
// merge keeps the first f.Limit by id, newest first, as one database does.
func (s *Sharded) Events(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error) {
	pages, err := all(ctx, s, func(ctx context.Context, st *Store) ([]*boxoffice.Event, error) { return st.Events(ctx, f) })
	if err != nil {
		return nil, err
	}
	out := slices.Concat(pages...)
	slices.SortFunc(out, func(a, b *boxoffice.Event) int { return cmp.Compare(b.ID, a.ID) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// SoldSeats reads the event's sold seats on its shard.
func (s *Sharded) SoldSeats(ctx context.Context, eventID boxoffice.ID) ([]string, error) {
	st, err := s.byEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return st.SoldSeats(ctx, eventID)
}

// Draw reads the event's draw on its shard.
func (s *Sharded) Draw(ctx context.Context, eventID boxoffice.ID) (*boxoffice.Draw, error) {
	st, err := s.byEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return st.Draw(ctx, eventID)
}

// RecordDraw records the draw on the event's shard.
func (s *Sharded) RecordDraw(ctx context.Context, d *boxoffice.Draw) error {
	st, err := s.byEvent(ctx, d.EventID)
	if err != nil {
		return err
	}
	return st.RecordDraw(ctx, d)
}

// MarkDrawReleased marks the draw on the event's shard.
func (s *Sharded) MarkDrawReleased(ctx context.Context, eventID boxoffice.ID) error {
	st, err := s.byEvent(ctx, eventID)
	if err != nil {
		return err
	}
	return st.MarkDrawReleased(ctx, eventID)
}

// DrawsDue takes the draws due on every shard that answers (one down
// must not keep the others' sales shut), in turns, oldest openings first
// on each, at most limit in all.
func (s *Sharded) DrawsDue(ctx context.Context, now time.Time, limit int) ([]boxoffice.ID, error) {
	lists, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.ID, error) { return st.DrawsDue(ctx, now, limit) })
	var out []boxoffice.ID
	for i := 0; len(out) < limit; i++ {
		took := false
		for _, l := range lists {
			if i < len(l) && len(out) < limit {
				out, took = append(out, l[i]), true
			}
		}
		if !took {
			break
		}
	}
	return out, err
}

// --- bookings ------------------------------------------------------------

// CreateBooking writes the booking on its event's shard.
func (s *Sharded) CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error {
	st, err := s.byEvent(ctx, nb.Booking.EventID)
	if err != nil {
		return err
	}
	if err := s.sameShard(ctx, st, nb.Booking); err != nil {
		return err
	}
	return st.CreateBooking(ctx, nb)
}

// sameShard refuses a booking of a listing or a waitlist offer whose id
// names another shard than the booking's event: it is another event's
// (ECONFLICT, as one database says), or no listing or entry at all
// (ENOTFOUND), which that shard says.
func (s *Sharded) sameShard(ctx context.Context, st *Store, b *boxoffice.Booking) error {
	switch {
	case b.ListingID != 0 && s.byID(b.ListingID) != st:
		if _, err := s.byID(b.ListingID).Listing(ctx, b.ListingID); err != nil {
			return err
		}
		return boxoffice.Errorf(boxoffice.ECONFLICT, "listing %s is of another event", b.ListingID)
	case b.WaitlistEntryID != 0 && s.byID(b.WaitlistEntryID) != st:
		if _, err := s.byID(b.WaitlistEntryID).WaitlistEntry(ctx, b.WaitlistEntryID); err != nil {
			return err
		}
		return boxoffice.Errorf(boxoffice.ECONFLICT, "waitlist entry %s is of another event", b.WaitlistEntryID)
	}
	return nil
}

// CreateBookings writes each shard's part of the batch there, the shards
// at once. A shard that fails gives its error to each of its bookings;
// the others are written.
func (s *Sharded) CreateBookings(ctx context.Context, nbs []boxoffice.NewBooking) ([]error, error) {
	groups := map[int][]int{}
	for i, nb := range nbs {
		k, err := s.ShardOf(ctx, nb.Booking.EventID)
		if err != nil {
			return nil, err
		}
		groups[k] = append(groups[k], i)
	}
	errs := make([]error, len(nbs))
	for k, idx := range groups {
		kept := idx[:0]
		for _, i := range idx {
			if errs[i] = s.sameShard(ctx, s.shards[k], nbs[i].Booking); errs[i] == nil {
				kept = append(kept, i)
			}
		}
		groups[k] = kept
	}
	var wg sync.WaitGroup
	for k, idx := range groups {
		if len(idx) == 0 {
			continue
		}
		wg.Go(func() {
			part := make([]boxoffice.NewBooking, len(idx))
			for j, i := range idx {
				part[j] = nbs[i]
			}
			perr, err := s.shards[k].CreateBookings(ctx, part)
			for j, i := range idx {
				if err != nil {
					errs[i] = err
				} else {
					errs[i] = perr[j]
				}
			}
		})
	}
	wg.Wait()
	return errs, nil
}

// Booking reads a booking from the shard its id names.
func (s *Sharded) Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error) {
	return s.byID(id).Booking(ctx, id)
}

// ConfirmBooking confirms on the booking's shard.
func (s *Sharded) ConfirmBooking(ctx context.Context, c boxoffice.ConfirmBooking) (*boxoffice.Booking, error) {
	return s.byID(c.BookingID).ConfirmBooking(ctx, c)
}

// ReleaseBooking releases on the booking's shard.
func (s *Sharded) ReleaseBooking(ctx context.Context, id boxoffice.ID, to boxoffice.BookingStatus, now time.Time) (*boxoffice.Booking, error) {
	return s.byID(id).ReleaseBooking(ctx, id, to, now)
}

// CancelBooking cancels on the booking's shard.
func (s *Sharded) CancelBooking(ctx context.Context, c boxoffice.CancelBooking) (*boxoffice.Booking, error) {
	return s.byID(c.BookingID).CancelBooking(ctx, c)
}

// ExpireBookings expires on every shard (up to limit each): the bookings
// of the shards that answered.
func (s *Sharded) ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*boxoffice.Booking, error) {
	parts, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]*boxoffice.Booking, error) {
		return st.ExpireBookings(ctx, cutoff, limit)
	})
	return slices.Concat(parts...), err
}

// Payment reads the booking's payment on its shard.
func (s *Sharded) Payment(ctx context.Context, bookingID boxoffice.ID) (*boxoffice.Payment, error) {
	return s.byID(bookingID).Payment(ctx, bookingID)
}

// MarkCaptured marks the capture on the booking's shard.
func (s *Sharded) MarkCaptured(ctx context.Context, eventID, bookingID boxoffice.ID) error {
	return s.byID(bookingID).MarkCaptured(ctx, eventID, bookingID)
}

// MarkRefunded marks the refund on the booking's shard.
func (s *Sharded) MarkRefunded(ctx context.Context, bookingID boxoffice.ID, now time.Time) error {
	return s.byID(bookingID).MarkRefunded(ctx, bookingID, now)
}

// paymentOrder is the order of the payment lists: created_at, booking id.
func paymentOrder(a, b boxoffice.Payment) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.BookingID, b.BookingID))
}

// UncapturedPayments lists the first limit, in order, of the shards that
// answered.
func (s *Sharded) UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]boxoffice.Payment, error) {
	parts, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.Payment, error) {
		return st.UncapturedPayments(ctx, cutoff, limit)
	})
	return firstN(parts, limit, paymentOrder), err
}

// RefundsDue lists the first limit, in order, of the shards that answered.
func (s *Sharded) RefundsDue(ctx context.Context, limit int) ([]boxoffice.Payment, error) {
	parts, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.Payment, error) {
		return st.RefundsDue(ctx, limit)
	})
	return firstN(parts, limit, paymentOrder), err
}

// firstN merges the shards' lists, each in order, and keeps the first n
// (n <= 0: all).
func firstN[T any](parts [][]T, n int, order func(a, b T) int) []T {
	out := slices.Concat(parts...)
	slices.SortStableFunc(out, order)
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// --- tickets, resale, waitlist ---------------------------------------------

// Ticket reads a ticket from the shard its id names.
func (s *Sharded) Ticket(ctx context.Context, id boxoffice.ID) (*boxoffice.Ticket, error) {
	return s.byID(id).Ticket(ctx, id)
}

// UserTickets merges the user's tickets of every shard, newest first.
func (s *Sharded) UserTickets(ctx context.Context, userID string) ([]boxoffice.Ticket, error) {
	parts, err := all(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.Ticket, error) { return st.UserTickets(ctx, userID) })
	if err != nil {
		return nil, err
	}
	return firstN(parts, 0, func(a, b boxoffice.Ticket) int { return cmp.Compare(b.ID, a.ID) }), nil
}

// CheckIn checks in on the event's shard. A code that shard does not know
// may be another event's ticket: the other shards are asked (a check-in
// naming an event they do not hold admits nobody there), so that it is
// ECONFLICT, as on one database. Without an event, the shards are asked in
// turn until one knows the code.
func (s *Sharded) CheckIn(ctx context.Context, eventID boxoffice.ID, code string, now time.Time) (*boxoffice.Ticket, error) {
	first := 0
	if eventID != 0 {
		k, err := s.ShardOf(ctx, eventID)
		if err != nil {
			return nil, err
		}
		first = k
	}
	t, err := s.shards[first].CheckIn(ctx, eventID, code, now)
	if boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		return t, err
	}
	for k, st := range s.shards {
		if k == first {
			continue
		}
		t2, err2 := st.CheckIn(ctx, eventID, code, now)
		if boxoffice.ErrorCode(err2) != boxoffice.ENOTFOUND {
			return t2, err2
		}
	}
	return t, err
}

// CreateListing lists on the ticket's shard (the store fills in the
// event from the ticket).
func (s *Sharded) CreateListing(ctx context.Context, l *boxoffice.Listing, idem *boxoffice.IdempotencyRecord) error {
	return s.byID(l.TicketID).CreateListing(ctx, l, idem)
}

// Listing reads a listing from the shard its id names.
func (s *Sharded) Listing(ctx context.Context, id boxoffice.ID) (*boxoffice.Listing, error) {
	return s.byID(id).Listing(ctx, id)
}

// EventListings reads the event's listings on its shard.
func (s *Sharded) EventListings(ctx context.Context, eventID boxoffice.ID) ([]boxoffice.Listing, error) {
	st, err := s.byEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return st.EventListings(ctx, eventID)
}

// UserListings merges the seller's listings of every shard, newest first.
func (s *Sharded) UserListings(ctx context.Context, sellerID string) ([]boxoffice.Listing, error) {
	parts, err := all(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.Listing, error) {
		return st.UserListings(ctx, sellerID)
	})
	if err != nil {
		return nil, err
	}
	return firstN(parts, 0, func(a, b boxoffice.Listing) int { return cmp.Compare(b.ID, a.ID) }), nil
}

// WithdrawListing withdraws on the listing's shard.
func (s *Sharded) WithdrawListing(ctx context.Context, id boxoffice.ID, sellerID string, now time.Time) (*boxoffice.Listing, error) {
	return s.byID(id).WithdrawListing(ctx, id, sellerID, now)
}

// UserPayouts merges the seller's payouts of every shard, newest listing
// first.
func (s *Sharded) UserPayouts(ctx context.Context, sellerID string) ([]boxoffice.Payout, error) {
	parts, err := all(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.Payout, error) { return st.UserPayouts(ctx, sellerID) })
	if err != nil {
		return nil, err
	}
	return firstN(parts, 0, func(a, b boxoffice.Payout) int { return cmp.Compare(b.ListingID, a.ListingID) }), nil
}

// JoinWaitlist joins on the event's shard.
func (s *Sharded) JoinWaitlist(ctx context.Context, e *boxoffice.WaitlistEntry, idem *boxoffice.IdempotencyRecord) error {
	st, err := s.byEvent(ctx, e.EventID)
	if err != nil {
		return err
	}
	return st.JoinWaitlist(ctx, e, idem)
}

// WaitlistEntry reads an entry from the shard its id names.
func (s *Sharded) WaitlistEntry(ctx context.Context, id boxoffice.ID) (*boxoffice.WaitlistEntry, error) {
	return s.byID(id).WaitlistEntry(ctx, id)
}

// UserWaitlist merges the user's entries of every shard, newest first.
func (s *Sharded) UserWaitlist(ctx context.Context, userID string) ([]boxoffice.WaitlistEntry, error) {
	parts, err := all(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.WaitlistEntry, error) {
		return st.UserWaitlist(ctx, userID)
	})
	if err != nil {
		return nil, err
	}
	return firstN(parts, 0, func(a, b boxoffice.WaitlistEntry) int { return cmp.Compare(b.ID, a.ID) }), nil
}

// LeaveWaitlist leaves on the entry's shard.
func (s *Sharded) LeaveWaitlist(ctx context.Context, id boxoffice.ID, now time.Time) (*boxoffice.WaitlistEntry, error) {
	return s.byID(id).LeaveWaitlist(ctx, id, now)
}

// WaitingEntries reads the event's waitlist on its shard.
func (s *Sharded) WaitingEntries(ctx context.Context, eventID, after boxoffice.ID, limit int) ([]boxoffice.WaitlistEntry, error) {
	st, err := s.byEvent(ctx, eventID)
	if err != nil {
		return nil, err
	}
	return st.WaitingEntries(ctx, eventID, after, limit)
}

// WaitlistAhead counts on the event's shard.
func (s *Sharded) WaitlistAhead(ctx context.Context, eventID, id boxoffice.ID) (int, error) {
	st, err := s.byEvent(ctx, eventID)
	if err != nil {
		return 0, err
	}
	return st.WaitlistAhead(ctx, eventID, id)
}

// Seat returns and outbox events are numbered per database; across shards
// the number carries its shard in the low bits: n*MaxShards + shard.
func shardSeq(n int64, shard int) int64   { return n*MaxShards + int64(shard) }
func splitSeq(seq int64) (n int64, k int) { return seq / MaxShards, int(seq % MaxShards) }

// PendingReturns lists the first limit returns of the shards that
// answered, their ids carrying the shard.
func (s *Sharded) PendingReturns(ctx context.Context, limit int) ([]boxoffice.SeatReturn, error) {
	parts, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.SeatReturn, error) {
		return st.PendingReturns(ctx, limit)
	})
	for k, part := range parts {
		for i := range part {
			part[i].ID = shardSeq(part[i].ID, k)
		}
	}
	return roundRobin(parts, limit), err
}

// DeleteReturn deletes a return listed by PendingReturns.
func (s *Sharded) DeleteReturn(ctx context.Context, id int64) error {
	n, k := splitSeq(id)
	if id < 0 || k >= len(s.shards) {
		return nil // no such return: deleted already, as the port allows
	}
	return s.shards[k].DeleteReturn(ctx, n)
}

// roundRobin takes up to n of the shards' lists, one of each in turn, each
// list's order kept: no shard's backlog starves another's.
func roundRobin[T any](parts [][]T, n int) []T {
	var out []T
	for i := 0; ; i++ {
		took := false
		for _, p := range parts {
			if i < len(p) && (n <= 0 || len(out) < n) {
				out, took = append(out, p[i]), true
			}
		}
		if !took {
			return out
		}
	}
}

// --- idempotency -----------------------------------------------------------

// Idempotency looks the key up on every shard. A record is written with
// the row it answers for, on that row's event's shard; the request it
// answers is for that event, and needs that shard anyway. So shards that
// cannot be reached are passed over (the error only if none answered): a
// retry whose record is on a shard that is down fails at its next step,
// on that shard, whatever this returns.
func (s *Sharded) Idempotency(ctx context.Context, userID, key string) (*boxoffice.IdempotencyRecord, error) {
	recs, err := sweep(ctx, s, func(ctx context.Context, st *Store) (*boxoffice.IdempotencyRecord, error) {
		return st.Idempotency(ctx, userID, key)
	})
	if err != nil {
		return nil, err
	}
	return earliest(recs), nil
}

// earliest picks the first recorded of one key's records (a key reused for
// requests of events on different shards may have one on each).
func earliest(recs []*boxoffice.IdempotencyRecord) *boxoffice.IdempotencyRecord {
	var best *boxoffice.IdempotencyRecord
	for _, r := range recs {
		if r != nil && (best == nil || r.CreatedAt.Before(best.CreatedAt)) {
			best = r
		}
	}
	return best
}

// Idempotencies looks the keys up on every shard, as Idempotency does.
func (s *Sharded) Idempotencies(ctx context.Context, userIDs, keys []string) ([]*boxoffice.IdempotencyRecord, error) {
	parts, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]*boxoffice.IdempotencyRecord, error) {
		return st.Idempotencies(ctx, userIDs, keys)
	})
	if err != nil {
		return nil, err
	}
	out := make([]*boxoffice.IdempotencyRecord, len(userIDs))
	recs := make([]*boxoffice.IdempotencyRecord, len(parts))
	for i := range out {
		for k, p := range parts {
			recs[k] = nil
			if i < len(p) {
				recs[k] = p[i]
			}
		}
		out[i] = earliest(recs)
	}
	return out, nil
}

// PutIdempotency stores a record that no row goes with (an answer
// replayed, not made) on every shard, so that the key is taken wherever a
// later request with it would write: on the user's home shard (by hash),
// replicas elsewhere, which the purge does not count. EIDEMINFLIGHT if
// any shard has the key already.
func (s *Sharded) PutIdempotency(ctx context.Context, r *boxoffice.IdempotencyRecord) error {
	h := fnv.New32a()
	h.Write([]byte(r.UserID))
	home := s.shards[int(h.Sum32()%uint32(len(s.shards)))]
	_, errs := each(ctx, s, func(ctx context.Context, st *Store) (struct{}, error) {
		return struct{}{}, st.putIdempotency(ctx, r, st != home)
	})
	for _, err := range errs {
		if boxoffice.ErrorCode(err) == boxoffice.EIDEMINFLIGHT {
			return err
		}
	}
	return errors.Join(errs...)
}

// PurgeIdempotency purges on every shard that answers.
func (s *Sharded) PurgeIdempotency(ctx context.Context, now time.Time) (int, error) {
	ns, err := sweep(ctx, s, func(ctx context.Context, st *Store) (int, error) { return st.PurgeIdempotency(ctx, now) })
	return sum(ns), err
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}

// --- outbox ------------------------------------------------------------------

// PendingOutbox lists up to limit events of the shards that answered, in
// turn, each shard's in its order (a booking's events are all on its
// shard, so their order is kept); their Seq carries the shard.
func (s *Sharded) PendingOutbox(ctx context.Context, limit int) ([]boxoffice.OutboxEvent, error) {
	parts, err := sweep(ctx, s, func(ctx context.Context, st *Store) ([]boxoffice.OutboxEvent, error) {
		return st.PendingOutbox(ctx, limit)
	})
	for k, part := range parts {
		for i := range part {
			part[i].Seq = shardSeq(part[i].Seq, k)
		}
	}
	return roundRobin(parts, limit), err
}

// MarkPublished marks each shard's events.
func (s *Sharded) MarkPublished(ctx context.Context, seqs []int64, now time.Time) error {
	return s.eachShardsSeqs(seqs, func(st *Store, ns []int64) error { return st.MarkPublished(ctx, ns, now) })
}

// DeletePublished deletes each shard's events.
func (s *Sharded) DeletePublished(ctx context.Context, seqs []int64) error {
	return s.eachShardsSeqs(seqs, func(st *Store, ns []int64) error { return st.DeletePublished(ctx, ns) })
}

// eachShardsSeqs calls f with each shard's seqs among seqs (as that shard
// numbers them), and joins the errors.
func (s *Sharded) eachShardsSeqs(seqs []int64, f func(st *Store, ns []int64) error) error {
	by := map[int][]int64{}
	for _, seq := range seqs {
		if n, k := splitSeq(seq); seq >= 0 && k < len(s.shards) {
			by[k] = append(by[k], n)
		}
	}
	var errs []error
	for k, ns := range by {
		errs = append(errs, f(s.shards[k], ns))
	}
	return errors.Join(errs...)
}

// PurgeOutbox purges on every shard that answers.
func (s *Sharded) PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error) {
	ns, err := sweep(ctx, s, func(ctx context.Context, st *Store) (int, error) { return st.PurgeOutbox(ctx, cutoff) })
	return sum(ns), err
}

// --- the queue's journal ---------------------------------------------------

// RecordQueueOutcomes records each outcome on its event's shard.
func (s *Sharded) RecordQueueOutcomes(ctx context.Context, recs []boxoffice.QueueRecord) ([]boxoffice.QueueRecord, error) {
	groups := map[int][]int{}
	for i, r := range recs {
		k, err := s.ShardOf(ctx, r.EventID)
		if err != nil {
			return nil, err
		}
		groups[k] = append(groups[k], i)
	}
	// The shards at once, each writing into its own places of out.
	out := make([]boxoffice.QueueRecord, len(recs))
	var g errgroup.Group
	for k, idx := range groups {
		g.Go(func() error {
			part := make([]boxoffice.QueueRecord, len(idx))
			for j, i := range idx {
				part[j] = recs[i]
			}
			got, err := s.shards[k].RecordQueueOutcomes(ctx, part)
			if err != nil {
				return err
			}
			for j, i := range idx {
				out[i] = got[j]
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// QueueRecords reads each request's outcome on the shard its id names.
func (s *Sharded) QueueRecords(ctx context.Context, ids []boxoffice.ID) (map[boxoffice.ID]boxoffice.QueueRecord, error) {
	by := map[*Store][]boxoffice.ID{}
	for _, id := range ids {
		st := s.byID(id)
		by[st] = append(by[st], id)
	}
	return mergeAtOnce(by, func(st *Store, part []boxoffice.ID) (map[boxoffice.ID]boxoffice.QueueRecord, error) {
		return st.QueueRecords(ctx, part)
	})
}

// mergeAtOnce runs read on every shard's part at once and merges the maps
// they answer; the first error fails the whole.
func mergeAtOnce[S comparable, V any](parts map[S][]boxoffice.ID, read func(S, []boxoffice.ID) (map[boxoffice.ID]V, error)) (map[boxoffice.ID]V, error) {
	out := map[boxoffice.ID]V{}
	var mu sync.Mutex
	var g errgroup.Group
	for shard, part := range parts {
		g.Go(func() error {
			got, err := read(shard, part)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(out, got)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// QueueServed counts each event's outcomes on its shard.
func (s *Sharded) QueueServed(ctx context.Context, events []boxoffice.ID) (map[boxoffice.ID]int64, error) {
	by := map[int][]boxoffice.ID{}
	for _, ev := range events {
		k, err := s.ShardOf(ctx, ev)
		if err != nil {
			return nil, err
		}
		by[k] = append(by[k], ev)
	}
	return mergeAtOnce(by, func(k int, part []boxoffice.ID) (map[boxoffice.ID]int64, error) {
		return s.shards[k].QueueServed(ctx, part)
	})
}
