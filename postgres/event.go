package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/boxoffice/boxoffice"
)

// Events lists at most this many events per page, and this many when the
// filter asks for none in particular.
const (
	defaultEventsLimit = 50
	maxEventsLimit     = 500
)

// CreateEvent writes the event, its draw's seed (if it has one), its
// sections and every seat of its layout (up to boxoffice.MaxSeatsPerEvent,
// written with COPY) in one transaction. Errors: EINVALID if the event does
// not validate or its seed is not DrawSeedSize bytes, ECONFLICT if its ID
// is taken.
func (s *Store) CreateEvent(ctx context.Context, e *boxoffice.Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if err := checkDrawSeed(e); err != nil {
		return err
	}
	if err := s.ensurePartition(ctx, e.ID); err != nil {
		return err
	}
	seats := e.Seats()
	return s.transact(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO events (id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at,
			                    refundable, refund_cutoff_hours, resale_disabled, resale_cap_percent)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			int64(e.ID), e.Name, e.Venue, ts(e.StartsAt), ts(e.SaleOpensAt), string(e.SaleMode), e.TicketLimit, ts(e.CreatedAt),
			e.Refundable, e.RefundCutoffHours, e.ResaleDisabled, e.ResaleCapPercent)
		if pgCode(err) == codeUniqueViolation {
			return boxoffice.Errorf(boxoffice.ECONFLICT, "event %s already exists", e.ID)
		}
		if err != nil {
			return err
		}
		if err := insertDrawSeed(ctx, tx, e); err != nil {
			return err
		}
		var (
			pos               = make([]int32, len(e.Sections))
			names, tiers      = make([]string, len(e.Sections)), make([]string, len(e.Sections))
			prices            = make([]int64, len(e.Sections))
			rowCounts, perRow = make([]int32, len(e.Sections)), make([]int32, len(e.Sections))
			features          = make([]string, len(e.Sections)) // "": NULL
		)
		for i, sec := range e.Sections {
			pos[i], names[i], tiers[i], prices[i] = int32(i), sec.Name, sec.PriceTier, sec.PriceCents
			rowCounts[i], perRow[i] = int32(sec.Rows), int32(sec.SeatsPerRow)
			if features[i], err = boxoffice.EncodeSeatFeatures(sec.Features); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO sections (event_id, position, name, price_tier, price_cents, row_count, seats_per_row, features)
			SELECT $1, p, n, t, c, r, s, NULLIF(f, '')::jsonb
			FROM unnest($2::integer[], $3::text[], $4::text[], $5::bigint[], $6::integer[], $7::integer[], $8::text[]) AS u(p, n, t, c, r, s, f)`,
			int64(e.ID), pos, names, tiers, prices, rowCounts, perRow, features); err != nil {
			return err
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"seats"},
			[]string{"event_id", "seat_id", "section", "row_label", "number", "price_tier", "price_cents", "position"},
			pgx.CopyFromSlice(len(seats), func(i int) ([]any, error) {
				st := seats[i]
				return []any{int64(e.ID), st.ID, st.Section, st.Row, int32(st.Number), st.PriceTier, st.PriceCents, int32(i)}, nil
			}))
		return err
	})
}

// Event returns one event with its sections in layout order, or ENOTFOUND.
func (s *Store) Event(ctx context.Context, id boxoffice.ID) (*boxoffice.Event, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+eventColumns+` FROM events WHERE id = $1`, int64(id))
	if err != nil {
		return nil, translate(err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, translate(err)
	}
	if len(events) == 0 {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "no event %s", id)
	}
	if err := s.loadSections(ctx, events); err != nil {
		return nil, err
	}
	return events[0], nil
}

// Events lists events by show start, latest first (by ID: an event id's
// time part is its show's start, see sale.Catalog.CreateEvent), at most
// f.Limit of them (default 50, at most 500), starting below f.Before when
// it is set.
func (s *Store) Events(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultEventsLimit
	}
	limit = min(limit, maxEventsLimit)
	rows, err := s.pool.Query(ctx, `
		SELECT `+eventColumns+` FROM events
		WHERE $1::bigint = 0 OR id < $1
		ORDER BY id DESC
		LIMIT $2`, int64(f.Before), limit)
	if err != nil {
		return nil, translate(err)
	}
	events, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, translate(err)
	}
	if err := s.loadSections(ctx, events); err != nil {
		return nil, err
	}
	return events, nil
}

// SoldSeats returns the ids of the event's seats that have a valid ticket,
// in seat id order (bytewise, as the embedded store); none for an unknown
// event. It reads the partial unique index of valid tickets alone, an
// index-only range of this event: no join, so no plan can make it read
// another event's rows or loop over this one's. (It joined the seats for
// their layout order once; on a new event whose statistics were not yet
// analyzed PostgreSQL then chose a nested loop over the whole layout per
// ticket, 100x slower: BenchmarkEventsGrow. The callers want a set.)
func (s *Store) SoldSeats(ctx context.Context, eventID boxoffice.ID) ([]string, error) {
	rows, err := s.pool.Query(ctx, eventSoldSeatsSQL, int64(eventID))
	if err != nil {
		return nil, translate(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(ids)
	return ids, translate(err)
}

// eventSoldSeatsSQL reads an event's sold seats for its seat map.
const eventSoldSeatsSQL = `SELECT seat_id FROM tickets WHERE event_id = $1 AND status = 'valid'`

const eventColumns = `id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at,
	refundable, refund_cutoff_hours, resale_disabled, resale_cap_percent`

func scanEvent(row pgx.CollectableRow) (*boxoffice.Event, error) {
	var (
		e    boxoffice.Event
		id   int64
		mode string
	)
	if err := row.Scan(&id, &e.Name, &e.Venue, &e.StartsAt, &e.SaleOpensAt, &mode, &e.TicketLimit, &e.CreatedAt,
		&e.Refundable, &e.RefundCutoffHours, &e.ResaleDisabled, &e.ResaleCapPercent); err != nil {
		return nil, err
	}
	e.ID, e.SaleMode = boxoffice.ID(id), boxoffice.SaleMode(mode)
	e.StartsAt, e.SaleOpensAt, e.CreatedAt = e.StartsAt.UTC(), e.SaleOpensAt.UTC(), e.CreatedAt.UTC()
	return &e, nil
}

// loadSections fills in the sections of events with one query.
func (s *Store) loadSections(ctx context.Context, events []*boxoffice.Event) error {
	if len(events) == 0 {
		return nil
	}
	ids := make([]int64, len(events))
	byID := make(map[int64]*boxoffice.Event, len(events))
	for i, e := range events {
		ids[i] = int64(e.ID)
		byID[ids[i]] = e
	}
	rows, err := s.pool.Query(ctx, `
		SELECT event_id, name, price_tier, price_cents, row_count, seats_per_row, COALESCE(features::text, '')
		FROM sections
		WHERE event_id = ANY($1)
		ORDER BY event_id, position`, ids)
	if err != nil {
		return translate(err)
	}
	var (
		eventID  int64
		sec      boxoffice.Section
		features string
	)
	_, err = pgx.ForEachRow(rows, []any{&eventID, &sec.Name, &sec.PriceTier, &sec.PriceCents, &sec.Rows, &sec.SeatsPerRow, &features}, func() error {
		var err error
		if sec.Features, err = boxoffice.DecodeSeatFeatures(features); err != nil {
			return err
		}
		e := byID[eventID]
		e.Sections = append(e.Sections, sec)
		return nil
	})
	return translate(err)
}
