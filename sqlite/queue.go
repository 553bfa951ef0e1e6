package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"sync"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/snowflake"
)

// Queue is the flash-sale queue of the embedded default: the QueueState
// and the RequestLog in the store's file. Admit commits the request, so
// Append has nothing left to do; Consume reads queued requests in log
// order. It is safe for concurrent use.
type Queue struct {
	s *Store
	// wake is poked by Admit and Open so an idle consumer looks at once
	// instead of at its next poll.
	wake chan struct{}
	// PollInterval is how often an idle Consume looks for work without
	// being woken (other processes on the same file); default 100ms.
	PollInterval time.Duration
	// BatchSize bounds a batch handed to Consume's handler; default 256.
	BatchSize int

	// taken is the log_seq up to which this process's consumers have taken
	// the log: each Consume takes the batch after it, so that two workers
	// decide different requests instead of reading the same ones and
	// waiting on each other's leases.
	mu    sync.Mutex
	taken int64
	turn  <-chan struct{} // closed when the last batch taken has held

	// drawChunk overrides the const of that name, and afterChunk, if set,
	// runs after each chunk of a draw is written (its error stops the draw
	// there, as a crash would): for tests (export_test.go).
	drawChunk  int
	afterChunk func(chunk int) error
}

var (
	_ boxoffice.QueueState = (*Queue)(nil)
	_ boxoffice.RequestLog = (*Queue)(nil)
)

// Queue returns the store's queue.
func (s *Store) Queue() *Queue {
	return &Queue{s: s, wake: make(chan struct{}, 1)}
}

func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

const queueColumns = `id, event_id, user_id, idempotency_key, request_hash, seat_ids, best, position, enqueued_at,
	estimated_wait, status, reason, message, booking_id, held_until, finished_at`

// scanEntry reads a row of queueColumns, then extra columns into extra.
func scanEntry(row interface{ Scan(...any) error }, extra ...any) (*boxoffice.QueueEntry, error) {
	var (
		r                      boxoffice.QueuedRequest
		e                      = boxoffice.QueueEntry{Request: &r}
		seats, status          string
		best                   sql.NullString
		enqueued               int64
		booking, held, finishd sql.NullInt64
	)
	dest := append([]any{&r.ID, &r.EventID, &r.UserID, &r.IdempotencyKey, &r.RequestHash, &seats, &best, &r.Position, &enqueued,
		&r.EstimatedWait, &status, &e.Reason, &e.Message, &booking, &held, &finishd}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(seats), &r.SeatIDs); err != nil {
		return nil, err
	}
	if best.Valid {
		r.Best = new(boxoffice.BestAvailable)
		if err := json.Unmarshal([]byte(best.String), r.Best); err != nil {
			return nil, err
		}
	}
	r.EnqueuedAt = fromMillis(enqueued)
	e.Status = boxoffice.QueueStatus(status)
	e.BookingID = boxoffice.ID(booking.Int64)
	if held.Valid {
		e.HeldUntil = fromMillis(held.Int64)
	}
	if finishd.Valid {
		e.FinishedAt = fromMillis(finishd.Int64)
	}
	return &e, nil
}

// Admit records r; see boxoffice.QueueState.
func (q *Queue) Admit(ctx context.Context, r *boxoffice.QueuedRequest, maxLive int, preQueue bool) (*boxoffice.QueueEntry, bool, error) {
	return boxoffice.AdmitOne(ctx, q, r, maxLive, preQueue)
}

// AdmitMany records a batch in one write transaction (see
// boxoffice.QueueState) with a few statements, not three per request: the
// idempotency look-ups, the users' live entries and the events' counters
// read once each, the requests decided in order in Go, then the new rows
// in multi-row INSERTs and one counter write per event. The admission runs
// on the store's one writer, so every statement saved is front-door
// throughput (docs/benchmarks.md). The look-ups take the batch as one JSON
// array, one prepared statement whatever the batch's size
// (TestAdmissionStatementsProbeTheirRows).
func (q *Queue) AdmitMany(ctx context.Context, as []boxoffice.Admission) ([]boxoffice.Admitted, error) {
	type encoded struct {
		seats string
		best  any // NULL for named seats
	}
	enc := make([]encoded, len(as))
	for i, a := range as {
		seats, err := json.Marshal(a.Request.SeatIDs)
		if err != nil {
			return nil, err
		}
		enc[i].seats = string(seats)
		if a.Request.Best != nil {
			b, err := json.Marshal(a.Request.Best)
			if err != nil {
				return nil, err
			}
			enc[i].best = string(b)
		}
	}
	var out []boxoffice.Admitted
	err := q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		out, err = admitBatch(ctx, tx, as, func(i int) (string, any) { return enc[i].seats, enc[i].best })
		return err
	})
	if err != nil {
		return nil, translate(err, "database")
	}
	for _, o := range out {
		if o.Err == nil && !o.Replay {
			q.poke()
			break
		}
	}
	return out, nil
}

