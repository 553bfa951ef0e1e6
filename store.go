package boxoffice

import (
	"context"
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
	PendingOutbox(ctx context.Context, limit int) ([]OutboxEvent, error)
	// MarkPublished records that the events with these Seqs were published.
	MarkPublished(ctx context.Context, seqs []int64, now time.Time) error
	// PurgeOutbox deletes events published before cutoff.
	PurgeOutbox(ctx context.Context, cutoff time.Time) (int, error)
}
