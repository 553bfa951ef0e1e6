package sale

import (
	"context"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/combine"
)

// The use cases' stores, declared where they are used: each names the
// store methods its use case calls and nothing else, so a reader sees what
// each touches and a test can give each a store of its own.

// IdempotencyReader reads the answers recorded for idempotency keys.
type IdempotencyReader interface {
	Idempotency(ctx context.Context, userID, key string) (*boxoffice.IdempotencyRecord, error)
}

// AnswerCodec turns the answers recorded for idempotency keys into the
// bytes of their record, and back. A retry, possibly served by another
// release, must get back the answer its first request got, so the record
// holds the delivery layer's format (the API's JSON), not sale's: sale's
// types carry none. Encode gets a *ReserveResult (OutcomeHeld), a
// *Confirmation (OutcomeConfirmed), a *Cancellation (OutcomeCancelled), a
// CreatedListing (OutcomeListed) or a CreatedEntry (OutcomeJoined), as a
// value or a pointer; Decode gets a pointer to the same type to fill. The
// outcome is what the record says it holds: records written before
// outcomes were kept have "", so a codec goes by the Go type.
type AnswerCodec interface {
	Encode(outcome boxoffice.Outcome, v any) ([]byte, error)
	Decode(outcome boxoffice.Outcome, b []byte, out any) error
}

// bookingReader reads one booking.
type bookingReader interface {
	Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error)
}

// EventStore is what Catalog needs.
type EventStore interface {
	CreateEvent(ctx context.Context, e *boxoffice.Event) error
	Events(ctx context.Context, f boxoffice.EventFilter) ([]*boxoffice.Event, error)
}

// BookingStore is what Bookings needs.
type BookingStore interface {
	CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error
	Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error)
	ConfirmBooking(ctx context.Context, c boxoffice.ConfirmBooking) (*boxoffice.Booking, error)
	ReleaseBooking(ctx context.Context, id boxoffice.ID, to boxoffice.BookingStatus, now time.Time) (*boxoffice.Booking, error)
	MarkCaptured(ctx context.Context, eventID, bookingID boxoffice.ID) error
	PutIdempotency(ctx context.Context, r *boxoffice.IdempotencyRecord) error
	SoldSeats(ctx context.Context, eventID boxoffice.ID) ([]string, error)
}

// QueueStore is what Queue needs: the drain's batched writes and the
// draw.
type QueueStore interface {
	CreateBookings(ctx context.Context, nbs []boxoffice.NewBooking) (errs []error, err error)
	Idempotencies(ctx context.Context, userIDs, keys []string) ([]*boxoffice.IdempotencyRecord, error)
	Draw(ctx context.Context, eventID boxoffice.ID) (*boxoffice.Draw, error)
	RecordDraw(ctx context.Context, d *boxoffice.Draw) error
	DrawsDue(ctx context.Context, now time.Time, limit int) ([]boxoffice.ID, error)
	MarkDrawReleased(ctx context.Context, eventID boxoffice.ID) error
}

// WaitlistStore is what Waitlist needs: the list, and the returns pass
// that offers it the seats that come back.
type WaitlistStore interface {
	Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error)
	CreateBooking(ctx context.Context, nb boxoffice.NewBooking) error
	ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*boxoffice.Booking, error)
	Listing(ctx context.Context, id boxoffice.ID) (*boxoffice.Listing, error)
	JoinWaitlist(ctx context.Context, e *boxoffice.WaitlistEntry, idem *boxoffice.IdempotencyRecord) error
	WaitlistEntry(ctx context.Context, id boxoffice.ID) (*boxoffice.WaitlistEntry, error)
	UserWaitlist(ctx context.Context, userID string) ([]boxoffice.WaitlistEntry, error)
	LeaveWaitlist(ctx context.Context, id boxoffice.ID, now time.Time) (*boxoffice.WaitlistEntry, error)
	WaitingEntries(ctx context.Context, eventID, after boxoffice.ID, limit int) ([]boxoffice.WaitlistEntry, error)
	WaitlistAhead(ctx context.Context, eventID, id boxoffice.ID) (int, error)
	PendingReturns(ctx context.Context, limit int) ([]boxoffice.SeatReturn, error)
	DeleteReturn(ctx context.Context, id int64) error
}