// The batch's statements. Each takes a JSON array and probes the rows it
// names through an index (TestAdmissionStatementsProbeTheirRows).
const (
	// admitKeysSQL reads the requests of [[user, key], ...].
	admitKeysSQL = `SELECT ` + queueColumns + ` FROM queue_requests
		WHERE (user_id, idempotency_key) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))`
	// admitLiveSQL counts the live entries of [user, ...] by event, through
	// the key index (migration 0012); the caller keeps its events' counts.
	admitLiveSQL = `SELECT event_id, user_id, count(*) FROM queue_requests
		WHERE user_id IN (SELECT value FROM json_each(?))
		  AND status IN ('waiting', 'queued')
		GROUP BY event_id, user_id`
	// admitCountersSQL reads the counters of [event, ...].
	admitCountersSQL = `SELECT event_id, admitted, waiting, opened FROM queue_events
		WHERE event_id IN (SELECT value FROM json_each(?))`
	admitCounterSQL = `INSERT INTO queue_events (event_id, admitted, waiting, opened) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (event_id) DO UPDATE SET admitted = excluded.admitted, waiting = excluded.waiting, opened = excluded.opened`
)

// insertAdmitted writes admitted requests, each the 13 values of its
// columns, in few statements.
var insertAdmitted = newMultiInsert(`INSERT INTO queue_requests (id, event_id, user_id, idempotency_key, request_hash,
	seat_ids, best, position, prequeued, log_seq, status, enqueued_at, estimated_wait)`, 13, 32, 8, 1)

// queueCounters is a queue_events row as a batch changes it.
type queueCounters struct {
	admitted, waiting int64
	opened            bool
	changed           bool // written back at the end of the batch
}

