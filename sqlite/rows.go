package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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
const eventColumns = `id, name, venue, starts_at, sale_opens_at, sale_mode, ticket_limit, created_at,
	refundable, refund_cutoff_hours, resale_disabled, resale_cap_percent`

func scanEvent(sc scanner) (*boxoffice.Event, error) {
	var (
		e                            boxoffice.Event
		startsAt, opensAt, createdAt int64
	)
	if err := sc.Scan(&e.ID, &e.Name, &e.Venue, &startsAt, &opensAt, &e.SaleMode, &e.TicketLimit, &createdAt,
		&e.Refundable, &e.RefundCutoffHours, &e.ResaleDisabled, &e.ResaleCapPercent); err != nil {
		return nil, err
	}
	e.StartsAt, e.SaleOpensAt, e.CreatedAt = fromMillis(startsAt), fromMillis(opensAt), fromMillis(createdAt)
	return &e, nil
}

// bookingColumns are the columns scanBooking reads, in its order.
const bookingColumns = `id, event_id, user_id, status, fence, amount_cents, held_until, created_at, updated_at,
	confirmation_code, payment_auth_id, listing_id, waitlist_entry_id`

func scanBooking(sc scanner) (*boxoffice.Booking, error) {
	var (
		b                               boxoffice.Booking
		heldUntil, createdAt, updatedAt int64
	)
	if err := sc.Scan(&b.ID, &b.EventID, &b.UserID, &b.Status, &b.Fence, &b.AmountCents,
		&heldUntil, &createdAt, &updatedAt, &b.ConfirmationCode, &b.PaymentAuthID,
		nullID{&b.ListingID}, nullID{&b.WaitlistEntryID}); err != nil {
		return nil, err
	}
	b.HeldUntil, b.CreatedAt, b.UpdatedAt = fromMillis(heldUntil), fromMillis(createdAt), fromMillis(updatedAt)
	return &b, nil
}

// ticketColumns are the columns scanTicket reads, in its order (qualified
// with t. for queries that join tickets). The last is the ticket's active
// listing, looked up through the partial unique index on listings.
const ticketColumns = `t.id, t.event_id, t.booking_id, t.seat_id, t.user_id, t.code, t.status, t.issued_at,
	t.void_reason, t.checked_in_at,
	(SELECT l.id FROM listings l WHERE l.ticket_id = t.id AND l.status = 'active')`

func scanTicket(sc scanner) (boxoffice.Ticket, error) {
	var (
		t        boxoffice.Ticket
		issuedAt int64
	)
	if err := sc.Scan(&t.ID, &t.EventID, &t.BookingID, &t.SeatID, &t.UserID, &t.Code, &t.Status, &issuedAt,
		&t.VoidReason, nullTime{&t.CheckedInAt}, nullID{&t.ListingID}); err != nil {
		return boxoffice.Ticket{}, err
	}
	t.IssuedAt = fromMillis(issuedAt)
	return t, nil
}

// nullID scans a nullable id column: NULL is the zero ID.
type nullID struct{ p *boxoffice.ID }

func (n nullID) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*n.p = 0
	case int64:
		*n.p = boxoffice.ID(v)
	default:
		return fmt.Errorf("sqlite: id column holds %T", v)
	}
	return nil
}

// nullTime scans a nullable time column (unix milliseconds): NULL is the
// zero time.
type nullTime struct{ p *time.Time }

func (n nullTime) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*n.p = time.Time{}
	case int64:
		*n.p = fromMillis(v)
	default:
		return fmt.Errorf("sqlite: time column holds %T", v)
	}
	return nil
}

// orNull is how an optional id is written: NULL for none.
func orNull(id boxoffice.ID) any {
	if id == 0 {
		return nil
	}
	return int64(id)
}

// paymentColumns are the columns scanPayment reads, in its order.
// The event is its booking's (payments has no column of its own for it).
const paymentColumns = `(SELECT b.event_id FROM bookings b WHERE b.id = payments.booking_id), booking_id, auth_id, amount_cents, status, created_at`

func scanPayment(sc scanner) (boxoffice.Payment, error) {
	var (
		p         boxoffice.Payment
		createdAt int64
	)
	if err := sc.Scan(&p.EventID, &p.BookingID, &p.AuthID, &p.AmountCents, &p.Status, &createdAt); err != nil {
		return boxoffice.Payment{}, err
	}
	p.CreatedAt = fromMillis(createdAt)
	return p, nil
}

// listingColumns are the columns scanListing reads, in its order.
const listingColumns = `id, event_id, ticket_id, seat_id, seller_id, price_cents, status, buyer_booking_id, created_at, updated_at`

