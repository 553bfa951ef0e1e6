package boxoffice

import (
	"context"
	"encoding/json"
	"time"
)

// Store is the database port: events, seats, bookings, tickets, payments
// and idempotency records. Implementations: sqlite.Store (embedded) and
// postgres.Store (production). Every implementation passes storetest.Run.
//
// Each method owns its transaction; a failed method writes nothing.
type Store interface {
	EventStore
	BookingStore
	IdempotencyStore
	OutboxStore
	// Ping reports whether the database is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// EventFilter pages through events, newest first.
type EventFilter struct {
	// Before, when set, returns only events with a smaller ID (the cursor).
	Before ID
	Limit  int
}

// EventStore keeps events and their layouts.
type EventStore interface {
	// CreateEvent writes the event and every seat of its layout.
	CreateEvent(ctx context.Context, e *Event) error
	// Event returns one event with its sections, or ENOTFOUND.
	Event(ctx context.Context, id ID) (*Event, error)
	// Events lists events, newest first.
	Events(ctx context.Context, f EventFilter) ([]*Event, error)
	// SoldSeats returns the ids of the event's seats that have a valid ticket.
	SoldSeats(ctx context.Context, eventID ID) ([]string, error)
}

// NewBooking is a pending booking to write after its hold was granted.
type NewBooking struct {
	Booking *Booking
	// TicketLimit is the event's per-user limit: the store refuses (ELIMIT)
	// when the user's live and confirmed seats for the event plus these
	// would exceed it. Checked inside the transaction, so parallel requests
	// from one user cannot slip past it.
	TicketLimit int
	// Idempotency, when set, is recorded in the same transaction, so a
	// booking and the answer to its retries are written together or not at
	// all. A record already present for (user, key) fails the call with
	// EIDEMINFLIGHT and writes nothing.
	Idempotency *IdempotencyRecord
}

// ConfirmBooking is what Confirm writes once the payment is authorized.
type ConfirmBooking struct {
	BookingID ID
	// Fence must equal the booking's fence: it proves the caller confirms
	// the hold it was granted.
	Fence int64
	Now   time.Time
	// Code is the confirmation code to record.
	Code string
	// Tickets to issue, one per seat of the booking, with ids and codes set.
	Tickets []Ticket
	Payment Payment
	// Idempotency, when set, is recorded in the same transaction.
	Idempotency *IdempotencyRecord
}

// PaymentStatus is where the money of a booking is.
type PaymentStatus string

const (
	PaymentAuthorized PaymentStatus = "authorized"
	PaymentCaptured   PaymentStatus = "captured"
)

// Payment is the record of a booking's charge.
type Payment struct {
	BookingID   ID
	AuthID      string
	AmountCents int64
	Status      PaymentStatus
	CreatedAt   time.Time
}

// BookingStore keeps bookings, tickets and payments.
//
// Every change of a booking's status writes one event to the outbox, in
// the same transaction: CreateBooking booking.held, ConfirmBooking
// booking.confirmed (not when it returns a booking confirmed before),
// ReleaseBooking booking.released or booking.expired (after to),
// ExpireBookings booking.expired for each booking. A call that fails
// writes no event.
type BookingStore interface {
	// CreateBooking writes a pending booking (see NewBooking for the limit
	// and idempotency rules). Errors: ELIMIT, EIDEMINFLIGHT, ENOTFOUND for
	// an unknown event, and ESEATTAKEN (naming the seats) when a seat already
	// has a valid ticket: the lock layer forgets a sold seat once its hold
	// runs out, the database does not.
	CreateBooking(ctx context.Context, nb NewBooking) error

	// Booking returns a booking, with its tickets once confirmed, or
	// ENOTFOUND.
	Booking(ctx context.Context, id ID) (*Booking, error)

	// ConfirmBooking moves a pending booking to confirmed, issuing its
	// tickets and recording the authorized payment, in one transaction.
	// It fails, writing nothing, with
	//   - ECONFLICT if the booking is no longer pending (released, expired),
	//   - EHOLDLOST if its hold ran out at c.Now, if c.Fence is not the
	//     booking's, or if a live pending booking with a larger fence now
	//     claims one of its seats (the fencing check),
	//   - ESEATTAKEN if a seat already has a valid ticket (the unique
	//     constraint, whatever the lock layer said).
	// A booking already confirmed is returned as it is, with a nil error and
	// nothing written: the caller compares PaymentAuthID with its own to
	// tell a retry from a second payment (which it must void).
	ConfirmBooking(ctx context.Context, c ConfirmBooking) (*Booking, error)

	// ReleaseBooking moves a pending booking to released or expired (to).
	// It returns the booking as it is afterwards; ECONFLICT if it was not
	// pending.
	ReleaseBooking(ctx context.Context, id ID, to BookingStatus, now time.Time) (*Booking, error)

	// ExpireBookings moves up to limit pending bookings whose hold ran out
	// before cutoff to expired and returns them.
	ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*Booking, error)

	// MarkCaptured records that a booking's payment was captured.
	MarkCaptured(ctx context.Context, bookingID ID) error

	// UncapturedPayments returns up to limit payments still authorized that
	// were recorded before cutoff (a crash between commit and capture).
	UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]Payment, error)
}