// admitBatch decides as in order inside the batch's transaction, each as
// if it ran alone after the ones before it: a request sees the earlier
// ones' rows (a key used twice replays the first, a second live entry of
// a user is refused) and counters. A refusal is its answer's Err, having
// written nothing; err fails the batch. encoded gives a request's seats
// and best-available ask as stored.
func admitBatch(ctx context.Context, tx *txn, as []boxoffice.Admission, encoded func(i int) (seats string, best any)) ([]boxoffice.Admitted, error) {
	type userKey struct{ user, key string }
	type eventUser struct {
		event boxoffice.ID
		user  string
	}
	keys := make([][2]string, len(as))
	users := make([]string, len(as))
	events := make([]boxoffice.ID, 0, 1)
	counters := map[boxoffice.ID]*queueCounters{}
	for i, a := range as {
		r := a.Request
		keys[i] = [2]string{r.UserID, r.IdempotencyKey}
		users[i] = r.UserID
		if counters[r.EventID] == nil {
			counters[r.EventID] = &queueCounters{}
			events = append(events, r.EventID)
		}
	}

	byKey := make(map[userKey]*boxoffice.QueueEntry, len(as))
	rows, err := tx.QueryContext(ctx, admitKeysSQL, mustJSON(keys))
	if err != nil {
		return nil, err
	}
	found, err := collect(rows, func(sc scanner) (*boxoffice.QueueEntry, error) { return scanEntry(sc) })
	if err != nil {
		return nil, err
	}
	for _, e := range found {
		byKey[userKey{e.Request.UserID, e.Request.IdempotencyKey}] = e
	}
	live := make(map[eventUser]int, len(as))
	rows, err = tx.QueryContext(ctx, admitLiveSQL, mustJSON(users))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var eu eventUser
		var n int
		if err := rows.Scan(&eu.event, &eu.user, &n); err != nil {
			rows.Close()
			return nil, err
		}
		live[eu] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.QueryContext(ctx, admitCountersSQL, jsonIDs(events))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id boxoffice.ID
		var c queueCounters
		if err := rows.Scan(&id, &c.admitted, &c.waiting, &c.opened); err != nil {
			rows.Close()
			return nil, err
		}
		*counters[id] = c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	seq, err := nextLogSeq(ctx, tx)
	if err != nil {
		return nil, err
	}

	out := make([]boxoffice.Admitted, len(as))
	var insert []any // the rows of insertAdmitted
	for i, a := range as {
		r := a.Request
		uk, eu := userKey{r.UserID, r.IdempotencyKey}, eventUser{r.EventID, r.UserID}
		if e := byKey[uk]; e != nil {
			if e.Request.RequestHash != r.RequestHash {
				out[i].Err = boxoffice.Errorf(boxoffice.EIDEMMISMATCH, "this idempotency key was already used for a different request")
			} else {
				out[i] = boxoffice.Admitted{Entry: copyEntry(e), Replay: true}
			}
			continue
		}
		if live[eu] >= a.MaxLive {
			out[i].Err = boxoffice.Errorf(boxoffice.ECONFLICT, "you already have a request in this event's queue")
			continue
		}
		// Until the pre-queue has its positions nobody gets one: a request
		// just after the opening instant joins the draw rather than jump it.
		c := counters[r.EventID]
		c.changed = true
		row := *r
		row.Position, row.EstimatedWait = 0, nil
		status := boxoffice.QueueWaiting
		var logSeq any // NULL in the pre-queue
		if c.opened || !(a.PreQueue || c.waiting > 0) {
			c.admitted++
			c.opened = true
			row.Position, status = c.admitted, boxoffice.QueueQueued
			if a.Wait != nil {
				if w := a.Wait(c.admitted); !math.IsNaN(w) && !math.IsInf(w, 0) {
					row.EstimatedWait = &w
				}
			}
			logSeq = seq
			seq++
		} else {
			c.waiting++
		}
		seats, best := encoded(i)
		var wait any
		if row.EstimatedWait != nil {
			wait = *row.EstimatedWait
		}
		insert = append(insert, int64(row.ID), int64(row.EventID), row.UserID, row.IdempotencyKey, row.RequestHash,
			seats, best, row.Position, status == boxoffice.QueueWaiting, logSeq, string(status), millis(row.EnqueuedAt), wait)
		e := &boxoffice.QueueEntry{Request: &row, Status: status}
		out[i].Entry = e
		byKey[uk] = e
		live[eu]++
	}
	if len(insert) == 0 {
		return out, nil
	}
	if err := insertAdmitted.exec(ctx, tx, insert); err != nil {
		return nil, err
	}
	for _, id := range events {
		c := counters[id]
		if !c.changed {
			continue
		}
		if _, err := tx.ExecContext(ctx, admitCounterSQL, id, c.admitted, c.waiting, c.opened); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// copyEntry is a copy of e that its receiver may change: a key twice in
// a batch is answered twice.
func copyEntry(e *boxoffice.QueueEntry) *boxoffice.QueueEntry {
	c, r := *e, *e.Request
	c.Request = &r
	return &c
}

// mustJSON is v as a JSON text for json_each: v holds only strings,
// numbers, booleans and nulls, which always encode.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// nextLogSeqSQL is the log's next place, after the last one given and the
// last one a draw in progress reserved: one look-up at the end of
// queue_requests_log and one of queue_events_draw_end.
const nextLogSeqSQL = `SELECT max(
	coalesce((SELECT max(log_seq) FROM queue_requests), 0),
	coalesce((SELECT max(draw_end) FROM queue_events WHERE draw_end IS NOT NULL), 1) - 1) + 1`

func nextLogSeq(ctx context.Context, tx *txn) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, nextLogSeqSQL).Scan(&seq)
	return seq, err
}

