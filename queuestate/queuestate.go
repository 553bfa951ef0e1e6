// Package queuestate is the flash-sale queue's state in production: a cache
// (Redis) that is rebuilt from the durable record whenever it loses data.
//
// The durable record is two things: the request log (Kafka), which has
// every admitted request with its position (a 202 is sent only once the
// log has it), and the outcome journal (PostgreSQL), which the booking
// workers write before the cache hears of an outcome. Redis holds what is
// fast to ask (positions, the one-live-entry rule, idempotency, outcomes,
// counters) and may restart empty, fail over to a replica that lagged, or
// lose a key; then:
//
//   - admissions to an event whose state is gone are refused with 503 and
//     Retry-After ("cold", see redis.QueueState.Init), never given positions
//     from 1 again;
//   - GET /queue/{id} answers from the journal when the request has an
//     outcome there, and 503 (never 404) while the cache may be incomplete;
//   - one process rebuilds the state (Rebuild): it waits Settle, so that
//     every admission in flight when the cache was lost has reached the log
//     or been refused, reads the whole log and the journal, merges them into
//     the cache, and records the nodes' run ids as the new epoch.
//
// The cost in the steady state is one journal row per outcome (written a
// batch at a time) and, per process, one INFO per Redis node a second.
package queuestate

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Cache is the fast state the queue is served from (redis.QueueState).
type Cache interface {
	boxoffice.QueueState
	// Init marks an event's state as initialized if its node is one of
	// epoch; false means the node's data may be gone.
	Init(ctx context.Context, eventID boxoffice.ID, epoch []string) (bool, error)
	// Restore merges requests from the durable record into an event.
	Restore(ctx context.Context, eventID boxoffice.ID, entries []*boxoffice.QueueEntry) error
	// Seal ends an event's rebuild: highest is the highest position in the
	// log, given how many requests there have one.
	Seal(ctx context.Context, eventID boxoffice.ID, highest, given, served int64, waiting []*boxoffice.QueuedRequest) error
	// Nodes returns the run ids of the cache's nodes; Epoch and SetEpoch
	// read and write those of the last complete rebuild.
	Nodes(ctx context.Context) ([]string, error)
	Epoch(ctx context.Context) ([]string, error)
	SetEpoch(ctx context.Context, nodes []string) error
}

// Journal is the durable record of outcomes (postgres.Store).
type Journal interface {
	// RecordQueueOutcomes stores a batch of outcomes, first one wins, and
	// returns the outcome on record for each.
	RecordQueueOutcomes(ctx context.Context, recs []boxoffice.QueueRecord) ([]boxoffice.QueueRecord, error)
	QueueRecords(ctx context.Context, ids []boxoffice.ID) (map[boxoffice.ID]boxoffice.QueueRecord, error)
	QueueServed(ctx context.Context, events []boxoffice.ID) (map[boxoffice.ID]int64, error)
}

// Log is the durable request log, read from its start (kafka.RequestLog).
type Log interface {
	Replay(ctx context.Context, fn func(batch []*boxoffice.QueuedRequest) error) error
}

// State is boxoffice.QueueState over a Cache, kept whole by the Journal
// and the Log. Create it with New; run Watch in every process that uses it.
type State struct {
	cache   Cache
	journal Journal
	log     Log
	leases  boxoffice.Leases
	logger  *slog.Logger

	// Settle is how long a rebuild waits before it reads the log: at
	// least the longest a front door may take between admitting a request
	// and answering 202 (sale.Config.AdmitDeadline), so every request
	// promised before the cache was lost is in the log by then.
	Settle time.Duration

	mu         sync.Mutex
	rebuilding bool
}

var (
	_ boxoffice.QueueState      = (*State)(nil)
	_ boxoffice.EntriesFinisher = (*State)(nil)
)

// New returns the state over cache, rebuilt from journal and log; leases
// keeps two processes from rebuilding at once.
func New(cache Cache, journal Journal, log Log, leases boxoffice.Leases, logger *slog.Logger) *State {
	if logger == nil {
		logger = slog.Default()
	}
	return &State{cache: cache, journal: journal, log: log, leases: leases, logger: logger, Settle: 6 * time.Second}
}

func isCold(err error) bool { return errors.Is(err, boxoffice.ErrQueueCold) }

// warm makes an event's state usable: initialized at once when the cache
// is whole (a new event), otherwise after a rebuild, which it starts; it
// then returns the cold error for the caller to pass on (503).
func (s *State) warm(ctx context.Context, eventID boxoffice.ID) error {
	epoch, err := s.cache.Epoch(ctx)
	if err != nil {
		return err
	}
	if epoch != nil {
		ok, err := s.cache.Init(ctx, eventID, epoch)
		if err != nil || ok {
			return err
		}
	}
	s.startRebuild()
	return boxoffice.QueueColdError()
}

