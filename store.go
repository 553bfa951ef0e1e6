package boxoffice

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice/internal/jsonappend"
)

// Store is the database port: events, seats, bookings, tickets, payments
// and idempotency records. Implementations: sqlite.Store (embedded) and
// postgres.Store (production). Every implementation passes storetest.Run.
//
// Each method owns its transaction; a failed method writes nothing.
type Store interface {
	EventStore
	BookingStore
	TicketStore
	ResaleStore
	WaitlistStore
	IdempotencyStore
	OutboxStore
	// Ping reports whether the database is reachable.
	Ping(ctx context.Context) error
	Close() error
}

// EventFilter pages through events by show start, latest first (by id).
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
	// Events lists events by show start, latest first (by id).
	Events(ctx context.Context, f EventFilter) ([]*Event, error)
	// SoldSeats returns the ids of the event's seats that have a valid ticket.
	SoldSeats(ctx context.Context, eventID ID) ([]string, error)
	// Draw returns the event's pre-queue draw (its seed, and its order once
	// drawn), or ENOTFOUND when it has none.
	Draw(ctx context.Context, eventID ID) (*Draw, error)
	// RecordDraw records a draw's outcome (Order, FirstPosition, DrawnAt)
	// once, keeping the seed stored at CreateEvent; a draw recorded before
	// wins and the call changes nothing. An event without a stored seed
	// (created before draws were committed to) gets d.Seed, committed at
	// DrawnAt.
	RecordDraw(ctx context.Context, d *Draw) error
	// MarkDrawReleased records that the event's drawn requests are in the
	// request log (after RecordDraw and QueueState.MarkReleased): the
	// draw is no longer due. Marking an undrawn draw, or one marked before,
	// changes nothing; an event without a draw is ENOTFOUND.
	MarkDrawReleased(ctx context.Context, eventID ID) error
	// DrawsDue lists the events an opener owes work by now: committed to
	// a draw (a stored seed) not yet released (MarkDrawReleased), whose
	// sale has opened at or before now and whose show has not started;
	// the oldest openings
	// first (a sharded store: each shard's, in turns), at most limit (a
	// store may cap it lower: the next call gets
	// the rest, as the listed ones are drawn). It reads only such draws,
	// however many events there are (the opener asks several times a
	// second).
	DrawsDue(ctx context.Context, now time.Time, limit int) ([]ID, error)
}

// NewBooking is a pending booking to write after its hold was granted.
type NewBooking struct {
	Booking *Booking
	// TicketLimit is the event's per-user limit: the store refuses (ELIMIT)
	// when the user's seats for the event (the seats of their live pending
	// bookings and their valid tickets) plus these would exceed it. Checked
	// inside the transaction, so parallel requests from one user cannot
	// slip past it.
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
	// EventID is the booking's event when the caller knows it, zero when
	// not. A store may find the booking through it (PostgreSQL then
	// probes one event's partition rather than every month's); a booking
	// of another event is ENOTFOUND.
	EventID ID
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
	// PaymentRefundPending: the booking was cancelled; the refund is owed
	// and retried by the reconciler until the gateway confirms it.
	PaymentRefundPending PaymentStatus = "refund_pending"
	PaymentRefunded      PaymentStatus = "refunded"
)