// EntryByKey reads an entry by its user and key.
func (q *Queue) EntryByKey(ctx context.Context, eventID boxoffice.ID, userID, key string) (*boxoffice.QueueEntry, error) {
	e, err := scanEntry(q.s.queryRow(ctx, `SELECT `+queueColumns+` FROM queue_requests
		WHERE user_id = ? AND idempotency_key = ? AND event_id = ?`, userID, key, eventID))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request with this key")
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return e, nil
}

// entriesSQL reads the entries of a JSON array of ids, one primary-key
// probe each (TestBatchReadsProbeTheirRows).
const entriesSQL = `SELECT ` + queueColumns + ` FROM queue_requests WHERE id IN (SELECT value FROM json_each(?))`

// Entries reads the entries of a batch in one statement: out[i] is
// rs[i]'s entry, nil if it has none. One statement, not one per request:
// the drain reads every batch's entries, and a statement's fixed cost in
// database/sql and the driver was most of a primary-key look-up's (the
// look-ups were more than half of the embedded drain worker's CPU in the
// 200k drill).
func (q *Queue) Entries(ctx context.Context, rs []*boxoffice.QueuedRequest) ([]*boxoffice.QueueEntry, error) {
	out := make([]*boxoffice.QueueEntry, len(rs))
	if len(rs) == 0 {
		return out, nil
	}
	ids := make([]boxoffice.ID, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	rows, err := q.s.query(ctx, entriesSQL, jsonIDs(ids))
	if err != nil {
		return nil, translate(err, "database")
	}
	found, err := collect(rows, func(sc scanner) (*boxoffice.QueueEntry, error) { return scanEntry(sc) })
	if err != nil {
		return nil, translate(err, "database")
	}
	byID := make(map[boxoffice.ID]*boxoffice.QueueEntry, len(found))
	for _, e := range found {
		byID[e.Request.ID] = e
	}
	given := make(map[boxoffice.ID]bool, len(found))
	for i, r := range rs {
		e := byID[r.ID]
		switch {
		case e == nil:
		case given[r.ID]: // a request twice in the batch: each its own copy
			cp, req := *e, *e.Request
			cp.Request = &req
			out[i] = &cp
		default:
			out[i], given[r.ID] = e, true
		}
	}
	return out, nil
}

// Entry returns a request's entry, or ENOTFOUND.
func (q *Queue) Entry(ctx context.Context, id boxoffice.ID) (*boxoffice.QueueEntry, error) {
	e, err := scanEntry(q.s.queryRow(ctx, `SELECT `+queueColumns+` FROM queue_requests WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no queued request %d", id)
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	return e, nil
}

// Finish records the outcome of a queued request once.
func (q *Queue) Finish(ctx context.Context, r *boxoffice.QueuedRequest, o boxoffice.QueueOutcome) (bool, error) {
	return boxoffice.FinishOne(ctx, q, r, o)
}

// finishSQL records the outcomes of a JSON array of [id, status, reason,
// message, booking id or null, held until or null, finished at], each
// request once and only while it is queued; it returns the requests it
// changed. The array drives the update, one primary-key probe per outcome
// (TestBatchReadsProbeTheirRows).
const finishSQL = `
	UPDATE queue_requests AS q
	SET status = j.value ->> 1, reason = j.value ->> 2, message = j.value ->> 3,
	    booking_id = j.value ->> 4, held_until = j.value ->> 5, finished_at = j.value ->> 6
	FROM json_each(?) AS j
	WHERE q.id = j.value ->> 0 AND q.status = 'queued'
	RETURNING id, event_id`

// FinishMany records a batch of outcomes in one transaction: one statement
// for the outcomes and one per event for its served count, not two per
// request, on the one writer that the front door and the confirms share. A
// request twice in the batch gets its first outcome, as one after the
// other would.
func (q *Queue) FinishMany(ctx context.Context, rs []*boxoffice.QueuedRequest, os []boxoffice.QueueOutcome) ([]bool, error) {
	if err := boxoffice.CheckOutcomes(rs, os); err != nil {
		return nil, err
	}
	first := make([]bool, len(rs))
	if len(rs) == 0 {
		return first, nil
	}
	at := make(map[boxoffice.ID]int, len(rs)) // a request's first place in the batch
	outcomes := make([][7]any, 0, len(rs))
	for i, r := range rs {
		if _, twice := at[r.ID]; twice {
			continue
		}
		at[r.ID] = i
		o := os[i]
		var booking, held any
		if o.BookingID != 0 {
			booking = int64(o.BookingID)
		}
		if !o.HeldUntil.IsZero() {
			held = millis(o.HeldUntil)
		}
		outcomes = append(outcomes, [7]any{int64(r.ID), string(o.Status), o.Reason, o.Message, booking, held, millis(o.FinishedAt)})
	}
	arg, err := json.Marshal(outcomes)
	if err != nil {
		return nil, err
	}
	err = q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		clear(first)
		rows, err := tx.QueryContext(ctx, finishSQL, string(arg))
		if err != nil {
			return err
		}
		served := map[boxoffice.ID]int64{}
		for rows.Next() {
			var id, eventID boxoffice.ID
			if err := rows.Scan(&id, &eventID); err != nil {
				rows.Close()
				return err
			}
			first[at[id]] = true
			served[eventID]++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for eventID, n := range served {
			if _, err := tx.ExecContext(ctx, `UPDATE queue_events SET served = served + ? WHERE event_id = ?`, n, eventID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, translate(err, "database")
	}
	return first, nil
}

// drawChunk is how many drawn requests one write transaction gives their
// positions (40–80 ms of the writer here): the burst at the opening, and
// every other event's writes, go between the chunks. One UPDATE of a
// 60,000-request pre-queue held the writer 1.1 s. Chunks of 1,024 or 2,048
// drew it out over the burst and slowed the drain and the reserves in the
// drill (docs/benchmarks.md, stop 55).
const drawChunk = 4096

// drawChunkSQL gives a chunk of the drawn requests, a JSON array of ids
// in drawn order, consecutive positions from ?1 and their places in the
// log from ?2: one primary-key probe each (TestBatchReadsProbeTheirRows).
// A request given its place before (a draw cut short, done again) is left
// as it is.
const drawChunkSQL = `
	UPDATE queue_requests AS q
	SET status = 'queued', position = ?1 + j.key, log_seq = ?2 + j.key
	FROM json_each(?3) AS j
	WHERE q.id = j.value AND q.status = 'waiting'`

// pool is a pre-queue frozen for its draw: its requests get the positions
// after base and the log's places [seq, end), in the draw's order; those
// before fence are written.
type pool struct{ base, seq, end, fence int64 }

// Open gives the pre-queue its positions, in the order draw gives, in
// steps as the production queue state does, so that the opening's burst
// never waits for the whole draw:
//  1. one transaction freezes the pre-queue and opens the event: its
//     positions and places in the log are reserved, and later arrivals
//     are queued behind them at once;
//  2. the pool is drawn and written drawChunk requests a transaction,
//     in the log's order; each moves the draw's fence past its chunk;
//  3. one transaction clears what the draw reserved.
//
// No consumer reads the log at or past the fence (nextSQL): nothing queued
// after the pool is served before it, and the drain starts on the drawn
// requests as their chunks are written.
// A draw cut short (a crash, an error) leaves the event opened with its
// pool reserved; the next Open draws the same pool again (the draw is a
// function of its requests: the event's seed) and gives the requests
// still waiting the positions past its fence (drawPool).
func (q *Queue) Open(ctx context.Context, eventID boxoffice.ID, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]*boxoffice.QueuedRequest, error) {
	p, err := q.closePreQueue(ctx, eventID)
	if err != nil {
		return nil, translate(err, "database")
	}
	if p != nil {
		if err := q.drawPool(ctx, eventID, *p, draw); err != nil {
			return nil, translate(err, "database")
		}
	}
	q.poke()
	// What the pre-queue held, opened now or before, in position order.
	rows, err := q.s.query(ctx, `SELECT `+queueColumns+` FROM queue_requests
		WHERE event_id = ? AND prequeued = 1 ORDER BY position`, eventID)
	if err != nil {
		return nil, translate(err, "database")
	}
	defer rows.Close()
	var out []*boxoffice.QueuedRequest
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, translate(err, "database")
		}
		out = append(out, e.Request)
	}
	return out, translate(rows.Err(), "database")
}

// closePreQueue opens eventID, freezing its pre-queue into the pool to
// draw (step 1 of Open): nil when there is nothing (left) to draw.
func (q *Queue) closePreQueue(ctx context.Context, eventID boxoffice.ID) (*pool, error) {
	var p *pool
	err := q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO queue_events (event_id) VALUES (?) ON CONFLICT DO NOTHING`, eventID); err != nil {
			return err
		}
		var (
			opened                bool
			admitted              int64
			base, seq, end, fence sql.NullInt64
		)
		if err := tx.QueryRowContext(ctx, `SELECT opened, admitted, draw_base, draw_seq, draw_end, draw_fence FROM queue_events WHERE event_id = ?`,
			eventID).Scan(&opened, &admitted, &base, &seq, &end, &fence); err != nil {
			return err
		}
		if opened {
			if seq.Valid { // a draw cut short
				p = &pool{base.Int64, seq.Int64, end.Int64, fence.Int64}
			}
			return nil
		}
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM queue_requests WHERE event_id = ? AND status = 'waiting'`,
			eventID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			_, err := tx.ExecContext(ctx, `UPDATE queue_events SET opened = 1, waiting = 0 WHERE event_id = ?`, eventID)
			return err
		}
		first, err := nextLogSeq(ctx, tx)
		if err != nil {
			return err
		}
		p = &pool{admitted, first, first + n, first}
		_, err = tx.ExecContext(ctx, `UPDATE queue_events SET opened = 1, waiting = 0, admitted = ?2,
			draw_base = ?3, draw_seq = ?4, draw_end = ?5, draw_fence = ?4 WHERE event_id = ?1`, eventID, admitted+n, p.base, p.seq, p.end)
		return err
	})
	return p, err
}

// drawPoolSQL reads a frozen pool: the event's requests still waiting
// (position 0), and those with a position of the pool's, in (?2, ?3];
// through queue_requests_waiting and queue_requests_position.
const drawPoolSQL = `
	SELECT id, 0 FROM queue_requests WHERE event_id = ?1 AND status = 'waiting'
	UNION ALL
	SELECT id, position FROM queue_requests WHERE event_id = ?1 AND position > ?2 AND position <= ?3
	ORDER BY id`

// drawPool draws p and writes it (steps 2 and 3 of Open). The pool is the
// requests still waiting and those a draw cut short gave their positions,
// found again by those positions: what the pre-queue held when it froze.
func (q *Queue) drawPool(ctx context.Context, eventID boxoffice.ID, p pool, draw func(ids []boxoffice.ID) []boxoffice.ID) error {
	n := p.end - p.seq
	rows, err := q.s.query(ctx, drawPoolSQL, eventID, p.base, p.base+n)
	if err != nil {
		return err
	}
	type member struct{ id, pos int64 } // pos 0: still waiting
	pool, err := collect(rows, func(r scanner) (member, error) {
		var m member
		return m, r.Scan(&m.id, &m.pos)
	})
	if err != nil {
		return err
	}
	ids := make([]boxoffice.ID, len(pool))
	waiting := make(map[boxoffice.ID]bool, len(pool))
	for i, m := range pool {
		ids[i] = boxoffice.ID(m.id)
		waiting[ids[i]] = m.pos == 0
	}
	if ids, err = boxoffice.ApplyDraw(draw, ids); err != nil {
		return err
	}
	// The requests still waiting, in drawn order, take the positions
	// whose places are past the fence, in order: all of the pool's on a
	// first draw, and on a draw cut short those after the ones it wrote,
	// as the whole draw would have given them (the draw is a function of
	// the pool). Never a position before the fence, which the consumers
	// may have read past: one a drawn request held before it was decided
	// and purged stays a gap.
	var run []boxoffice.ID
	for _, id := range ids {
		if waiting[id] {
			run = append(run, id)
		}
	}
	from := p.base + 1 + (p.fence - p.seq) // the first position past the fence
	if from+int64(len(run)) > p.base+n+1 {
		return boxoffice.Errorf(boxoffice.EINTERNAL, "the pre-queue of event %d: %d requests waiting for %d positions", eventID, len(run), p.base+n+1-from)
	}
	size := q.drawChunk
	if size <= 0 {
		size = drawChunk
	}
	for i, chunk := 0, 0; i < len(run); i, chunk = i+size, chunk+1 {
		part := run[i:min(i+size, len(run))]
		place := p.fence + int64(i) // the place of position from + i
		err := q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
			if _, err := tx.ExecContext(ctx, drawChunkSQL, from+int64(i), place, jsonIDs(part)); err != nil {
				return err
			}
			// The consumers may go on into the chunk (woken below).
			_, err := tx.ExecContext(ctx, `UPDATE queue_events SET draw_fence = max(draw_fence, ?) WHERE event_id = ?`,
				place+int64(len(part)), eventID)
			return err
		})
		if err == nil {
			q.poke()
			if q.afterChunk != nil {
				err = q.afterChunk(chunk)
			}
		}
		if err != nil {
			return err
		}
	}
	return q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE queue_events SET draw_base = NULL, draw_seq = NULL, draw_end = NULL, draw_fence = NULL
			WHERE event_id = ?`, eventID)
		return err
	})
}