// warmed runs call, an operation on one event's state, and once more
// after warming the event if the cache answered cold.
func warmed[T any](ctx context.Context, s *State, eventID boxoffice.ID, call func() (T, error)) (T, error) {
	v, err := call()
	if isCold(err) {
		if err := s.warm(ctx, eventID); err != nil {
			var zero T
			return zero, err
		}
		v, err = call()
	}
	return v, err
}

// Admit records r; see boxoffice.QueueState.
func (s *State) Admit(ctx context.Context, r *boxoffice.QueuedRequest, maxLive int, preQueue bool) (*boxoffice.QueueEntry, bool, error) {
	return boxoffice.AdmitOne(ctx, s, r, maxLive, preQueue)
}

// AdmitMany admits a batch in the cache; the requests of events the cache
// answers cold for are admitted again once those events are warmed.
func (s *State) AdmitMany(ctx context.Context, as []boxoffice.Admission) ([]boxoffice.Admitted, error) {
	out, err := s.cache.AdmitMany(ctx, as)
	if err != nil {
		return nil, err
	}
	var again []int
	warmedEvents := map[boxoffice.ID]error{}
	for i, o := range out {
		if !isCold(o.Err) {
			continue
		}
		id := as[i].Request.EventID
		werr, done := warmedEvents[id]
		if !done {
			werr = s.warm(ctx, id)
			warmedEvents[id] = werr
		}
		if werr != nil {
			out[i].Err = werr
			continue
		}
		again = append(again, i)
	}
	if len(again) == 0 {
		return out, nil
	}
	retry := make([]boxoffice.Admission, len(again))
	for j, i := range again {
		retry[j] = as[i]
	}
	res, err := s.cache.AdmitMany(ctx, retry)
	if err != nil {
		return nil, err
	}
	for j, i := range again {
		out[i] = res[j]
	}
	return out, nil
}

// Entry returns a request's entry: from the cache, else from the journal
// if it has an outcome; ENOTFOUND only when the cache is known to be
// whole, EUNAVAILABLE (cold) while it may not be.
func (s *State) Entry(ctx context.Context, id boxoffice.ID) (*boxoffice.QueueEntry, error) {
	e, err := s.cache.Entry(ctx, id)
	if boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		return e, err
	}
	recs, lerr := s.missing(ctx, []boxoffice.ID{id})
	if lerr != nil {
		return nil, lerr
	}
	if rec, ok := recs[id]; ok {
		return entryOf(rec), nil
	}
	// The cache is whole now; a rebuild may have finished since the first
	// read (it records the epoch last), so read once more.
	return s.cache.Entry(ctx, id)
}

// EntryByKey reads the cache; while the cache may have lost entries it is
// cold (the caller answers 503, as the front door does then anyway).
func (s *State) EntryByKey(ctx context.Context, eventID boxoffice.ID, userID, key string) (*boxoffice.QueueEntry, error) {
	e, err := s.cache.EntryByKey(ctx, eventID, userID, key)
	if boxoffice.ErrorCode(err) != boxoffice.ENOTFOUND {
		return e, err
	}
	if cerr := s.coldUnlessWhole(ctx); cerr != nil {
		return nil, cerr
	}
	return s.cache.EntryByKey(ctx, eventID, userID, key) // see Entry
}

