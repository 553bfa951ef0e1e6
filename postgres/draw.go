package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// A draw is one row of event_draws (migrations/0007_draws.sql): the seed
// from CreateEvent, then the outcome RecordDraw writes once, its order a
// bytea of big-endian 64-bit request ids.

// Draw returns the event's pre-queue draw, or ENOTFOUND when it has none
// (an unknown event has none).
func (s *Store) Draw(ctx context.Context, eventID boxoffice.ID) (*boxoffice.Draw, error) {
	d := &boxoffice.Draw{EventID: eventID}
	var (
		drawnAt *time.Time
		first   *int64
		ids     []byte
	)
	err := s.pool.QueryRow(ctx, `
		SELECT seed, committed_at, drawn_at, first_position, request_ids
		FROM event_draws
		WHERE event_id = $1`, int64(eventID)).Scan(&d.Seed, &d.CommittedAt, &drawnAt, &first, &ids)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "event %s has no draw", eventID)
	}
	if err != nil {
		return nil, translate(err)
	}
	d.CommittedAt = d.CommittedAt.UTC()
	if drawnAt != nil {
		d.DrawnAt = drawnAt.UTC()
		if first != nil {
			d.FirstPosition = *first
		}
		if d.Order, err = boxoffice.DecodeDrawOrder(ids); err != nil {
			return nil, translate(err)
		}
	}
	return d, nil
}

// recordDrawSQL inserts the draw row of an event that has none (seed
// committed at the draw) or fills in one not yet drawn, keeping its seed;
// a drawn row is left as it is (the conflict's WHERE, evaluated on the
// row's latest version once its lock is taken, so of two racing calls the
// first to commit wins). The event's row is the insert's source, so an
// unknown event writes nothing; the statement answers whether it exists.
const recordDrawSQL = `
	WITH event AS (SELECT id, sale_opens_at FROM events WHERE id = $1),
	draw AS (
		INSERT INTO event_draws (event_id, seed, committed_at, drawn_at, first_position, request_ids, sale_opens_at)
		SELECT id, $2::bytea, $3::timestamptz, $3::timestamptz, $4::bigint, $5::bytea, sale_opens_at FROM event
		ON CONFLICT (event_id) DO UPDATE
		SET drawn_at = EXCLUDED.drawn_at, first_position = EXCLUDED.first_position, request_ids = EXCLUDED.request_ids
		WHERE event_draws.drawn_at IS NULL)
	SELECT EXISTS (SELECT 1 FROM event), true`

// finishDrawSQL fills in a row not yet drawn, for a call without a seed to
// insert one with; it answers whether the event and its draw row exist.
const finishDrawSQL = `
	WITH draw AS (
		UPDATE event_draws
		SET drawn_at = $2, first_position = $3, request_ids = $4
		WHERE event_id = $1 AND drawn_at IS NULL)
	SELECT EXISTS (SELECT 1 FROM events WHERE id = $1),
	       EXISTS (SELECT 1 FROM event_draws WHERE event_id = $1)`

// RecordDraw records the draw's outcome once, in one statement: a row
// still undrawn gets it (its seed kept), a drawn one is left as it is and
// the call returns nil. An event without a row gets one, with d.Seed
// committed at d.DrawnAt. Errors: EINVALID for a zero DrawnAt, or a seed
// that is not DrawSeedSize bytes when a row must be inserted; ENOTFOUND
// for an unknown event.
func (s *Store) RecordDraw(ctx context.Context, d *boxoffice.Draw) error {
	if d == nil || d.DrawnAt.IsZero() {
		return boxoffice.Errorf(boxoffice.EINVALID, "a draw needs the time it was drawn")
	}
	ids := boxoffice.EncodeDrawOrder(d.Order)
	var (
		event, draw bool
		err         error
	)
	if len(d.Seed) == boxoffice.DrawSeedSize {
		err = s.pool.QueryRow(ctx, recordDrawSQL,
			int64(d.EventID), d.Seed, ts(d.DrawnAt), d.FirstPosition, ids).Scan(&event, &draw)
	} else {
		err = s.pool.QueryRow(ctx, finishDrawSQL,
			int64(d.EventID), ts(d.DrawnAt), d.FirstPosition, ids).Scan(&event, &draw)
	}
	switch {
	case err != nil:
		return translate(err)
	case !event:
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "no event %s", d.EventID)
	case !draw:
		return boxoffice.Errorf(boxoffice.EINVALID, "event %s has no seed: a draw needs one of %d bytes", d.EventID, boxoffice.DrawSeedSize)
	}
	return nil
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
func insertDrawSeed(ctx context.Context, tx pgx.Tx, e *boxoffice.Event) error {
	if e.DrawSeed == nil {
		return nil
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO event_draws (event_id, seed, committed_at, sale_opens_at) VALUES ($1, $2, $3, $4)`,
		int64(e.ID), e.DrawSeed, ts(e.CreatedAt), ts(e.SaleOpensAt))
	return err
}

// drawsDueSQL reads the first rows of the partial index event_draws_due
// (0013), the draws not released alone, in its order, and each one's
// event by its key. The limit is a constant: with LIMIT $2 the generic
// plan, not knowing it, chose a parallel scan, 30 ms of worker start-up a
// pass.
const drawsDueSQL = `
	SELECT d.event_id
	FROM event_draws d JOIN events e ON e.id = d.event_id
	WHERE NOT d.released AND d.sale_opens_at <= $1 AND e.starts_at > $1
	ORDER BY d.sale_opens_at, d.event_id
	LIMIT ` + maxDrawsDue

// maxDrawsDue is drawsDueSQL's limit.
const maxDrawsDue = "100"

// MarkDrawReleased marks a drawn draw released: it leaves the due index.
func (s *Store) MarkDrawReleased(ctx context.Context, eventID boxoffice.ID) error {
	var found bool
	err := s.pool.QueryRow(ctx, `
		WITH done AS (
		    UPDATE event_draws SET released = true
		    WHERE event_id = $1 AND drawn_at IS NOT NULL AND NOT released)
		SELECT EXISTS (SELECT 1 FROM event_draws WHERE event_id = $1)`, int64(eventID)).Scan(&found)
	if err != nil {
		return translate(err)
	}
	if !found {
		return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %s has no draw", eventID)
	}
	return nil
}

// DrawsDue lists the draws not released whose sale has opened by now, of
// shows not started, oldest opening first; at most maxDrawsDue a call, and
// the next call gets the rest as the listed ones are released. A draw
// left unreleased past its show (no opener ran through its whole sale)
// stays in the index, and is skipped.
func (s *Store) DrawsDue(ctx context.Context, now time.Time, limit int) ([]boxoffice.ID, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, drawsDueSQL, ts(now))
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (boxoffice.ID, error) {
		var id int64
		err := r.Scan(&id)
		return boxoffice.ID(id), err
	})
	return ids[:min(limit, len(ids))], translate(err)
}