// purgeDecidedSQL deletes up to ?3 requests decided before ?2 (millis),
// walking the primary key below ?1, the first id minted at ?2: a request
// decided then was admitted before. The row that holds the log's highest
// place stays, whatever its age: nextLogSeq counts on from it, and the
// consumers' places in the log must never be given out again.
const purgeDecidedSQL = `
	DELETE FROM queue_requests WHERE id IN (
	    SELECT id FROM queue_requests
	    WHERE id < ?1 AND status IN ('held', 'rejected') AND finished_at < ?2
	      AND (log_seq IS NULL OR log_seq < (SELECT max(log_seq) FROM queue_requests))
	    LIMIT ?3)`

// PurgeDecided deletes up to limit requests whose outcome was decided
// before cutoff and says how many. The table is the queue's state and its
// log at once, and nothing else ends its rows: production's entries expire
// in Redis (redis.QueueState.TTL), these are purged so. A purged request's
// status reads as not found, and its idempotency key is free again, as
// after the TTL in production. Live requests (waiting, queued) are kept
// however old they are.
func (q *Queue) PurgeDecided(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	below := max(snowflake.Millis(cutoff), 0) << snowflake.TimeShift
	var n int64
	err := q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		res, err := tx.ExecContext(ctx, purgeDecidedSQL, below, millis(cutoff), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), translate(err, "database")
}

