package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/boxoffice/boxoffice"
)

// A draw is one row of event_draws (migrations/0007_draws.sql): the seed
// from CreateEvent, then the outcome RecordDraw writes once, its order a
// blob of big-endian 64-bit request ids.

// Draw returns the event's pre-queue draw, or ENOTFOUND when it has none
// (an unknown event has none).
func (s *Store) Draw(ctx context.Context, eventID boxoffice.ID) (*boxoffice.Draw, error) {
	d := &boxoffice.Draw{EventID: eventID}
	var (
		committed int64
		first     sql.NullInt64
		ids       []byte
	)
	err := s.queryRow(ctx, `
		SELECT seed, committed_at, drawn_at, first_position, request_ids
		FROM event_draws
		WHERE event_id = ?`, eventID).Scan(&d.Seed, &committed, nullTime{&d.DrawnAt}, &first, &ids)
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d has no draw", eventID)
	}
	if err != nil {
		return nil, translate(err, "database")
	}
	d.CommittedAt = fromMillis(committed)
	if d.Drawn() {
		d.FirstPosition = first.Int64
		if d.Order, err = boxoffice.DecodeDrawOrder(ids); err != nil {
			return nil, translate(err, "database")
		}
	}
	return d, nil
}

// RecordDraw records the draw's outcome once: a row still undrawn gets
// it (its seed kept), a drawn one is left as it is and the call returns
// nil. An event without a row gets one, with d.Seed committed at
// d.DrawnAt. Errors: EINVALID for a zero DrawnAt, or a seed that is not
// DrawSeedSize bytes when a row must be inserted; ENOTFOUND for an unknown
// event.
func (s *Store) RecordDraw(ctx context.Context, d *boxoffice.Draw) error {
	if d == nil || d.DrawnAt.IsZero() {
		return boxoffice.Errorf(boxoffice.EINVALID, "a draw needs the time it was drawn")
	}
	ids := boxoffice.EncodeDrawOrder(d.Order)
	drawnAt := millis(d.DrawnAt)
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		var (
			res sql.Result
			err error
		)
		if len(d.Seed) == boxoffice.DrawSeedSize {
			// Inserts the row of an event that has none, fills in one not
			// yet drawn; nothing (no row of events, or drawn_at set)
			// otherwise. The SELECT's WHERE also keeps SQLite's parser from
			// reading ON CONFLICT as a join's.
			res, err = tx.ExecContext(ctx, `
				INSERT INTO event_draws (event_id, seed, committed_at, drawn_at, first_position, request_ids, sale_opens_at)
				SELECT id, ?2, ?3, ?3, ?4, ?5, sale_opens_at FROM events WHERE id = ?1
				ON CONFLICT (event_id) DO UPDATE
				SET drawn_at = excluded.drawn_at, first_position = excluded.first_position, request_ids = excluded.request_ids
				WHERE event_draws.drawn_at IS NULL`,
				d.EventID, d.Seed, drawnAt, d.FirstPosition, ids)
		} else {
			// No seed to insert with: only an existing row can take it.
			res, err = tx.ExecContext(ctx, `
				UPDATE event_draws
				SET drawn_at = ?2, first_position = ?3, request_ids = ?4
				WHERE event_id = ?1 AND drawn_at IS NULL`,
				d.EventID, drawnAt, d.FirstPosition, ids)
		}
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n > 0 {
			return err
		}
		// Nothing written: drawn before (first wins), no such event, or
		// no row and no seed to make one with.
		var event, draw bool
		if err := tx.QueryRowContext(ctx, `
			SELECT EXISTS (SELECT 1 FROM events WHERE id = ?1),
			       EXISTS (SELECT 1 FROM event_draws WHERE event_id = ?1)`,
			d.EventID).Scan(&event, &draw); err != nil {
			return err
		}
		switch {
		case !event:
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d not found", d.EventID)
		case !draw:
			return boxoffice.Errorf(boxoffice.EINVALID, "event %d has no seed: a draw needs one of %d bytes", d.EventID, boxoffice.DrawSeedSize)
		}
		return nil
	})
}

// checkDrawSeed refuses an event's seed of the wrong size; nil is none.
func checkDrawSeed(e *boxoffice.Event) error {
	if e.DrawSeed != nil && len(e.DrawSeed) != boxoffice.DrawSeedSize {
		return boxoffice.Errorf(boxoffice.EINVALID, "a draw seed must be %d bytes, not %d", boxoffice.DrawSeedSize, len(e.DrawSeed))
	}
	return nil
}

// insertDrawSeed writes the draw row of a new event with a seed, committed
// at its creation; nothing for an event without one.
func insertDrawSeed(ctx context.Context, tx *txn, e *boxoffice.Event) error {
	if e.DrawSeed == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO event_draws (event_id, seed, committed_at, sale_opens_at) VALUES (?, ?, ?, ?)`,
		e.ID, e.DrawSeed, millis(e.CreatedAt), millis(e.SaleOpensAt))
	return err
}

// MarkDrawReleased marks a drawn draw released: it leaves the due index.
func (s *Store) MarkDrawReleased(ctx context.Context, eventID boxoffice.ID) error {
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		if _, err := tx.ExecContext(ctx, `UPDATE event_draws SET released = 1
			WHERE event_id = ? AND drawn_at IS NOT NULL AND released = 0`, eventID); err != nil {
			return err
		}
		var found bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM event_draws WHERE event_id = ?)`, eventID).Scan(&found); err != nil {
			return err
		}
		if !found {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d has no draw", eventID)
		}
		return nil
	})
}

// cutShortSQL lists the events whose draw the embedded queue left cut
// short, through queue_events_draw_fence.
const cutShortSQL = `SELECT event_id FROM queue_events WHERE draw_fence IS NOT NULL ORDER BY draw_fence LIMIT ?`

// DrawsDue lists the draws not released whose sale has opened by now, of
// shows not started, oldest opening first: a range of the partial index
// event_draws_due (0011), each row's event read by its key. A draw the
// embedded queue left cut short is due whatever its show's time: its
// fence holds every event's consumers (Queue.Open).
func (s *Store) DrawsDue(ctx context.Context, now time.Time, limit int) ([]boxoffice.ID, error) {
	if limit <= 0 {
		return nil, nil
	}
	ids, err := s.ids(ctx, cutShortSQL, limit)
	if err != nil {
		return nil, err
	}
	due, err := s.ids(ctx, `
		SELECT d.event_id
		FROM event_draws d JOIN events e ON e.id = d.event_id
		WHERE d.released = 0 AND d.sale_opens_at <= ?1 AND e.starts_at > ?1
		ORDER BY d.sale_opens_at, d.event_id
		LIMIT ?2`, millis(now), limit)
	for _, id := range due {
		if len(ids) < limit && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, err
}

// ids runs a query of one column of ids.
func (s *Store) ids(ctx context.Context, query string, args ...any) ([]boxoffice.ID, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, translate(err, "database")
	}
	ids, err := collect(rows, func(r scanner) (boxoffice.ID, error) {
		var id boxoffice.ID
		return id, r.Scan(&id)
	})
	return ids, translate(err, "database")
}