// IdempotencyRecord is the stored answer to a state-changing request,
// keyed by (UserID, Key).
type IdempotencyRecord struct {
	UserID string
	Key    string
	// RequestHash fingerprints method, path and body: the same key with
	// another request is refused.
	RequestHash string
	// Status and Body are the response to replay.
	Status    int
	Body      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// IdempotencyStore keeps idempotency records.
type IdempotencyStore interface {
	// Idempotency returns the record for (userID, key), or ENOTFOUND.
	Idempotency(ctx context.Context, userID, key string) (*IdempotencyRecord, error)
	// PutIdempotency records a response for a request that wrote nothing
	// else. A record already present fails with EIDEMINFLIGHT.
	PutIdempotency(ctx context.Context, r *IdempotencyRecord) error
	// PurgeIdempotency deletes records that expired before now.
	PurgeIdempotency(ctx context.Context, now time.Time) (int, error)
}

// Booking event topics, written to the outbox by the store in the same
// transaction as the change they report.
const (
	TopicBookingHeld      = "booking.held"
	TopicBookingConfirmed = "booking.confirmed"
	TopicBookingReleased  = "booking.released"
	TopicBookingExpired   = "booking.expired"
)

// OutboxEvent is one booking event in the transactional outbox.
type OutboxEvent struct {
	// Seq orders the outbox; it is the store's, not the consumers'.
	Seq int64
	// ID is unique per event ("<topic>:<booking id>": a booking enters each
	// state once), for consumers to de-duplicate an at-least-once relay.
	ID string
	// Topic is one of the Topic constants; Key the booking id, so that one
	// booking's events stay in order on one partition.
	Topic     string
	Key       string
	Payload   []byte // JSON, see docs/events.md
	CreatedAt time.Time
}

// OutboxStore is the read side of the outbox, for the relay.
type OutboxStore interface {
	// PendingOutbox returns up to limit unpublished events in Seq order.
	// One booking's events are in the order of its changes.
	PendingOutbox(ctx context.Context, limit int) ([]OutboxEvent, error)
	// MarkPublished records that the events with these Seqs were published.
	// Marking an event again keeps its first time; unknown Seqs are
	// ignored.
	MarkPublished(ctx context.Context, seqs []int64, now time.Time) error
	// PurgeOutbox deletes events published before cutoff.
	PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error)
}

// BookingEvent is the JSON payload of an outbox event, the same bytes on
// every store (docs/events.md describes the format for consumers).
type BookingEvent struct {
	// ID and Type repeat OutboxEvent.ID and Topic, so that a consumer that
	// sees only the payload can de-duplicate and dispatch.
	ID   string `json:"id"`
	Type string `json:"type"`
	// OccurredAt is when the booking changed, as the store recorded it.
	OccurredAt time.Time       `json:"occurred_at"`
	Booking    BookingSnapshot `json:"booking"`
}

// BookingSnapshot is a booking as its events report it: the booking after
// the change, without its tickets or payment.
type BookingSnapshot struct {
	BookingID   ID            `json:"booking_id"`
	EventID     ID            `json:"event_id"`
	UserID      string        `json:"user_id"`
	SeatIDs     []string      `json:"seat_ids"`
	Status      BookingStatus `json:"status"`
	AmountCents int64         `json:"amount_cents"`
	HeldUntil   time.Time     `json:"held_until"`
}

// NewBookingEvent returns the outbox event that reports b entering the
// state of topic at at: b is the booking as the store has just written it
// and at the time of the change (its CreatedAt for booking.held, else its
// new UpdatedAt), both as stored (millisecond precision). Seq is left for
// the store to assign; CreatedAt is at. Stores call it inside the
// transaction that makes the change; the error is only ever a time JSON
// cannot hold (a year past 9999).
func NewBookingEvent(topic string, b *Booking, at time.Time) (OutboxEvent, error) {
	id := topic + ":" + b.ID.String()
	at = at.UTC()
	payload, err := json.Marshal(BookingEvent{
		ID:         id,
		Type:       topic,
		OccurredAt: at,
		Booking: BookingSnapshot{
			BookingID:   b.ID,
			EventID:     b.EventID,
			UserID:      b.UserID,
			SeatIDs:     b.SeatIDs,
			Status:      b.Status,
			AmountCents: b.AmountCents,
			HeldUntil:   b.HeldUntil.UTC(),
		},
	})
	if err != nil {
		return OutboxEvent{}, &Error{Code: EINTERNAL, Message: "internal error", Err: err}
	}
	return OutboxEvent{ID: id, Topic: topic, Key: b.ID.String(), Payload: payload, CreatedAt: at}, nil
}