// Progress returns the event's queue counters.
func (q *Queue) Progress(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, error) {
	var p boxoffice.QueueProgress
	var drawn bool
	err := q.s.queryRow(ctx, `SELECT admitted, served, waiting, opened, sold_out_upto, draw_fence IS NULL FROM queue_events WHERE event_id = ?`, eventID).
		Scan(&p.Admitted, &p.Served, &p.Waiting, &p.Opened, &p.SoldOutUpTo, &drawn)
	if err == sql.ErrNoRows {
		return p, nil
	}
	// The drawn requests are in the log (the table is the log) once the
	// draw's last step has lifted its fence.
	p.Released = p.Opened && drawn
	return p, translate(err, "database")
}

// MarkSoldOut raises the event's sold-out mark to its highest position.
func (q *Queue) MarkSoldOut(ctx context.Context, eventID boxoffice.ID) (int64, error) {
	var upTo int64
	err := q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		err := tx.QueryRowContext(ctx, `UPDATE queue_events SET sold_out_upto = max(sold_out_upto, admitted)
			WHERE event_id = ? RETURNING sold_out_upto`, eventID).Scan(&upTo)
		if err == sql.ErrNoRows {
			return nil // no queue: nothing was given a position
		}
		return err
	})
	return upTo, translate(err, "database")
}