func scanListing(sc scanner) (boxoffice.Listing, error) {
	var (
		l                    boxoffice.Listing
		createdAt, updatedAt int64
	)
	if err := sc.Scan(&l.ID, &l.EventID, &l.TicketID, &l.SeatID, &l.SellerID, &l.PriceCents, &l.Status,
		nullID{&l.BuyerBookingID}, &createdAt, &updatedAt); err != nil {
		return boxoffice.Listing{}, err
	}
	l.CreatedAt, l.UpdatedAt = fromMillis(createdAt), fromMillis(updatedAt)
	return l, nil
}

// payoutColumns are the columns scanPayout reads, in its order.
const payoutColumns = `listing_id, seller_id, amount_cents, status, created_at`

func scanPayout(sc scanner) (boxoffice.Payout, error) {
	var (
		p         boxoffice.Payout
		createdAt int64
	)
	if err := sc.Scan(&p.ListingID, &p.SellerID, &p.AmountCents, &p.Status, &createdAt); err != nil {
		return boxoffice.Payout{}, err
	}
	p.CreatedAt = fromMillis(createdAt)
	return p, nil
}

// waitlistColumns are the columns scanWaitlistEntry reads, in its order.
const waitlistColumns = `id, event_id, user_id, section, price_tier, quantity, status, booking_id, offers, joined_at, updated_at`

func scanWaitlistEntry(sc scanner) (boxoffice.WaitlistEntry, error) {
	var (
		w                   boxoffice.WaitlistEntry
		joinedAt, updatedAt int64
	)
	if err := sc.Scan(&w.ID, &w.EventID, &w.UserID, &w.Section, &w.PriceTier, &w.Quantity, &w.Status,
		nullID{&w.BookingID}, &w.Offers, &joinedAt, &updatedAt); err != nil {
		return boxoffice.WaitlistEntry{}, err
	}
	w.JoinedAt, w.UpdatedAt = fromMillis(joinedAt), fromMillis(updatedAt)
	return w, nil
}

// seatReturnColumns are the columns scanSeatReturn reads, in its order.
const seatReturnColumns = `id, event_id, booking_id, seat_ids, listing_id, created_at`

func scanSeatReturn(sc scanner) (boxoffice.SeatReturn, error) {
	var (
		r         boxoffice.SeatReturn
		seats     string
		createdAt int64
	)
	if err := sc.Scan(&r.ID, &r.EventID, &r.BookingID, &seats, nullID{&r.ListingID}, &createdAt); err != nil {
		return boxoffice.SeatReturn{}, err
	}
	if err := json.Unmarshal([]byte(seats), &r.SeatIDs); err != nil {
		return boxoffice.SeatReturn{}, fmt.Errorf("seat return %d: seat_ids: %w", r.ID, err)
	}
	r.CreatedAt = fromMillis(createdAt)
	return r, nil
}

// idempotencyColumns are the columns scanIdempotency reads, in its order.
const idempotencyColumns = `user_id, key, request_hash, outcome, body, created_at, expires_at`

func scanIdempotency(sc scanner) (*boxoffice.IdempotencyRecord, error) {
	var (
		r                    boxoffice.IdempotencyRecord
		createdAt, expiresAt int64
	)
	if err := sc.Scan(&r.UserID, &r.Key, &r.RequestHash, &r.Outcome, &r.Body, &createdAt, &expiresAt); err != nil {
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
	b, err := loadBookingSeats(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if b.Tickets, err = bookingTickets(ctx, q, id); err != nil {
		return nil, err
	}
	return b, nil
}

// loadBookingSeats is loadBooking without the tickets: what a booking that
// has none yet (a pending one) is read with.
func loadBookingSeats(ctx context.Context, q querier, id boxoffice.ID) (*boxoffice.Booking, error) {
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
	return b, nil
}

// bookingTickets reads a booking's tickets in its seats' order.
func bookingTickets(ctx context.Context, q querier, id boxoffice.ID) ([]boxoffice.Ticket, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT `+ticketColumns+`
		FROM tickets t
		JOIN booking_seats bs ON bs.booking_id = t.booking_id AND bs.seat_id = t.seat_id
		WHERE t.booking_id = ?
		ORDER BY bs.position, t.id`, id)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanTicket)
}

// jsonStrings encodes strings as one JSON array parameter for json_each.
func jsonStrings(ss []string) string {
	b, err := json.Marshal(ss)
	if err != nil {
		panic(err) // strings always encode
	}
	return string(b)
}
