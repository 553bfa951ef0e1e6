package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// The queue's durable record of outcomes (queue_outcomes): written by the
// booking workers a batch at a time, read back by request id when the
// Redis state has lost an entry, and counted per event when it is rebuilt.

// RecordQueueOutcomes stores the outcomes of recs, a whole batch in one
// statement, and returns for each request the outcome now on record: its
// own, or the one an earlier delivery stored first (first wins).
func (s *Store) RecordQueueOutcomes(ctx context.Context, recs []boxoffice.QueueRecord) ([]boxoffice.QueueRecord, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	n := len(recs)
	ids, events, positions, bookings := make([]int64, n), make([]int64, n), make([]int64, n), make([]*int64, n)
	users, statuses, reasons, messages := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	held, finished := make([]*time.Time, n), make([]time.Time, n)
	for i, r := range recs {
		if !r.Status.Final() {
			return nil, boxoffice.Errorf(boxoffice.EINVALID, "outcome status %q is not final", r.Status)
		}
		ids[i], events[i], positions[i] = int64(r.RequestID), int64(r.EventID), r.Position
		users[i], statuses[i], reasons[i], messages[i] = r.UserID, string(r.Status), r.Reason, r.Message
		if r.BookingID != 0 {
			b := int64(r.BookingID)
			bookings[i] = &b
		}
		if !r.HeldUntil.IsZero() {
			h := ts(r.HeldUntil)
			held[i] = &h
		}
		finished[i] = ts(r.FinishedAt)
	}
	rows, err := s.pool.Query(ctx, `
		INSERT INTO queue_outcomes (request_id, event_id, user_id, position, status, reason, message,
		                            booking_id, held_until, finished_at)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[],
		                     $7::text[], $8::bigint[], $9::timestamptz[], $10::timestamptz[])
		ON CONFLICT (request_id) DO NOTHING
		RETURNING request_id`,
		ids, events, users, positions, statuses, reasons, messages, bookings, held, finished)
	if err != nil {
		return nil, translate(err)
	}
	written := map[boxoffice.ID]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		written[boxoffice.ID(id)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	out := make([]boxoffice.QueueRecord, n)
	var others []boxoffice.ID
	for i, r := range recs {
		out[i] = r
		if !written[r.RequestID] {
			others = append(others, r.RequestID)
		}
	}
	if len(others) == 0 {
		return out, nil
	}
	// A redelivery: the outcomes stored first are the answer.
	stored, err := s.QueueRecords(ctx, others)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		if st, ok := stored[r.RequestID]; ok {
			out[i] = st
		}
	}
	return out, nil
}

// QueueRecords returns the recorded outcomes of the requests in ids that
// have one.
func (s *Store) QueueRecords(ctx context.Context, ids []boxoffice.ID) (map[boxoffice.ID]boxoffice.QueueRecord, error) {
	out := make(map[boxoffice.ID]boxoffice.QueueRecord, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	raw := make([]int64, len(ids))
	for i, id := range ids {
		raw[i] = int64(id)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT request_id, event_id, user_id, position, status, reason, message, booking_id, held_until, finished_at
		FROM queue_outcomes WHERE request_id = ANY($1)`, raw)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			r       boxoffice.QueueRecord
			id, ev  int64
			booking *int64
			held    *time.Time
			status  string
		)
		if err := rows.Scan(&id, &ev, &r.UserID, &r.Position, &status, &r.Reason, &r.Message, &booking, &held, &r.FinishedAt); err != nil {
			return nil, translate(err)
		}
		r.RequestID, r.EventID, r.Status = boxoffice.ID(id), boxoffice.ID(ev), boxoffice.QueueStatus(status)
		if booking != nil {
			r.BookingID = boxoffice.ID(*booking)
		}
		if held != nil {
			r.HeldUntil = held.UTC()
		}
		r.FinishedAt = r.FinishedAt.UTC()
		out[r.RequestID] = r
	}
	return out, translate(rows.Err())
}

// QueueServed returns how many requests of each event have an outcome on
// record (events without any are left out).
func (s *Store) QueueServed(ctx context.Context, events []boxoffice.ID) (map[boxoffice.ID]int64, error) {
	out := make(map[boxoffice.ID]int64, len(events))
	if len(events) == 0 {
		return out, nil
	}
	raw := make([]int64, len(events))
	for i, id := range events {
		raw[i] = int64(id)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT event_id, count(*) FROM queue_outcomes WHERE event_id = ANY($1) GROUP BY event_id`, raw)
	if err != nil {
		return nil, translate(err)
	}
	served, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{ ev, n int64 }, error) {
		var v struct{ ev, n int64 }
		err := row.Scan(&v.ev, &v.n)
		return v, err
	})
	if err != nil {
		return nil, translate(err)
	}
	for _, v := range served {
		out[boxoffice.ID(v.ev)] = v.n
	}
	return out, nil
}