// MarkReleased has nothing to record: see Progress.
func (q *Queue) MarkReleased(ctx context.Context, eventID boxoffice.ID) error { return nil }

// Append has nothing to do: Admit and Open committed the requests, and
// Consume reads them from the table.
func (q *Queue) Append(ctx context.Context, rs ...*boxoffice.QueuedRequest) error { return nil }

// Consume hands queued requests to handle in log order until ctx ends. A
// batch whose handler fails is handed again after a pause; requests the
// handler finished are not (they are no longer queued). After a restart it
// starts from the oldest request still queued, so a crash mid-batch loses
// nothing.
//
// The consumers of one process share the log: each takes the next batch
// after the ones already taken and keeps it until it is handled, so two
// workers decide two batches at once (one's reads beside the other's
// writes). The handler's context carries the batch's turn to hold
// (boxoffice.HoldTurn), after the batch taken before it, so the holds
// follow the queue's order across the consumers.
func (q *Queue) Consume(ctx context.Context, handle func(ctx context.Context, batch []*boxoffice.QueuedRequest) error) error {
	poll := q.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	size := q.BatchSize
	if size <= 0 {
		size = 256
	}
	backoff := poll
	for ctx.Err() == nil {
		from, batch, last, turn, err := q.take(ctx, size)
		if err == nil && len(batch) > 0 {
			if len(batch) == size {
				q.poke() // there may be more: wake another idle consumer
			}
			q.serve(ctx, from, last, size, batch, turn, handle, poll)
			backoff = poll
			continue
		}
		wait := poll
		if err != nil {
			// A failing store: look again, slower.
			wait, backoff = backoff, min(2*backoff, 5*time.Second)
		}
		select {
		case <-ctx.Done():
		case <-q.wake:
		case <-time.After(wait):
		}
	}
	return nil
}

