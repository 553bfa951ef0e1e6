package sqlite

import (
	"context"
	"database/sql"
	"math"
	"strings"

	"github.com/boxoffice/boxoffice"
)

// seatBatch is how many seats one INSERT carries: 8 parameters a seat
// stays well under SQLite's limit of 32766 parameters a statement.
const seatBatch = 500

// CreateEvent writes the event, its policy, its draw's seed (if it has
// one), its sections and every seat of its layout in one transaction. An
// event whose ID is taken fails with ECONFLICT; a seed that is not
// DrawSeedSize bytes, EINVALID.
func (s *Store) CreateEvent(ctx context.Context, e *boxoffice.Event) error {
	if err := checkDrawSeed(e); err != nil {
		return err
	}
	return s.writeTx(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO events (id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at,
			                    refundable, refund_cutoff_hours, resale_disabled, resale_cap_percent)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, e.Name, e.Venue, millis(e.StartsAt), millis(e.SaleOpensAt), e.SaleMode, e.TicketLimit, millis(e.CreatedAt),
			e.Refundable, e.RefundCutoffHours, e.ResaleDisabled, e.ResaleCapPercent)
		if isUniqueViolation(err) {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "event %d already exists", e.ID)
		}
		if err != nil {
			return err
		}
		if err := insertDrawSeed(ctx, tx, e); err != nil {
			return err
		}
		for i, sec := range e.Sections {
			features, err := boxoffice.EncodeSeatFeatures(sec.Features)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `
				INSERT INTO sections (event_id, position, name, price_tier, price_cents, row_count, seats_per_row, features)
				VALUES (?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''))`,
				e.ID, i, sec.Name, sec.PriceTier, sec.PriceCents, sec.Rows, sec.SeatsPerRow, features)
			if isUniqueViolation(err) {
				return boxoffice.Errorf(boxoffice.EINVALID, "section %q is listed twice", sec.Name)
			}
			if err != nil {
				return err
			}
		}
		// Unprepared: the last batch's VALUES list has a length of its
		// own, a statement not worth keeping prepared.
		return insertSeats(ctx, tx.raw, e.ID, e.Seats())
	})
}

// insertSeats writes seats with multi-row INSERTs of seatBatch rows, each
// statement prepared once: 200,000 seats are 400 statement executions.
func insertSeats(ctx context.Context, tx sqlRunner, eventID boxoffice.ID, seats []boxoffice.Seat) error {
	insert := func(n int) string {
		return `INSERT INTO seats (event_id, seat_id, section, row_label, number, price_tier, price_cents, position) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ")
	}
	var full *sql.Stmt
	args := make([]any, 0, 8*seatBatch)
	for start := 0; start < len(seats); start += seatBatch {
		batch := seats[start:min(start+seatBatch, len(seats))]
		args = args[:0]
		for i, st := range batch {
			args = append(args, eventID, st.ID, st.Section, st.Row, st.Number, st.PriceTier, st.PriceCents, start+i)
		}
		var err error
		if len(batch) == seatBatch {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, insert(seatBatch)); err != nil {
					return err
				}
				defer full.Close()
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insert(len(batch)), args...)
		}
		if isUniqueViolation(err) {
			return boxoffice.Errorf(boxoffice.EINVALID, "the layout names a seat twice")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Event returns one event with its sections, or ENOTFOUND.
func (s *Store) Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error) {
	var e *boxoffice.Event
	err := s.readTx(ctx, func(ctx context.Context, tx *txn) error {
		var err error
		e, err = scanEvent(tx.QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id = ?`, id))
		if err == sql.ErrNoRows {
			return boxoffice.Errorf(boxoffice.ENOTFOUND, "event %d not found", id)
		}
		if err != nil {
			return err
		}
		return attachSections(ctx, tx, []*boxoffice.Event{e})
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Events pages through events, newest (largest ID) first, each with its
// sections. A Limit of zero or less means defaultEventLimit; it is capped
// at maxEventLimit.
func (s *Store) Events(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultEventLimit
	}
	limit = min(limit, maxEventLimit)
	before := int64(f.Before)
	if before <= 0 {
		before = math.MaxInt64
	}
	var events []*boxoffice.Event
	err := s.readTx(ctx, func(ctx context.Context, tx *txn) error {
		rows, err := tx.QueryContext(ctx, `
			SELECT `+eventColumns+`
			FROM events
			WHERE id < ?
			ORDER BY id DESC
			LIMIT ?`, before, limit)
		if err != nil {
			return err
		}
		if events, err = collect(rows, scanEvent); err != nil {
			return err
		}
		return attachSections(ctx, tx, events)
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

const (
	defaultEventLimit = 50
	maxEventLimit     = 500
)

// attachSections fills in the sections of events, in layout order.
func attachSections(ctx context.Context, q querier, events []*boxoffice.Event) error {
	if len(events) == 0 {
		return nil
	}
	byID := make(map[boxoffice.ID]*boxoffice.Event, len(events))
	ids := make([]boxoffice.ID, len(events))
	for i, e := range events {
		byID[e.ID], ids[i] = e, e.ID
	}
	rows, err := q.QueryContext(ctx, `
		SELECT event_id, name, price_tier, price_cents, row_count, seats_per_row, COALESCE(features, '')
		FROM sections
		WHERE event_id IN (SELECT value FROM json_each(?))
		ORDER BY event_id, position`, jsonIDs(ids))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id       boxoffice.ID
			sec      boxoffice.Section
			features string
		)
		if err := rows.Scan(&id, &sec.Name, &sec.PriceTier, &sec.PriceCents, &sec.Rows, &sec.SeatsPerRow, &features); err != nil {
			return err
		}
		var err error
		if sec.Features, err = boxoffice.DecodeSeatFeatures(features); err != nil {
			return err
		}
		e := byID[id]
		e.Sections = append(e.Sections, sec)
	}
	return rows.Err()
}

// SoldSeats returns the ids of the event's seats that have a valid ticket,
// in seat id order (the order of the unique index it reads, which it
// reads alone). An unknown event has none.
func (s *Store) SoldSeats(ctx context.Context, eventID boxoffice.ID) ([]string, error) {
	rows, err := s.query(ctx, `
		SELECT seat_id
		FROM tickets
		WHERE event_id = ? AND status = 'valid'
		ORDER BY seat_id`, eventID)
	if err != nil {
		return nil, translate(err, "database")
	}
	seats, err := collect(rows, scanString)
	return seats, translate(err, "database")
}
