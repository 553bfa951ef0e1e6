package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// The transactional outbox: the booking methods queue the insert of their
// event (queueEvent; a resale's ticket.resold, queueResale) in the batch
// that makes the change, so an event exists exactly when the change it
// reports was committed. The relay reads the rows back with PendingOutbox.

var _ boxoffice.OutboxStore = (*Store)(nil)

// queueEvent adds to batch the outbox row reporting that b has just
// entered the state of topic at at. b must be the booking as it is
// written (times at millisecond precision, see ts). A duplicate event_id
// (a booking entering one state twice) is a unique violation: see
// eventErr.
func queueEvent(batch *pgx.Batch, topic string, b *boxoffice.Booking, at time.Time) error {
	var r outboxRows
	if err := r.add(topic, b, at); err != nil {
		return err
	}
	r.queue(batch)
	return nil
}

// eventErr explains the failure of an outbox insert. A unique violation
// means a booking entered one state twice, which the status checks before
// it rule out: a bug, reported as one (EINTERNAL, never ECONFLICT, which a
// caller would take for a state conflict of the booking).
func eventErr(err error) error {
	if pgCode(err) == codeUniqueViolation {
		return &boxoffice.Error{Code: boxoffice.EINTERNAL, Message: "internal error",
			Err: fmt.Errorf("outbox event written twice: %w", err)}
	}
	return err
}

// PendingOutbox returns up to limit unpublished events in seq order.
func (s *Store) PendingOutbox(ctx context.Context, limit int) ([]boxoffice.OutboxEvent, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT seq, event_id, topic, key, payload, created_at
		FROM outbox
		WHERE published_at IS NULL
		ORDER BY seq
		LIMIT $1`, limit)
	if err != nil {
		return nil, translate(err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (boxoffice.OutboxEvent, error) {
		var ev boxoffice.OutboxEvent
		err := row.Scan(&ev.Seq, &ev.ID, &ev.Topic, &ev.Key, &ev.Payload, &ev.CreatedAt)
		ev.CreatedAt = ev.CreatedAt.UTC()
		return ev, err
	})
	return evs, translate(err)
}

// MarkPublished records that the events with these seqs were published at
// now. An event marked already keeps its first time, and a seq that is not
// in the outbox (purged) is ignored: the relay may mark a batch twice.
func (s *Store) MarkPublished(ctx context.Context, seqs []int64, now time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE outbox SET published_at = $2
		WHERE seq = ANY($1) AND published_at IS NULL`, seqs, ts(now))
	return translate(err)
}

// DeletePublished deletes the events with these seqs, published to a
// publisher that keeps them. A deleted row costs one WAL record and no
// index entry, where a mark writes a new row version and three index
// entries (outbox_published_at's among them), and the purge deletes it a
// day later anyway. A seq not in the outbox is ignored.
func (s *Store) DeletePublished(ctx context.Context, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM outbox WHERE seq = ANY($1)`, seqs)
	return translate(err)
}

// PurgeOutbox deletes the events published before cutoff and returns how
// many. One statement: nothing else writes published rows, so it blocks no
// booking, whatever it deletes.
func (s *Store) PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < $1`, ts(cutoff))
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// outboxRows gathers outbox rows as columns, for one multi-row insert: a
// group commit's events in one statement (a statement a row cost the
// server a statement's fixed cost each), a single change's one row.
type outboxRows struct {
	ids, topics, keys, payloads []string
	created                     []time.Time
}

// add takes the row reporting that b has just entered the state of topic
// at at.
func (r *outboxRows) add(topic string, b *boxoffice.Booking, at time.Time) error {
	ev, err := boxoffice.NewBookingEvent(topic, b, at)
	if err != nil {
		return err
	}
	r.addEvent(ev)
	return nil
}

// addEvent takes ev's row.
func (r *outboxRows) addEvent(ev boxoffice.OutboxEvent) {
	r.ids, r.topics, r.keys = append(r.ids, ev.ID), append(r.topics, ev.Topic), append(r.keys, ev.Key)
	r.payloads, r.created = append(r.payloads, string(ev.Payload)), append(r.created, ts(ev.CreatedAt))
}

// queue adds the insert of the rows to batch, if there are any.
func (r *outboxRows) queue(batch *pgx.Batch) {
	if len(r.ids) == 0 {
		return
	}
	batch.Queue(`
		INSERT INTO outbox (event_id, topic, key, payload, created_at)
		SELECT x.i, x.t, x.k, x.p::json, x.c
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS x(i, t, k, p, c)`,
		r.ids, r.topics, r.keys, r.payloads, r.created)
}
