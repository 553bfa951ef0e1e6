package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The transactional outbox: the booking methods call writeEvent inside
// their write transaction, so an event exists exactly when the change it
// reports was committed. The relay reads the rows back with PendingOutbox.

var _ boxoffice.OutboxStore = (*Store)(nil)

// writeEvent records in tx that b has just entered the state of topic at
// at. b must be the booking as stored. An event ID already present (a
// booking entering one state twice) is a bug, reported as an internal
// error that rolls the whole change back.
func writeEvent(ctx context.Context, tx *txn, topic string, b *boxoffice.Booking, at time.Time) error {
	ev, err := boxoffice.NewBookingEvent(topic, b, at)
	if err != nil {
		return err
	}
	return insertOutbox(ctx, tx, ev)
}

// writeResold records in tx the resale r, completed at at.
func writeResold(ctx context.Context, tx *txn, r boxoffice.Resale, at time.Time) error {
	ev, err := boxoffice.NewTicketResoldEvent(r, at)
	if err != nil {
		return err
	}
	return insertOutbox(ctx, tx, ev)
}

// insertOutbox writes ev in tx. An event ID already present is a bug (see
// writeEvent).
func insertOutbox(ctx context.Context, tx *txn, ev boxoffice.OutboxEvent) error {
	err := insertOutboxes.exec(ctx, tx, outboxRow(nil, ev))
	if isUniqueViolation(err) {
		return fmt.Errorf("outbox event %s written twice: %w", ev.ID, err)
	}
	return err
}

// insertOutboxes writes outbox events, 5 values each.
var insertOutboxes = newMultiInsert(`INSERT INTO outbox (event_id, topic, key, payload, created_at)`, 5, 128, 32, 8, 1)

// outboxRow appends ev's row of insertOutboxes to dst.
func outboxRow(dst []any, ev boxoffice.OutboxEvent) []any {
	return append(dst, ev.ID, ev.Topic, ev.Key, string(ev.Payload), millis(ev.CreatedAt))
}

// PendingOutbox returns up to limit unpublished events, in seq order. It
// reads through the read pool, beside the writer: the relay never waits
// for the bookings it reports on.
func (s *Store) PendingOutbox(ctx context.Context, limit int) ([]boxoffice.OutboxEvent, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, `
		SELECT seq, event_id, topic, key, payload, created_at
		FROM outbox
		WHERE published_at IS NULL
		ORDER BY seq
		LIMIT ?`, limit)
	if err != nil {
		return nil, translate(err, "database")
	}
	evs, err := collect(rows, func(sc scanner) (boxoffice.OutboxEvent, error) {
		var (
			ev        boxoffice.OutboxEvent
			createdAt int64
		)
		err := sc.Scan(&ev.Seq, &ev.ID, &ev.Topic, &ev.Key, &ev.Payload, &createdAt)
		ev.CreatedAt = fromMillis(createdAt)
		return ev, err
	})
	return evs, translate(err, "database")
}

// MarkPublished records that the events with these seqs were published at
// now. An event marked already keeps its first time, and a seq that is not
// in the outbox (purged) is ignored: the relay may mark a batch twice.
func (s *Store) MarkPublished(ctx context.Context, seqs []int64, now time.Time) error {
	if len(seqs) == 0 {
		return nil
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `
			UPDATE outbox SET published_at = ?
			WHERE seq IN (SELECT value FROM json_each(?)) AND published_at IS NULL`,
			millis(now), jsonInts(seqs))
		return err
	})
}

// DeletePublished deletes the events with these seqs, published to a
// publisher that keeps them; a seq not in the outbox is ignored.
func (s *Store) DeletePublished(ctx context.Context, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE seq IN (SELECT value FROM json_each(?))`, jsonInts(seqs))
		return err
	})
}

// jsonInts encodes seqs as one JSON array parameter for json_each.
func jsonInts(seqs []int64) string {
	b, err := json.Marshal(seqs)
	if err != nil {
		panic(err) // numbers always encode
	}
	return string(b)
}

// purgeChunk bounds the rows one purge transaction deletes: every write of
// the store waits behind the one writer, so a day of events goes in many
// short transactions, with the bookings' writes between them.
const purgeChunk = 5000

// PurgeOutbox deletes the events published before cutoff (published_at <
// cutoff) and returns how many. It stops early, with the count so far,
// when ctx ends or a chunk fails.
func (s *Store) PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		var n int64
		err := s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
			res, err := tx.ExecContext(ctx, `
				DELETE FROM outbox
				WHERE seq IN (
					SELECT seq FROM outbox
					WHERE published_at IS NOT NULL AND published_at < ?
					ORDER BY published_at
					LIMIT ?)`,
				millis(cutoff), purgeChunk)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < purgeChunk {
			return total, nil
		}
	}
}