// Payment is the record of a booking's charge.
type Payment struct {
	EventID     ID
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
// booking.confirmed (not when it returns a booking confirmed before; a
// resale purchase also ticket.resold), ReleaseBooking booking.released or
// booking.expired (after to), ExpireBookings booking.expired for each
// booking, CancelBooking booking.cancelled. A call that fails writes no
// event.
//
// Every call that ends a hold or a sale (ReleaseBooking, ExpireBookings,
// CancelBooking) also writes a SeatReturn of the booking's seats in the
// same transaction, for the waitlist (see WaitlistStore); a resale
// purchase's return names its listing.
type BookingStore interface {
	// CreateBooking writes a pending booking (see NewBooking for the limit
	// and idempotency rules). Errors: ELIMIT, EIDEMINFLIGHT, ENOTFOUND for
	// an unknown event, and ESEATTAKEN (naming the seats) when a seat already
	// has a valid ticket: the lock layer forgets a sold seat once its hold
	// runs out, the database does not.
	//
	// A resale purchase (Booking.ListingID set) has exactly one seat, the
	// listing's: the listing must be active and of this event and seat
	// (ECONFLICT "no longer on sale" otherwise, ENOTFOUND if there is no
	// such listing), not the buyer's own (EINVALID), and not claimed by
	// another live pending booking at Booking.CreatedAt (ESEATTAKEN: the
	// database backs the lock layer up). The seat being sold is what a
	// listing is, so the sold-seat check does not apply.
	//
	// A waitlist offer (Booking.WaitlistEntryID set) moves the entry from
	// waiting to offered (Offers+1, BookingID = this booking) in the same
	// transaction; ECONFLICT if the entry is not waiting, or not this
	// user's or event's.
	//
	// The errors come in this order, the first that applies:
	//   - EINVALID for the booking's shape (NewBooking.Validate);
	//   - ENOTFOUND for an unknown event;
	//   - EIDEMINFLIGHT when the idempotency key is taken (so a retry is
	//     told it is a retry);
	//   - for a resale purchase, the listing's errors; for a waitlist
	//     offer, the entry's, then ESEATTAKEN for the sold seats; for any
	//     other booking, ESEATTAKEN for the sold seats;
	//   - ELIMIT (NewBooking.CheckLimit);
	//   - ECONFLICT when the booking ID is taken;
	//   - EINVALID naming the seats not in the layout, then EINVALID for a
	//     seat named twice (NewBooking.CheckSeatsOnce).
	CreateBooking(ctx context.Context, nb NewBooking) error

	// CreateBookings writes a batch of plain bookings (no resale purchase,
	// no waitlist offer: those are EINVALID here) in one transaction.
	// errs[i] is what CreateBooking would have answered booking i had the
	// bookings been written one after the other in slice order: a later
	// booking's limit counts the earlier winners' seats, a key or id an
	// earlier one took is taken. A refused booking writes nothing and does
	// not stop the others. err fails the whole batch (the database
	// unavailable, a failed commit): then nothing was written. It is the
	// queue drain's write: one transaction per batch of decisions.
	CreateBookings(ctx context.Context, nbs []NewBooking) (errs []error, err error)

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
	// ConfirmBooking.Check gives the order of the checks that need no
	// database (those come first: status, fence, hold, then EINVALID for
	// tickets that do not name each seat of the booking once, each with an
	// id and a code, or a payment without an authorization id); the
	// fencing check, a resale's listing, ESEATTAKEN and EIDEMINFLIGHT come
	// after.
	//
	// A resale purchase also, in the same transaction: marks the listing
	// sold to this booking (ECONFLICT if it is no longer active), voids the
	// seller's ticket with VoidResold (ECONFLICT if it is no longer valid,
	// or checked in), issues the one ticket of c.Tickets to the buyer,
	// writes the seller's Payout of the listing's price, and a
	// ticket.resold event. A waitlist offer's entry becomes fulfilled.
	ConfirmBooking(ctx context.Context, c ConfirmBooking) (*Booking, error)

	// ReleaseBooking moves a pending booking to released or expired (to).
	// It returns the booking as it is afterwards; ECONFLICT if it was not
	// pending. A waitlist offer's entry, if still offered, lapses.
	ReleaseBooking(ctx context.Context, id ID, to BookingStatus, now time.Time) (*Booking, error)

	// ExpireBookings moves up to limit pending bookings whose hold ran out
	// at or before cutoff to expired and returns them, oldest hold first;
	// offers lapse as in ReleaseBooking.
	ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*Booking, error)

	// CancelBooking moves a confirmed booking to cancelled at c.Now: its
	// tickets become void (VoidCancelled), its payment refund_pending (the
	// caller then refunds and calls MarkRefunded), and its seats come back
	// (a SeatReturn). It refuses with ECONFLICT, writing nothing, when the
	// booking is not confirmed, is a resale purchase, or any of its tickets
	// is no longer valid (resold), checked in or listed for resale. A
	// booking already cancelled is returned as it is with a nil error. The
	// refund policy is the caller's to check. Idempotency, when set, is
	// recorded in the same transaction.
	CancelBooking(ctx context.Context, c CancelBooking) (*Booking, error)

	// Payment returns a booking's payment, or ENOTFOUND.
	Payment(ctx context.Context, bookingID ID) (*Payment, error)

	// MarkCaptured records that a booking of eventID had its payment
	// captured. A payment in refund_pending or refunded is left as it is
	// (nil error): a late capture must not erase a refund that is owed.
	// ENOTFOUND if the booking has no payment (or is not eventID's).
	MarkCaptured(ctx context.Context, eventID, bookingID ID) error

	// UncapturedPayments returns up to limit payments still authorized that
	// were recorded before cutoff (a crash between commit and capture).
	UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]Payment, error)

	// MarkRefunded records that a refund_pending payment was refunded at
	// now. A payment refunded before is left as it is.
	MarkRefunded(ctx context.Context, bookingID ID, now time.Time) error

	// RefundsDue returns up to limit payments in refund_pending, oldest
	// first: refunds a crash or a gateway failure left owed.
	RefundsDue(ctx context.Context, limit int) ([]Payment, error)
}