// ResaleStore is what Resale needs.
type ResaleStore interface {
	Ticket(ctx context.Context, id boxoffice.ID) (*boxoffice.Ticket, error)
	CreateListing(ctx context.Context, l *boxoffice.Listing, idem *boxoffice.IdempotencyRecord) error
	Listing(ctx context.Context, id boxoffice.ID) (*boxoffice.Listing, error)
	EventListings(ctx context.Context, eventID boxoffice.ID) ([]boxoffice.Listing, error)
	UserListings(ctx context.Context, sellerID string) ([]boxoffice.Listing, error)
	WithdrawListing(ctx context.Context, id boxoffice.ID, sellerID string, now time.Time) (*boxoffice.Listing, error)
	UserPayouts(ctx context.Context, sellerID string) ([]boxoffice.Payout, error)
}

// TicketStore is what Tickets needs: tickets, check-in, cancellation and
// its refund.
type TicketStore interface {
	Ticket(ctx context.Context, id boxoffice.ID) (*boxoffice.Ticket, error)
	UserTickets(ctx context.Context, userID string) ([]boxoffice.Ticket, error)
	CheckIn(ctx context.Context, eventID boxoffice.ID, code string, now time.Time) (*boxoffice.Ticket, error)
	Booking(ctx context.Context, id boxoffice.ID) (*boxoffice.Booking, error)
	CancelBooking(ctx context.Context, c boxoffice.CancelBooking) (*boxoffice.Booking, error)
	Payment(ctx context.Context, bookingID boxoffice.ID) (*boxoffice.Payment, error)
	MarkRefunded(ctx context.Context, bookingID boxoffice.ID, now time.Time) error
}

// UpkeepStore is what the reconciler needs.
type UpkeepStore interface {
	Ping(ctx context.Context) error
	ExpireBookings(ctx context.Context, cutoff time.Time, limit int) ([]*boxoffice.Booking, error)
	UncapturedPayments(ctx context.Context, cutoff time.Time, limit int) ([]boxoffice.Payment, error)
	MarkCaptured(ctx context.Context, eventID, bookingID boxoffice.ID) error
	RefundsDue(ctx context.Context, limit int) ([]boxoffice.Payment, error)
	PurgeIdempotency(ctx context.Context, now time.Time) (int, error)
}

// The use cases. Each is created by New and reached through Service.

// Catalog creates and reads events.
type Catalog struct {
	*core
	store EventStore
}

// Bookings reserves seats (direct sales), confirms (pays) and releases.
type Bookings struct {
	*core
	store   BookingStore
	resale  *Resale   // a reserve of a listing
	returns *Waitlist // seats released go to the returns pass
}

// Queue runs queued sales: the front door that answers with a position,
// the workers' drain, the pre-queue opener and its draw, the estimates.
type Queue struct {
	*core
	store     QueueStore
	bookings  *Bookings
	estimator *estimator
	admitter  *combine.Combiner[admission, admitted]
}

// Waitlist keeps the waitlist and runs the returns pass that offers it
// the seats that come back.
type Waitlist struct {
	*core
	store    WaitlistStore
	bookings *Bookings
}

// Resale lists tickets for resale and reads the listings; buying one is a
// reserve (Bookings).
type Resale struct {
	*core
	store    ResaleStore
	bookings *Bookings
}

// Tickets reads tickets, checks them in at the door and cancels bookings.
type Tickets struct {
	*core
	store   TicketStore
	returns *Waitlist // seats cancelled go to the returns pass
}

// Upkeep is the reconciler.
type Upkeep struct {
	*core
	store      UpkeepStore
	tickets    *Tickets
	queuePurge boxoffice.QueuePurger // nil: the queue's entries expire by themselves
}