// take gives this consumer the batch after the ones the process's
// consumers have taken: the requests in (from, last], and the turn of
// their holds, after the batch taken before.
func (q *Queue) take(ctx context.Context, size int) (from int64, batch []*boxoffice.QueuedRequest, last int64, turn *boxoffice.HoldTurn, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	from = q.taken
	batch, last, err = q.next(ctx, from, math.MaxInt64, size)
	if err == nil && len(batch) > 0 {
		q.taken = last
		turn, q.turn = boxoffice.NextHoldTurn(q.turn)
	}
	return from, batch, last, turn, err
}

// serve hands a taken batch to handle until it is handled; after a
// failure, slower each time, what is still queued of it. A consumer that
// stops first gives its batch back, for the others to take. The first
// handing carries the batch's turn to hold (boxoffice.HoldTurn), which is
// over when it returns, handled or not: a batch that failed holds again
// out of turn rather than hold the next ones up.
func (q *Queue) serve(ctx context.Context, from, last int64, size int, batch []*boxoffice.QueuedRequest, turn *boxoffice.HoldTurn, handle func(ctx context.Context, batch []*boxoffice.QueuedRequest) error, poll time.Duration) {
	err := func() error {
		defer turn.Done() // held or not, even if handle panics: the next batch's turn
		return handle(boxoffice.WithHoldTurn(ctx, turn), batch)
	}()
	if err == nil {
		return
	}
	backoff := poll
	for {
		select {
		case <-ctx.Done():
			q.mu.Lock()
			q.taken = min(q.taken, from)
			q.mu.Unlock()
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		batch, _, err = q.next(ctx, from, last, size)
		if err == nil && len(batch) == 0 {
			return // all decided meanwhile
		}
		if err == nil && handle(ctx, batch) == nil {
			return
		}
	}
}

// nextSQL reads queued requests in log order through queue_requests_todo,
// short of the first place a draw in progress has not written yet (see
// Open): the fence is read in the same statement, so in the same snapshot
// as the rows.
const nextSQL = `SELECT ` + queueColumns + `, log_seq FROM queue_requests
	WHERE status = 'queued' AND log_seq > ?1 AND log_seq <= ?2
	  AND log_seq < coalesce((SELECT min(draw_fence) FROM queue_events WHERE draw_fence IS NOT NULL), 9223372036854775807)
	ORDER BY log_seq LIMIT ?3`

// next reads up to n queued requests in (after, upTo].
func (q *Queue) next(ctx context.Context, after, upTo int64, n int) ([]*boxoffice.QueuedRequest, int64, error) {
	rows, err := q.s.query(ctx, nextSQL, after, upTo, n)
	if err != nil {
		return nil, 0, translate(err, "database")
	}
	defer rows.Close()
	var (
		out  []*boxoffice.QueuedRequest
		last int64
	)
	for rows.Next() {
		e, err := scanEntry(rows, &last)
		if err != nil {
			return nil, 0, translate(err, "database")
		}
		out = append(out, e.Request)
	}
	return out, last, translate(rows.Err(), "database")
}
