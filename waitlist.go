package boxoffice

import "time"

// The waitlist. A user joins an event's waitlist (optionally for one
// section or price tier, for a quantity of seats); when seats come back
// (a hold expires, a holder releases, a booking is cancelled, a resale
// falls through) they are offered to the waiting entries in join order.
// An offer is a pending Booking in the user's name with WaitlistEntryID
// set, held for the offer window; paying for it fulfils the entry, letting
// it lapse (or releasing it) moves the seats to the next entry.

// WaitlistStatus is where a waitlist entry is.
type WaitlistStatus string

const (
	// WaitlistWaiting: in line for returned seats.
	WaitlistWaiting WaitlistStatus = "waiting"
	// WaitlistOffered: seats are held for the user (BookingID) until the
	// offer's booking is paid, released or expires.
	WaitlistOffered WaitlistStatus = "offered"
	// WaitlistFulfilled: the user paid for the offer.
	WaitlistFulfilled WaitlistStatus = "fulfilled"
	// WaitlistLapsed: the offer ran out or was declined; the seats moved on.
	WaitlistLapsed WaitlistStatus = "lapsed"
	// WaitlistLeft: the user left the waitlist.
	WaitlistLeft WaitlistStatus = "left"
)

// Live reports whether the entry still takes part: waiting or offered.
func (s WaitlistStatus) Live() bool { return s == WaitlistWaiting || s == WaitlistOffered }

// WaitlistEntry is one user's place on an event's waitlist.
type WaitlistEntry struct {
	ID      ID
	EventID ID
	UserID  string
	// Section and PriceTier, when set, restrict the seats the user takes.
	Section   string
	PriceTier string
	// Quantity is how many seats the user wants, together, in one offer.
	Quantity int
	Status   WaitlistStatus
	// BookingID is the current (or last) offer.
	BookingID ID
	// Offers counts the offers made to this entry.
	Offers   int
	JoinedAt time.Time
	// UpdatedAt is when the status last changed.
	UpdatedAt time.Time
}

// Wants reports whether seat suits the entry's section and tier.
func (e *WaitlistEntry) Wants(seat Seat) bool { return inSectionAndTier(seat, e.Section, e.PriceTier) }

// SeatReturn is a batch of seats that came back: the store writes one in
// the same transaction that releases, expires or cancels a booking, and
// the service offers the seats to the waitlist (or gives them back to the
// public) and then deletes it. So a crash between the two loses no return:
// the next pass finds it.
type SeatReturn struct {
	// ID orders the returns; it is the store's.
	ID      int64
	EventID ID
	// BookingID is the booking the seats came from. Its hold in the lock
	// layer outlasts the booking by a grace period, so the seats can pass
	// from it to an offer (HoldRequest.Supersede) without being free.
	BookingID ID
	SeatIDs   []string
	// ListingID is set when a resale fell through: the seat goes back to
	// this listing, which is still on the market.
	ListingID ID
	CreatedAt time.Time
}
