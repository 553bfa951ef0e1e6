package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/boxoffice/boxoffice"
)

// Row mapping shared by the queries of this package. Each query keeps its
// own SQL; what is shared is how a column becomes a field.

// millis is how a time is stored: unix milliseconds, UTC. Sub-millisecond
// precision is dropped (truncated), the same on every Store.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of millis, in UTC.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// eventColumns are the columns scanEvent reads, in its order.
const eventColumns = `id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at`

func scanEvent(sc scanner) (*boxoffice.Event, error) {
	var (
		e                            boxoffice.Event
		startsAt, opensAt, createdAt int64
	)
	if err := sc.Scan(&e.ID, &e.Name, &e.Venue, &startsAt, &opensAt, &e.SaleMode, &e.TicketLimit, &createdAt); err != nil {
		return nil, err
	}
	e.StartsAt, e.SaleOpensAt, e.CreatedAt = fromMillis(startsAt), fromMillis(opensAt), fromMillis(createdAt)
	return &e, nil
}

// bookingColumns are the columns scanBooking reads, in its order.
const bookingColumns = `id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at, confirmation_code, payment_auth_id`

func scanBooking(sc scanner) (*boxoffice.Booking, error) {
	var (
		b                               boxoffice.Booking
		heldUntil, createdAt, updatedAt int64
	)
	if err := sc.Scan(&b.ID, &b.EventID, &b.UserID, &b.Status, &b.Fence, &b.AmountCents,
		&heldUntil, &createdAt, &updatedAt, &b.ConfirmationCode, &b.PaymentAuthID); err != nil {
		return nil, err
	}
	b.HeldUntil, b.CreatedAt, b.UpdatedAt = fromMillis(heldUntil), fromMillis(createdAt), fromMillis(updatedAt)
	return &b, nil
}

// ticketColumns are the columns scanTicket reads, in its order (qualified
// with t. for queries that join tickets).
const ticketColumns = `t.id, t.event_id, t.booking_id, t.seat_id, t.user_id, t.code, t.status, t.issued_at`

func scanTicket(sc scanner) (boxoffice.Ticket, error) {
	var (
		t        boxoffice.Ticket
		issuedAt int64
	)
	if err := sc.Scan(&t.ID, &t.EventID, &t.BookingID, &t.SeatID, &t.UserID, &t.Code, &t.Status, &issuedAt); err != nil {
		return boxoffice.Ticket{}, err
	}
	t.IssuedAt = fromMillis(issuedAt)
	return t, nil
}

// paymentColumns are the columns scanPayment reads, in its order.
const paymentColumns = `booking_id, auth_id, amount_cents, status, created_at`

func scanPayment(sc scanner) (boxoffice.Payment, error) {
	var (
		p         boxoffice.Payment
		createdAt int64
	)
	if err := sc.Scan(&p.BookingID, &p.AuthID, &p.AmountCents, &p.Status, &createdAt); err != nil {
		return boxoffice.Payment{}, err
	}
	p.CreatedAt = fromMillis(createdAt)
	return p, nil
}

// idempotencyColumns are the columns scanIdempotency reads, in its order.
const idempotencyColumns = `user_id, key, request_hash, status, body, created_at, expires_at`

func scanIdempotency(sc scanner) (*boxoffice.IdempotencyRecord, error) {
	var (
		r                    boxoffice.IdempotencyRecord
		createdAt, expiresAt int64
	)
	if err := sc.Scan(&r.UserID, &r.Key, &r.RequestHash, &r.Status, &r.Body, &createdAt, &expiresAt); err != nil {
		return nil, err
	}
	r.CreatedAt, r.ExpiresAt = fromMillis(createdAt), fromMillis(expiresAt)
	return &r, nil
}

// collect scans every row of rows with scan and closes rows.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// jsonIDs encodes ids as one JSON array of numbers, which the queries
// unpack with json_each: one bound parameter whatever the number of ids
// (PostgreSQL's = ANY($1)). IDs are converted first because an ID marshals
// to a JSON string.
func jsonIDs(ids []boxoffice.ID) string {
	ns := make([]int64, len(ids))
	for i, id := range ids {
		ns[i] = int64(id)
	}
	b, err := json.Marshal(ns)
	if err != nil {
		panic(err) // numbers always encode
	}
	return string(b)
}

// scanString reads a single TEXT column.
func scanString(sc scanner) (string, error) {
	var s string
	err := sc.Scan(&s)
	return s, err
}

// loadBooking reads one booking with its seats, in request order, and its
// tickets, in the same order. It returns ENOTFOUND for an unknown id.
func loadBooking(ctx context.Context, q querier, id boxoffice.ID) (*boxoffice.Booking, error) {
	b, err := scanBooking(q.QueryRowContext(ctx,
		`SELECT `+bookingColumns+` FROM bookings WHERE id = ?`, id))
	if err == sql.ErrNoRows {
		return nil, boxoffice.Errorf(boxoffice.ENOTFOUND, "booking %d not found", id)
	}
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx,
		`SELECT seat_id FROM booking_seats WHERE booking_id = ? ORDER BY position`, id)
	if err != nil {
		return nil, err
	}
	if b.SeatIDs, err = collect(rows, scanString); err != nil {
		return nil, err
	}
	rows, err = q.QueryContext(ctx, `
		SELECT `+ticketColumns+`
		FROM tickets t
		JOIN booking_seats bs ON bs.booking_id = t.booking_id AND bs.seat_id = t.seat_id
		WHERE t.booking_id = ?
		ORDER BY bs.position, t.id`, id)
	if err != nil {
		return nil, err
	}
	if b.Tickets, err = collect(rows, scanTicket); err != nil {
		return nil, err
	}
	return b, nil
}

// jsonStrings encodes strings as one JSON array parameter for json_each.
func jsonStrings(ss []string) string {
	b, err := json.Marshal(ss)
	if err != nil {
		panic(err) // strings always encode
	}
	return string(b)
}
