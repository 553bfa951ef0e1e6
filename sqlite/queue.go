package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/boxoffice/boxoffice"
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
// boxoffice.QueueState), three statements per request: the idempotency
// look-up and the live-entry count in one read, the event's counters in
// one upsert, the row. The admission runs on the store's one writer, so
// every statement saved is front-door throughput (docs/benchmarks.md).
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
		out = make([]boxoffice.Admitted, len(as)) // a retried transaction starts over
		for i, a := range as {
			var err error
			if out[i], err = admitTx(ctx, tx, a, enc[i].seats, enc[i].best); err != nil {
				return err
			}
		}
		return nil
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

// admitTx admits one request inside the batch's transaction; a refusal is
// the answer's Err, having written nothing, and err fails the batch.
func admitTx(ctx context.Context, tx *txn, a boxoffice.Admission, seats string, best any) (boxoffice.Admitted, error) {
	r := a.Request
	// The request with this key, if any, and the user's live entries.
	rows, err := tx.QueryContext(ctx, `SELECT `+queueColumns+`, idempotency_key = ?2 FROM queue_requests
		WHERE (user_id = ?1 AND idempotency_key = ?2)
		   OR (event_id = ?3 AND user_id = ?1 AND status IN ('waiting', 'queued'))`,
		r.UserID, r.IdempotencyKey, r.EventID)
	if err != nil {
		return boxoffice.Admitted{}, err
	}
	var entry *boxoffice.QueueEntry
	live := 0
	for rows.Next() {
		var same bool
		e, err := scanEntry(rows, &same)
		if err != nil {
			rows.Close()
			return boxoffice.Admitted{}, err
		}
		if same {
			entry = e
		}
		live++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return boxoffice.Admitted{}, err
	}
	switch {
	case entry != nil && entry.Request.RequestHash != r.RequestHash:
		return boxoffice.Admitted{Err: boxoffice.Errorf(boxoffice.EIDEMMISMATCH, "this idempotency key was already used for a different request")}, nil
	case entry != nil:
		return boxoffice.Admitted{Entry: entry, Replay: true}, nil
	case live >= a.MaxLive:
		return boxoffice.Admitted{Err: boxoffice.Errorf(boxoffice.ECONFLICT, "you already have a request in this event's queue")}, nil
	}
	// Until the pre-queue has its positions nobody gets one: a request
	// just after the opening instant joins the draw rather than jump it.
	// SET reads the row as it was, so the CASEs agree; the result says
	// which way it went (opened is set iff this one was queued).
	var admitted int64
	var opened bool
	if err := tx.QueryRowContext(ctx, `INSERT INTO queue_events (event_id, admitted, waiting, opened)
		VALUES (?1, NOT ?2, ?2, NOT ?2)
		ON CONFLICT (event_id) DO UPDATE SET
			admitted = admitted + (opened OR NOT (?2 OR waiting > 0)),
			waiting  = waiting + NOT (opened OR NOT (?2 OR waiting > 0)),
			opened   = opened OR NOT (?2 OR waiting > 0)
		RETURNING admitted, opened`, r.EventID, a.PreQueue).Scan(&admitted, &opened); err != nil {
		return boxoffice.Admitted{}, err
	}
	row := *r
	row.Position, row.EstimatedWait = 0, nil
	status := boxoffice.QueueWaiting
	if opened {
		row.Position, status = admitted, boxoffice.QueueQueued
		if a.Wait != nil {
			w := a.Wait(admitted)
			row.EstimatedWait = &w
		}
	}
	// log_seq: the log's order, max + 1 (one look-up in its index); NULL
	// in the pre-queue.
	if _, err := tx.ExecContext(ctx, `INSERT INTO queue_requests
		(id, event_id, user_id, idempotency_key, request_hash, seat_ids, best, position, prequeued, log_seq, status, enqueued_at, estimated_wait)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?11, ?7, ?8,
			CASE WHEN ?8 THEN NULL ELSE (SELECT coalesce(max(log_seq), 0) + 1 FROM queue_requests) END, ?9, ?10, ?12)`,
		row.ID, row.EventID, row.UserID, row.IdempotencyKey, row.RequestHash, seats, row.Position,
		status == boxoffice.QueueWaiting, string(status), millis(row.EnqueuedAt), best, row.EstimatedWait); err != nil {
		return boxoffice.Admitted{}, err
	}
	return boxoffice.Admitted{Entry: &boxoffice.QueueEntry{Request: &row, Status: status}}, nil
}

