package boxoffice

import (
	"encoding/json"
	"time"
)

// Fan-to-fan resale. A ticket owner lists a valid ticket at a price; a
// buyer reserves the listing through the same hold and confirm flow as a
// primary sale (a Booking with ListingID set), so the hold keeps two buyers
// from paying for one listing. On payment the store, in one transaction,
// voids the seller's ticket (VoidResold), issues the buyer a new ticket
// with a new id and code, marks the listing sold, writes the seller's
// payout and a ticket.resold event.

// ListingStatus is where a resale listing is.
type ListingStatus string

const (
	// ListingActive: on the market; a buyer may reserve it.
	ListingActive ListingStatus = "active"
	// ListingSold: a buyer paid; the ticket is theirs.
	ListingSold ListingStatus = "sold"
	// ListingWithdrawn: the seller took it off the market.
	ListingWithdrawn ListingStatus = "withdrawn"
	// ListingVoid: the ticket was admitted at the venue (checked in), so
	// it can no longer be sold.
	ListingVoid ListingStatus = "void"
)

// Listing offers one ticket for resale.
type Listing struct {
	ID       ID
	EventID  ID
	TicketID ID
	SeatID   string
	SellerID string
	// PriceCents is what the buyer pays, and the seller's payout.
	PriceCents int64
	Status     ListingStatus
	// BuyerBookingID is the buyer's booking once sold.
	BuyerBookingID ID
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// PayoutStatus is where the money owed to a seller is.
type PayoutStatus string

// PayoutPending: owed to the seller, to be paid out by the finance side
// (out of scope here: the record is what boxoffice promises).
const PayoutPending PayoutStatus = "pending"

// Payout is what a seller is owed for a sold listing, one per listing.
type Payout struct {
	ListingID   ID
	SellerID    string
	AmountCents int64
	Status      PayoutStatus
	CreatedAt   time.Time
}

// TopicTicketResold reports a ticket changing hands through resale.
const TopicTicketResold = "ticket.resold"

// TicketResoldEvent is the JSON payload of a ticket.resold outbox event
// (docs/events.md).
type TicketResoldEvent struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	OccurredAt time.Time `json:"occurred_at"`
	Resale     Resale    `json:"resale"`
}

// Resale is a completed resale as its event reports it.
type Resale struct {
	ListingID   ID     `json:"listing_id"`
	EventID     ID     `json:"event_id"`
	SeatID      string `json:"seat_id"`
	PriceCents  int64  `json:"price_cents"`
	SellerID    string `json:"seller_id"`
	BuyerID     string `json:"buyer_id"`
	BookingID   ID     `json:"booking_id"`
	OldTicketID ID     `json:"old_ticket_id"`
	NewTicketID ID     `json:"new_ticket_id"`
}

// NewTicketResoldEvent returns the outbox event of a completed resale at
// at (as stored: millisecond precision). Its ID is
// "ticket.resold:<listing id>" (a listing sells once); its key
// "<event id>:<seat id>", so one seat's resales stay in order.
func NewTicketResoldEvent(r Resale, at time.Time) (OutboxEvent, error) {
	id := TopicTicketResold + ":" + r.ListingID.String()
	at = at.UTC()
	payload, err := json.Marshal(TicketResoldEvent{ID: id, Type: TopicTicketResold, OccurredAt: at, Resale: r})
	if err != nil {
		return OutboxEvent{}, &Error{Code: EINTERNAL, Message: "internal error", Err: err}
	}
	return OutboxEvent{ID: id, Topic: TopicTicketResold, Key: r.EventID.String() + ":" + r.SeatID, Payload: payload, CreatedAt: at}, nil
}