// CancelBooking is what Cancel writes.
type CancelBooking struct {
	BookingID ID
	Now       time.Time
	// Idempotency, when set, is recorded in the same transaction.
	Idempotency *IdempotencyRecord
}

// TicketStore reads tickets and admits them at the venue.
type TicketStore interface {
	// Ticket returns a ticket (valid or void) with its active ListingID, or
	// ENOTFOUND.
	Ticket(ctx context.Context, id ID) (*Ticket, error)
	// UserTickets returns the user's valid tickets, newest first, each with
	// its active ListingID.
	UserTickets(ctx context.Context, userID string) ([]Ticket, error)
	// CheckIn admits the ticket with this code at now, once, at the doors of
	// event eventID (0: any event). It returns the ticket as admitted.
	// Errors: ENOTFOUND (no ticket has this code), ECONFLICT (a ticket of
	// another event, which is not admitted or used up),
	// ETICKETVOID (the code was voided by a resale or a cancellation: it
	// admits nobody), ECHECKEDIN (admitted before; the ticket is returned
	// with the error's message naming the time). An active listing of the
	// ticket is voided in the same transaction (ListingVoid): a ticket that
	// was used cannot be sold.
	CheckIn(ctx context.Context, eventID ID, code string, now time.Time) (*Ticket, error)
}

// ResaleStore keeps resale listings and payouts.
type ResaleStore interface {
	// CreateListing lists a ticket. The store sets l.EventID and l.SeatID
	// from the ticket, l.Status to active. It refuses with ENOTFOUND when
	// the ticket does not exist or is not l.SellerID's valid ticket, and
	// with ECONFLICT when it is checked in or already listed. Idempotency,
	// when set, is recorded in the same transaction (EIDEMINFLIGHT if the
	// key is taken). The event's resale rules (closed, price cap) are the
	// caller's to check.
	CreateListing(ctx context.Context, l *Listing, idem *IdempotencyRecord) error
	// Listing returns a listing, or ENOTFOUND.
	Listing(ctx context.Context, id ID) (*Listing, error)
	// EventListings returns the event's active listings, by seat id.
	EventListings(ctx context.Context, eventID ID) ([]Listing, error)
	// UserListings returns the seller's listings, newest first.
	UserListings(ctx context.Context, sellerID string) ([]Listing, error)
	// WithdrawListing takes an active listing of sellerID off the market at
	// now and returns it. ENOTFOUND if it is not the seller's; ECONFLICT if
	// it is not active, or a live pending booking (a buyer's hold at now)
	// claims it. A listing withdrawn before is returned as it is.
	WithdrawListing(ctx context.Context, id ID, sellerID string, now time.Time) (*Listing, error)
	// UserPayouts returns the seller's payouts, newest first.
	UserPayouts(ctx context.Context, sellerID string) ([]Payout, error)
}

// WaitlistStore keeps waitlist entries and the seat returns that feed
// them.
type WaitlistStore interface {
	// JoinWaitlist writes a waiting entry. ENOTFOUND for an unknown event;
	// ECONFLICT when the user has a live entry (waiting or offered) for the
	// event; EIDEMINFLIGHT when idem's key is taken. Idempotency, when
	// set, is recorded in the same transaction. That the entry's section,
	// tier and quantity fit the event is the caller's to check.
	JoinWaitlist(ctx context.Context, e *WaitlistEntry, idem *IdempotencyRecord) error
	// WaitlistEntry returns an entry, or ENOTFOUND.
	WaitlistEntry(ctx context.Context, id ID) (*WaitlistEntry, error)
	// UserWaitlist returns the user's entries, newest first.
	UserWaitlist(ctx context.Context, userID string) ([]WaitlistEntry, error)
	// LeaveWaitlist moves a live entry to left at now and returns it; an
	// entry that is no longer live is returned as it is. (An open offer's
	// booking is the caller's to release.)
	LeaveWaitlist(ctx context.Context, id ID, now time.Time) (*WaitlistEntry, error)
	// WaitingEntries returns up to limit waiting entries of the event with
	// an ID above after, in join order (by ID).
	WaitingEntries(ctx context.Context, eventID, after ID, limit int) ([]WaitlistEntry, error)
	// WaitlistAhead counts the event's waiting entries that joined before
	// entry id.
	WaitlistAhead(ctx context.Context, eventID, id ID) (int, error)

	// PendingReturns returns up to limit seat returns, oldest first.
	PendingReturns(ctx context.Context, limit int) ([]SeatReturn, error)
	// DeleteReturn forgets a handled return; an unknown id is not an error.
	DeleteReturn(ctx context.Context, id int64) error
}