func nextLogSeq(ctx context.Context, tx *txn) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT coalesce(max(log_seq), 0) + 1 FROM queue_requests`).Scan(&seq)
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

// Open gives the pre-queue its positions, in the order draw gives.
func (q *Queue) Open(ctx context.Context, eventID boxoffice.ID, draw func(ids []boxoffice.ID) []boxoffice.ID) ([]*boxoffice.QueuedRequest, error) {
	err := q.s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO queue_events (event_id) VALUES (?) ON CONFLICT DO NOTHING`, eventID); err != nil {
			return err
		}
		var opened bool
		var admitted int64
		if err := tx.QueryRowContext(ctx, `SELECT opened, admitted FROM queue_events WHERE event_id = ?`, eventID).Scan(&opened, &admitted); err != nil {
			return err
		}
		if opened {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM queue_requests WHERE event_id = ? AND status = 'waiting' ORDER BY id`, eventID)
		if err != nil {
			return err
		}
		var ids []boxoffice.ID
		for rows.Next() {
			var id boxoffice.ID
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if ids, err = boxoffice.ApplyDraw(draw, ids); err != nil {
			return err
		}
		seq, err := nextLogSeq(ctx, tx)
		if err != nil {
			return err
		}
		for i, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE queue_requests SET status = 'queued', position = ?, log_seq = ? WHERE id = ?`,
				admitted+int64(i)+1, seq+int64(i), id); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE queue_events SET opened = 1, waiting = 0, admitted = ? WHERE event_id = ?`,
			admitted+int64(len(ids)), eventID)
		return err
	})
	if err != nil {
		return nil, translate(err, "database")
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

// Progress returns the event's queue counters.
func (q *Queue) Progress(ctx context.Context, eventID boxoffice.ID) (boxoffice.QueueProgress, error) {
	var p boxoffice.QueueProgress
	err := q.s.queryRow(ctx, `SELECT admitted, served, waiting, opened, sold_out_upto FROM queue_events WHERE event_id = ?`, eventID).
		Scan(&p.Admitted, &p.Served, &p.Waiting, &p.Opened, &p.SoldOutUpTo)
	if err == sql.ErrNoRows {
		return p, nil
	}
	// Open puts the drawn requests in the log in the same transaction.
	p.Released = p.Opened
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
func (q *Queue) Consume(ctx context.Context, handle func(ctx context.Context, batch []*boxoffice.QueuedRequest) error) error {
	poll := q.PollInterval
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	size := q.BatchSize
	if size <= 0 {
		size = 256
	}
	var after int64 // log_seq of the last request handled
	backoff := poll
	for ctx.Err() == nil {
		batch, last, err := q.next(ctx, after, size)
		if err == nil && len(batch) > 0 {
			if err = handle(ctx, batch); err == nil {
				after, backoff = last, poll
				continue
			}
		}
		if ctx.Err() != nil {
			break
		}
		wait := poll
		if err != nil {
			// A failing store or handler: retry the same batch, slower.
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

func (q *Queue) next(ctx context.Context, after int64, n int) ([]*boxoffice.QueuedRequest, int64, error) {
	rows, err := q.s.query(ctx, `SELECT `+queueColumns+`, log_seq FROM queue_requests
		WHERE status = 'queued' AND log_seq > ? ORDER BY log_seq LIMIT ?`, after, n)
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
