package boxoffice

import (
	"slices"
	"strings"
	"time"
)

// BookingStatus is where a booking is in its life:
//
//	pending ──confirm──▶ confirmed ──cancel (refund)──▶ cancelled
//	   │ └──release──▶ released
//	   └────expiry───▶ expired
//
// A request whose seats could not be held makes no booking at all (a
// queued one records its outcome in the queue instead), so there is no
// "failed" booking; the schema's CHECK still admits the word, unused.
type BookingStatus string

const (
	BookingPending   BookingStatus = "pending"
	BookingConfirmed BookingStatus = "confirmed"
	BookingReleased  BookingStatus = "released"
	BookingExpired   BookingStatus = "expired"
	// BookingCancelled: confirmed, then cancelled by its owner under the
	// event's refund policy; its tickets are void and its payment refunded.
	BookingCancelled BookingStatus = "cancelled"
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
	// ListingID, when set, makes this a resale purchase: one seat, the
	// listed ticket's, at the listing's price. Confirming it moves the
	// ticket to the buyer (see BookingStore.ConfirmBooking).
	ListingID ID
	// WaitlistEntryID, when set, makes this a waitlist offer: a hold made
	// in the entry's user's name when seats came back.
	WaitlistEntryID ID
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

// Why a ticket is void.
const (
	VoidResold    = "resold"    // sold on through resale: the buyer has a new ticket
	VoidCancelled = "cancelled" // its booking was cancelled and refunded
)

// Ticket is the right to one seat. At most one valid ticket exists per
// (event, seat); the Store enforces it with a unique constraint.
type Ticket struct {
	ID        ID
	EventID   ID
	BookingID ID
	SeatID    string
	UserID    string
	// Code is what the venue scans; it is random and changes on transfer
	// (a resale voids the ticket and issues the buyer a new one).
	Code     string
	Status   TicketStatus
	IssuedAt time.Time
	// VoidReason says why a void ticket is void (VoidResold, VoidCancelled).
	VoidReason string
	// CheckedInAt is when the venue admitted the ticket; zero until then.
	// A ticket is admitted once.
	CheckedInAt time.Time
	// ListingID is the ticket's active resale listing, if it has one.
	ListingID ID
}

// MaxSeatsPerRequest caps how many seats one reserve request may name,
// whatever the event's ticket limit.
const MaxSeatsPerRequest = 10

// ValidateSeatSelection checks a reserve request's seats against the event
// layout, whose seats seat looks up by id: at least one, at most limit, no
// duplicates, all in the layout. It returns the seats in request order, or
// an EINVALID/ENOTFOUND error that names the offending seats.
func ValidateSeatSelection(seat func(id string) (Seat, bool), seatIDs []string, limit int) ([]Seat, error) {
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
		s, ok := seat(id)
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

// BestAvailable asks for Quantity seats side by side in one row instead of
// named seats: the best the event has left (the best row, sections as
// the organiser listed them and front rows first, from its centre
// outwards), optionally within one section or one price tier. Seats with
// features (wheelchair spaces, companion seats, restricted views) are
// left out unless Features asks for them; then the block has a seat with
// each feature asked for, and may have seats without.
type BestAvailable struct {
	Quantity  int           `json:"quantity"`
	Section   string        `json:"section,omitempty"`
	PriceTier string        `json:"price_tier,omitempty"`
	Features  []SeatFeature `json:"features,omitempty"`
}

// Wants reports whether seat may be in the block: in the request's
// section and tier, with no feature the request did not ask for.
func (b *BestAvailable) Wants(seat Seat) bool {
	if !inSectionAndTier(seat, b.Section, b.PriceTier) {
		return false
	}
	for _, f := range seat.Features {
		if !slices.Contains(b.Features, f) {
			return false
		}
	}
	return true
}

// Fits reports whether a block of wanted seats has a seat with each
// feature asked for.
func (b *BestAvailable) Fits(block []Seat) bool {
	for _, f := range b.Features {
		if !slices.ContainsFunc(block, func(s Seat) bool { return s.HasFeature(f) }) {
			return false
		}
	}
	return true
}

// inSectionAndTier reports whether seat is in section and tier; an empty
// one matches any.
func inSectionAndTier(seat Seat, section, tier string) bool {
	return (section == "" || section == seat.Section) && (tier == "" || tier == seat.PriceTier)
}

// Validate checks the request against the layout, the event's sections:
// a quantity between 1 and limit, a seat with each feature asked for, and
// at least Quantity seats side by side in one row of the section and tier
// asked for, all of them seats the request wants (Wants). It returns an
// ELIMIT or EINVALID *Error. It costs O(sections + seats with features),
// whatever the number of seats.
func (b *BestAvailable) Validate(sections []Section, limit int) error {
	if b.Quantity < 1 {
		return Errorf(EINVALID, "best_available.quantity must be at least 1")
	}
	if b.Quantity > limit {
		return Errorf(ELIMIT, "at most %d seats in one request", limit)
	}
	// The sections asked for, and in each the seats the request does not
	// want for their features, by row.
	type unwanted struct {
		sec    *Section
		byRow  map[int][]int // row → numbers of its seats not wanted
		wanted []SeatFeature // the features of the featured seats wanted
	}
	var in []unwanted
	for i := range sections {
		sec := &sections[i]
		if !inSectionAndTier(Seat{Section: sec.Name, PriceTier: sec.PriceTier}, b.Section, b.PriceTier) || sec.Rows < 1 || sec.SeatsPerRow < 1 {
			continue
		}
		u := unwanted{sec: sec}
		for key, fs := range sec.Features {
			r, n, ok := sec.featureSeat(key)
			if !ok {
				continue // no seat of the section: Seats never shows it
			}
			if b.Wants(Seat{Section: sec.Name, PriceTier: sec.PriceTier, Features: fs}) {
				u.wanted = append(u.wanted, fs...)
				continue
			}
			if u.byRow == nil {
				u.byRow = map[int][]int{}
			}
			u.byRow[r] = append(u.byRow[r], n)
		}
		in = append(in, u)
	}
	for i, f := range b.Features {
		if !KnownSeatFeature(f) || slices.Contains(b.Features[:i], f) {
			return Errorf(EINVALID, "best_available.features: %q is unknown or listed twice (known: wheelchair, companion, restricted_view)", f)
		}
		if !slices.ContainsFunc(in, func(u unwanted) bool { return slices.Contains(u.wanted, f) }) {
			return Errorf(EINVALID, "the event has no %s seat in section %q, price tier %q", strings.ReplaceAll(string(f), "_", " "), b.Section, b.PriceTier)
		}
	}
	for _, u := range in {
		if len(u.byRow) < u.sec.Rows && u.sec.SeatsPerRow >= b.Quantity {
			return nil // a row with every seat wanted
		}
		for _, nums := range u.byRow {
			slices.Sort(nums)
			prev := 0 // the last seat not wanted before the run
			for _, n := range append(nums, u.sec.SeatsPerRow+1) {
				if n-prev-1 >= b.Quantity {
					return nil
				}
				prev = n
			}
		}
	}
	return Errorf(EINVALID, "the event has no row with %d seats in section %q, price tier %q", b.Quantity, b.Section, b.PriceTier)
}