// IdempotencyRecord is the stored answer to a state-changing request,
// keyed by (UserID, Key).
type IdempotencyRecord struct {
	UserID string
	Key    string
	// RequestHash fingerprints method, path and body: the same key with
	// another request is refused.
	RequestHash string
	// Outcome is the kind of answer recorded, Body the answer itself as
	// the delivery layer encodes it (sale.AnswerCodec: the API's JSON), so
	// that a retry gets back the bytes its first request was answered
	// with.
	Outcome   Outcome
	Body      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Outcome names what an idempotent request did, as its record keeps it.
type Outcome string

// The outcomes recorded.
const (
	OutcomeHeld      Outcome = "held"      // a reserve held seats: a pending booking
	OutcomeConfirmed Outcome = "confirmed" // a confirm paid: tickets
	OutcomeCancelled Outcome = "cancelled" // a cancel voided tickets and refunds
	OutcomeListed    Outcome = "listed"    // a ticket listed for resale
	OutcomeJoined    Outcome = "joined"    // a waitlist joined
)

// IdempotencyStore keeps idempotency records.
type IdempotencyStore interface {
	// Idempotency returns the record for (userID, key), or ENOTFOUND.
	Idempotency(ctx context.Context, userID, key string) (*IdempotencyRecord, error)
	// Idempotencies reads many records at once: out[i] is the record for
	// (userIDs[i], keys[i]), nil when there is none. One round trip.
	Idempotencies(ctx context.Context, userIDs, keys []string) ([]*IdempotencyRecord, error)
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
	TopicBookingCancelled = "booking.cancelled"
)

// ReleaseTopic is the topic of a pending booking's move to status to
// (Store.ReleaseBooking): booking.expired for expired, booking.released
// for released.
func ReleaseTopic(to BookingStatus) string {
	if to == BookingExpired {
		return TopicBookingExpired
	}
	return TopicBookingReleased
}

// OutboxEvent is one booking event in the transactional outbox.
type OutboxEvent struct {
	// Seq orders the outbox; it is the store's, not the consumers'.
	Seq int64
	// ID is unique per event ("<topic>:<booking id>": a booking enters each
	// state once; "ticket.resold:<listing id>"), for consumers to
	// de-duplicate an at-least-once relay.
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
	// DeletePublished deletes the events with these Seqs, published to a
	// publisher that keeps them (Kafka): in place of MarkPublished and the
	// purge a day later, far fewer writes. Unknown Seqs are ignored.
	DeletePublished(ctx context.Context, seqs []int64) error
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
	// ListingID is set on a resale purchase, WaitlistEntryID on a waitlist
	// offer.
	ListingID       ID `json:"listing_id,omitempty"`
	WaitlistEntryID ID `json:"waitlist_entry_id,omitempty"`
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
	payload, err := bookingEventJSON(&BookingEvent{
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
			ListingID:   b.ListingID,

			WaitlistEntryID: b.WaitlistEntryID,
		},
	})
	if err != nil {
		return OutboxEvent{}, &Error{Code: EINTERNAL, Message: "internal error", Err: err}
	}
	return OutboxEvent{ID: id, Topic: topic, Key: b.ID.String(), Payload: payload, CreatedAt: at}, nil
}

// bookingEventJSON is json.Marshal(e), without reflection: every booking
// change writes one, inside the store's transaction (store_json_test.go
// checks the bytes against encoding/json). A time JSON cannot hold goes
// through encoding/json, for its error.
func bookingEventJSON(e *BookingEvent) ([]byte, error) {
	if !jsonappend.Writable(e.OccurredAt) || !jsonappend.Writable(e.Booking.HeldUntil) {
		return json.Marshal(e)
	}
	k := &e.Booking
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = jsonappend.String(b, e.ID)
	b = append(b, `,"type":`...)
	b = jsonappend.String(b, e.Type)
	b = append(b, `,"occurred_at":`...)
	b = jsonappend.Time(b, e.OccurredAt)
	b = append(b, `,"booking":{"booking_id":`...)
	b = jsonappend.QuotedInt(b, int64(k.BookingID))
	b = append(b, `,"event_id":`...)
	b = jsonappend.QuotedInt(b, int64(k.EventID))
	b = append(b, `,"user_id":`...)
	b = jsonappend.String(b, k.UserID)
	b = append(b, `,"seat_ids":`...)
	b = jsonappend.Strings(b, k.SeatIDs)
	b = append(b, `,"status":`...)
	b = jsonappend.String(b, string(k.Status))
	b = append(b, `,"amount_cents":`...)
	b = strconv.AppendInt(b, k.AmountCents, 10)
	b = append(b, `,"held_until":`...)
	b = jsonappend.Time(b, k.HeldUntil)
	b = jsonappend.OptionalQuotedInt(b, `,"listing_id":`, int64(k.ListingID))
	b = jsonappend.OptionalQuotedInt(b, `,"waitlist_entry_id":`, int64(k.WaitlistEntryID))
	return append(b, "}}"...), nil
}