// Entries is Entry for a batch: the cache read at once, the requests it
// does not know looked up in the journal in one query.
func (s *State) Entries(ctx context.Context, rs []*boxoffice.QueuedRequest) ([]*boxoffice.QueueEntry, error) {
	out, err := s.cache.Entries(ctx, rs)
	if err != nil {
		return nil, err
	}
	var ids []boxoffice.ID
	for i, e := range out {
		if e == nil {
			ids = append(ids, rs[i].ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	recs, err := s.missing(ctx, ids)
	if err != nil {
		return nil, err
	}
	var again []int // neither in the cache at the first read nor on record
	for i, e := range out {
		if e != nil {
			continue
		}
		if rec, ok := recs[rs[i].ID]; ok {
			out[i] = entryOf(rec)
		} else {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		// The cache is whole now; a rebuild may have finished since the
		// first read (it records the epoch last): read those once more.
		rrs := make([]*boxoffice.QueuedRequest, len(again))
		for j, i := range again {
			rrs[j] = rs[i]
		}
		es, err := s.cache.Entries(ctx, rrs)
		if err != nil {
			return nil, err
		}
		for j, i := range again {
			out[i] = es[j]
		}
	}
	return out, nil
}

// missing explains requests the cache does not know: their outcomes on
// record, for those that have one; the others are unknown when the cache
// is whole (it never knew them), and the answer is the cold error while it
// may have lost them (and a rebuild starts).
func (s *State) missing(ctx context.Context, ids []boxoffice.ID) (map[boxoffice.ID]boxoffice.QueueRecord, error) {
	recs, err := s.journal.QueueRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(recs) == len(ids) {
		return recs, nil
	}
	if err := s.coldUnlessWhole(ctx); err != nil {
		return nil, err
	}
	return recs, nil
}

// coldUnlessWhole is nil when the cache is known to be whole (a request it
// does not know, it never knew); else the cold error, and a rebuild starts.
func (s *State) coldUnlessWhole(ctx context.Context) error {
	whole, err := s.whole(ctx)
	if err != nil {
		return err
	}
	if !whole {
		s.startRebuild()
		return boxoffice.QueueColdError()
	}
	return nil
}

func entryOf(rec boxoffice.QueueRecord) *boxoffice.QueueEntry {
	return &boxoffice.QueueEntry{
		Request: &boxoffice.QueuedRequest{ID: rec.RequestID, EventID: rec.EventID, UserID: rec.UserID, Position: rec.Position},
		Status:  rec.Status, Reason: rec.Reason, Message: rec.Message, BookingID: rec.BookingID,
		HeldUntil: rec.HeldUntil, FinishedAt: rec.FinishedAt,
	}
}

// Finish records the outcome in the journal, then in the cache. The
// journal's first outcome is the one that counts, also when a redelivery
// decided differently; a request still waiting for the draw gets none.
func (s *State) Finish(ctx context.Context, r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) (bool, error) {
	return boxoffice.FinishOne(ctx, s, r, o)
}

// FinishMany is Finish for a batch: the cache's entries read at once (one
// pipelined round trip), the journal written in one statement, the cache
// finished in one more round trip.
func (s *State) FinishMany(ctx context.Context, rs []*boxoffice.QueuedRequest, os []boxoffice.QueueOutcome) ([]bool, error) {
	return s.FinishEntries(ctx, rs, nil, os)
}

// FinishEntries is FinishMany without the read of the entries es has (nil
// es: none); see boxoffice.EntriesFinisher. An entry read before is as good
// as a fresh one: one that was queued is finished in the cache only while
// it still is (the finish script checks), and the journal keeps its first
// outcome; one decided or waiting is left alone either way. Only a request
// the read did not find is read again: the cache may have been rebuilt
// with it since, and then it is finished there too.
func (s *State) FinishEntries(ctx context.Context, rs []*boxoffice.QueuedRequest, es []*boxoffice.QueueEntry, os []boxoffice.QueueOutcome) ([]bool, error) {
	if err := boxoffice.CheckOutcomes(rs, os); err != nil {
		return nil, err
	}
	if es != nil && len(es) != len(rs) {
		return nil, boxoffice.Errorf(boxoffice.EINVALID, "%d entries for %d requests", len(es), len(rs))
	}
	// Each request as the state knows it: in the cache; else on record
	// (decided before: nothing to do); else unknown to a cache that is
	// whole (a request whose admission answered 503 yet reached the log,
	// or one past the cache's TTL), whose outcome goes on record all the
	// same. While the cache may have lost requests this is the cold error,
	// and the worker's batch comes again after the rebuild.
	entries, err := s.entriesBesides(ctx, rs, es)
	if err != nil {
		return nil, err
	}
	first := make([]bool, len(rs))
	var (
		recs    []boxoffice.QueueRecord
		of      []int // recs[k] is rs[of[k]]'s
		cached  []int // indexes in recs of those the cache has too
		journal []int // indexes in recs of those only the journal will have
	)
	for i, r := range rs {
		switch e := entries[i]; {
		case e != nil && e.Status != boxoffice.QueueQueued:
			// decided (in the cache or on record), or waiting for the draw
		case e != nil:
			cached = append(cached, len(recs))
			recs, of = append(recs, recordOf(e.Request, os[i])), append(of, i)
		case r.Position == 0:
			// unknown and not drawn: nothing to decide
		default:
			journal = append(journal, len(recs))
			recs, of = append(recs, recordOf(r, os[i])), append(of, i)
		}
	}
	if len(recs) == 0 {
		return first, nil
	}
	stored, err := s.journal.RecordQueueOutcomes(ctx, recs)
	if err != nil {
		return nil, err
	}
	for _, k := range journal {
		first[of[k]] = true
	}
	if len(cached) == 0 {
		return first, nil
	}
	crs, cos := make([]*boxoffice.QueuedRequest, len(cached)), make([]boxoffice.QueueOutcome, len(cached))
	for j, k := range cached {
		crs[j], cos[j] = entries[of[k]].Request, stored[k].QueueOutcome
	}
	done, err := s.cache.FinishMany(ctx, crs, cos)
	if err != nil {
		return nil, err
	}
	for j, k := range cached {
		first[of[k]] = done[j]
	}
	return first, nil
}

// entriesBesides returns rs's entries: es's, and those es lacks read now.
func (s *State) entriesBesides(ctx context.Context, rs []*boxoffice.QueuedRequest, es []*boxoffice.QueueEntry) ([]*boxoffice.QueueEntry, error) {
	if es == nil {
		return s.Entries(ctx, rs)
	}
	var missing []int
	for i, e := range es {
		if e == nil {
			missing = append(missing, i)
		}
	}
	entries := slices.Clone(es)
	if len(missing) == 0 {
		return entries, nil
	}
	again := make([]*boxoffice.QueuedRequest, len(missing))
	for j, i := range missing {
		again[j] = rs[i]
	}
	read, err := s.Entries(ctx, again)
	if err != nil {
		return nil, err
	}
	for j, i := range missing {
		entries[i] = read[j]
	}
	return entries, nil
}

func recordOf(r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) boxoffice.QueueRecord {
	return boxoffice.QueueRecord{RequestID: r.ID, EventID: r.EventID, UserID: r.UserID, Position: r.Position, QueueOutcome: o}
}

// Open draws the pre-queue; see boxoffice.QueueState.
func (s *State) Open(ctx context.Context, eventID boxoffice.ID, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]*boxoffice.QueuedRequest, error) {
	return warmed(ctx, s, eventID, func() ([]*boxoffice.QueuedRequest, error) { return s.cache.Open(ctx, eventID, draw) })
}

// MarkSoldOut raises the event's sold-out mark in the cache. A cache
// rebuilt after losing its data starts without the mark: the next look at
// the event's seats sets it again (see sale's inventory).
func (s *State) MarkSoldOut(ctx context.Context, eventID boxoffice.ID) (int64, error) {
	return warmed(ctx, s, eventID, func() (int64, error) { return s.cache.MarkSoldOut(ctx, eventID) })
}

// MarkReleased records that the drawn pre-queue is in the log.
func (s *State) MarkReleased(ctx context.Context, eventID boxoffice.ID) error {
	return s.cache.MarkReleased(ctx, eventID)
}

// Progress returns the event's queue counters.
func (s *State) Progress(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, error) {
	return warmed(ctx, s, eventID, func() (boxoffice.QueueProgress, error) { return s.cache.Progress(ctx, eventID) })
}

// whole reports whether the cache's nodes are the ones of the last
// complete rebuild: none restarted or was replaced since.
func (s *State) whole(ctx context.Context) (bool, error) {
	epoch, err := s.cache.Epoch(ctx)
	if err != nil || epoch == nil {
		return false, err
	}
	nodes, err := s.cache.Nodes(ctx)
	if err != nil {
		return false, err
	}
	return slices.Equal(epoch, nodes), nil
}

// Watch checks every interval that the cache is whole and rebuilds it when
// it is not, until ctx ends. Every process using the state runs it, so a
// restart or a failover is noticed within an interval even when nobody is
// admitted or polling.
func (s *State) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if whole, err := s.whole(ctx); err == nil && !whole {
			s.startRebuild()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// startRebuild runs Rebuild in the background unless one runs here already.
func (s *State) startRebuild() {
	s.mu.Lock()
	if s.rebuilding {
		s.mu.Unlock()
		return
	}
	s.rebuilding = true
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			s.rebuilding = false
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := s.Rebuild(ctx); err != nil {
			s.logger.Warn("queue state: rebuild", "err", err)
		}
	}()
}

// Ready returns once the cache is whole, rebuilding it first if it is not
// (the first start of a deployment, or Redis lost the state while no
// process watched). A process calls it before it serves.
func (s *State) Ready(ctx context.Context) error {
	whole, err := s.whole(ctx)
	if err != nil || whole {
		return err
	}
	return s.Rebuild(ctx)
}

// Rebuild restores the cache from the log and the journal and returns once
// it is whole: rebuilt here, or by another process that holds the rebuild
// lease meanwhile. Safe to run at any time: it only merges (see
// redis.QueueState.Restore).
func (s *State) Rebuild(ctx context.Context) error {
	for {
		release, err := s.leases.TryLease(ctx, "queue-rebuild", time.Minute)
		if err == nil {
			defer release()
			return s.rebuild(ctx)
		}
		if boxoffice.ErrorCode(err) != boxoffice.EIDEMINFLIGHT {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if whole, err := s.whole(ctx); err == nil && whole {
			return nil
		}
	}
}

func (s *State) rebuild(ctx context.Context) error {
	start := time.Now()
	before, err := s.cache.Nodes(ctx)
	if err != nil {
		return err
	}
	// Without an epoch this may be a deployment's first start, which lost
	// nothing: whether it was is known once the log has been read.
	epoch, err := s.cache.Epoch(ctx)
	if err != nil {
		return err
	}
	if epoch != nil {
		s.logger.Warn("queue state: the cache lost data (a Redis node restarted or failed over), rebuilding it from the request log and the outcome journal",
			"nodes", len(before), "settle", s.Settle)
	} else {
		s.logger.Info("queue state: no complete cache recorded, building it from the request log and the outcome journal",
			"nodes", len(before), "settle", s.Settle)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.Settle):
	}

	type eventState struct {
		admitted int64
		// waiting: the pre-queue's requests not drawn or decided yet;
		// drawn: the requests seen with a position (a drawn copy follows
		// its first record in its partition, which is keyed by user; the
		// set guards that order all the same: a request drawn already must
		// never go back to the pre-queue, where the draw would give it a
		// second position).
		waiting map[boxoffice.ID]*boxoffice.QueuedRequest
		drawn   map[boxoffice.ID]bool
	}
	events := map[boxoffice.ID]*eventState{}
	var requests int
	err = s.log.Replay(ctx, func(batch []*boxoffice.QueuedRequest) error {
		requests += len(batch)
		ids := make([]boxoffice.ID, len(batch))
		for i, r := range batch {
			ids[i] = r.ID
		}
		recs, err := s.journal.QueueRecords(ctx, ids)
		if err != nil {
			return err
		}
		byEvent := map[boxoffice.ID][]*boxoffice.QueueEntry{}
		for _, r := range batch {
			ev := events[r.EventID]
			if ev == nil {
				ev = &eventState{waiting: map[boxoffice.ID]*boxoffice.QueuedRequest{}, drawn: map[boxoffice.ID]bool{}}
				events[r.EventID] = ev
			}
			e := &boxoffice.QueueEntry{Request: r, Status: boxoffice.QueueQueued}
			rec, decided := recs[r.ID]
			if r.Position == 0 {
				e.Status = boxoffice.QueueWaiting
				if !ev.drawn[r.ID] && !decided {
					ev.waiting[r.ID] = r
				}
			} else {
				ev.admitted = max(ev.admitted, r.Position)
				ev.drawn[r.ID] = true
				delete(ev.waiting, r.ID)
			}
			if decided {
				e.Status, e.Reason, e.Message = rec.Status, rec.Reason, rec.Message
				e.BookingID, e.HeldUntil, e.FinishedAt = rec.BookingID, rec.HeldUntil, rec.FinishedAt
				delete(ev.waiting, r.ID)
			}
			byEvent[r.EventID] = append(byEvent[r.EventID], e)
		}
		for ev, entries := range byEvent {
			if err := s.cache.Restore(ctx, ev, entries); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ids := make([]boxoffice.ID, 0, len(events))
	for id := range events {
		ids = append(ids, id)
	}
	served, err := s.journal.QueueServed(ctx, ids)
	if err != nil {
		return err
	}
	for id, ev := range events {
		waiting := make([]*boxoffice.QueuedRequest, 0, len(ev.waiting))
		for _, r := range ev.waiting {
			waiting = append(waiting, r)
		}
		// The pre-queue in arrival order (the draw shuffles it anyway).
		slices.SortFunc(waiting, func(a, b *boxoffice.QueuedRequest) int {
			if c := a.EnqueuedAt.Compare(b.EnqueuedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		if err := s.cache.Seal(ctx, id, ev.admitted, int64(len(ev.drawn)), served[id], waiting); err != nil {
			return err
		}
	}
	after, err := s.cache.Nodes(ctx)
	if err != nil {
		return err
	}
	if !slices.Equal(before, after) {
		return errors.New("a Redis node restarted during the rebuild; it runs again")
	}
	if err := s.cache.SetEpoch(ctx, after); err != nil {
		return err
	}
	level := slog.LevelWarn
	if epoch == nil && requests == 0 {
		level = slog.LevelInfo // a first start: nothing was there to lose
	}
	s.logger.Log(ctx, level, "queue state: rebuilt", "events", len(events), "requests", requests,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}
