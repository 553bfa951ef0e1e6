package boxoffice

import (
	"time"
)

// BookingStatus is where a booking is in its life:
//
//	pending ──confirm──▶ confirmed
//	   │ └──release──▶ released
//	   └────expiry───▶ expired
//
// failed is reserved for a booking whose hold could not be made (the
// flash-sale queue records those).
type BookingStatus string

const (
	BookingPending   BookingStatus = "pending"
	BookingConfirmed BookingStatus = "confirmed"
	BookingReleased  BookingStatus = "released"
	BookingExpired   BookingStatus = "expired"
	BookingFailed    BookingStatus = "failed"
)

// Booking is one user's claim on some seats of one event: a hold while
// pending, tickets once confirmed.
type Booking struct {
	ID      ID
	EventID ID
	UserID  string
	// SeatIDs are the seats held, in the order the user asked for them.
	SeatIDs []string
	Status  BookingStatus
	// Fence is the fencing token of the hold: a newer holder of a seat
	// always has a larger one (see Hold.Fence).
	Fence       int64
	AmountCents int64
	HeldUntil   time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// ConfirmationCode and Tickets are set once confirmed.
	ConfirmationCode string
	// PaymentAuthID is the authorization that paid for a confirmed booking.
	PaymentAuthID string
	Tickets       []Ticket
}

// Live reports whether the booking is pending and its hold has not run out
// at now.
func (b *Booking) Live(now time.Time) bool {
	return b.Status == BookingPending && now.Before(b.HeldUntil)
}

// EffectiveStatus is the status a caller should see at now: a pending
// booking whose hold ran out is expired even before the reconciler has
// written that down.
func (b *Booking) EffectiveStatus(now time.Time) BookingStatus {
	if b.Status == BookingPending && !now.Before(b.HeldUntil) {
		return BookingExpired
	}
	return b.Status
}

// TicketStatus says whether a ticket admits its holder.
type TicketStatus string

const (
	TicketValid TicketStatus = "valid"
	TicketVoid  TicketStatus = "void"
)

// Ticket is the right to one seat. At most one valid ticket exists per
// (event, seat); the Store enforces it with a unique constraint.
type Ticket struct {
	ID        ID
	EventID   ID
	BookingID ID
	SeatID    string
	UserID    string
	// Code is what the venue scans; it is random and changes on transfer.
	Code     string
	Status   TicketStatus
	IssuedAt time.Time
}

// MaxSeatsPerRequest caps how many seats one reserve request may name,
// whatever the event's ticket limit.
const MaxSeatsPerRequest = 10

// ValidateSeatSelection checks a reserve request's seats against the event
// layout: at least one, at most limit, no duplicates, all in the layout.
// It returns the seats in request order, or an EINVALID/ENOTFOUND error that
// names the offending seats.
func ValidateSeatSelection(layout map[string]Seat, seatIDs []string, limit int) ([]Seat, error) {
	if len(seatIDs) == 0 {
		return nil, Errorf(EINVALID, "seat_ids must name at least one seat")
	}
	if len(seatIDs) > limit {
		return nil, Errorf(ELIMIT, "at most %d seats in one request", limit)
	}
	seen := make(map[string]bool, len(seatIDs))
	seats := make([]Seat, 0, len(seatIDs))
	var unknown []string
	for _, id := range seatIDs {
		if seen[id] {
			return nil, &Error{Code: EINVALID, Message: "seat_ids lists a seat twice", Seats: []string{truncate(id, 64)}}
		}
		seen[id] = true
		s, ok := layout[id]
		if !ok {
			unknown = append(unknown, truncate(id, 64))
			continue
		}
		seats = append(seats, s)
	}
	if len(unknown) > 0 {
		return nil, &Error{Code: EINVALID, Message: "no such seat in this event", Seats: unknown}
	}
	return seats, nil
}
