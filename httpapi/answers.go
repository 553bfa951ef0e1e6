package httpapi

import (
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/jsonappend"
	"github.com/boxoffice/boxoffice/sale"
)

// The API's answers: the JSON of each use case's result, as the API has
// written it all along (names, omitempty, field order), and the mappings
// from package sale's results, which carry no wire format. Handlers write
// these, never a sale type.

// reserveJSON is the answer to a granted reserve (201), and the body of
// its idempotency record.
type reserveJSON struct {
	BookingID  boxoffice.ID `json:"booking_id"`
	HeldUntil  time.Time    `json:"held_until"`
	PaymentURL string       `json:"payment_url"`
	SeatIDs    []string     `json:"seat_ids,omitempty"`
}

func reserveOf(r *sale.ReserveResult) reserveJSON {
	return reserveJSON{BookingID: r.BookingID, HeldUntil: r.HeldUntil, PaymentURL: r.PaymentURL, SeatIDs: r.SeatIDs}
}

// appendJSON writes j as encoding/json does (reserve_json_test.go checks
// it): a reserve's answer and its idempotency record are written once each
// per booking, on the hot path.
func (j *reserveJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"booking_id":`...)
	b = jsonappend.QuotedInt(b, int64(j.BookingID))
	b = append(b, `,"held_until":`...)
	b = jsonappend.Time(b, j.HeldUntil)
	b = append(b, `,"payment_url":`...)
	b = jsonappend.String(b, j.PaymentURL)
	if len(j.SeatIDs) > 0 {
		b = append(b, `,"seat_ids":`...)
		b = jsonappend.Strings(b, j.SeatIDs)
	}
	return append(b, '}')
}

func (j reserveJSON) sale() sale.ReserveResult {
	return sale.ReserveResult{BookingID: j.BookingID, HeldUntil: j.HeldUntil, PaymentURL: j.PaymentURL, SeatIDs: j.SeatIDs}
}

// ticketJSON is a ticket as its owner sees it.
type ticketJSON struct {
	TicketID    boxoffice.ID `json:"ticket_id"`
	EventID     boxoffice.ID `json:"event_id"`
	BookingID   boxoffice.ID `json:"booking_id,omitempty"`
	SeatID      string       `json:"seat_id"`
	Code        string       `json:"code,omitempty"`
	Status      string       `json:"status"`
	VoidReason  string       `json:"void_reason,omitempty"`
	CheckedInAt string       `json:"checked_in_at,omitempty"`
	ListingID   boxoffice.ID `json:"listing_id,omitempty"`
}

func ticketOf(t *sale.TicketView) ticketJSON {
	return ticketJSON{TicketID: t.TicketID, EventID: t.EventID, BookingID: t.BookingID, SeatID: t.SeatID, Code: t.Code,
		Status: t.Status, VoidReason: t.VoidReason, CheckedInAt: t.CheckedInAt, ListingID: t.ListingID}
}

func (j ticketJSON) sale() sale.TicketView {
	return sale.TicketView{TicketID: j.TicketID, EventID: j.EventID, BookingID: j.BookingID, SeatID: j.SeatID, Code: j.Code,
		Status: j.Status, VoidReason: j.VoidReason, CheckedInAt: j.CheckedInAt, ListingID: j.ListingID}
}

// ticketsOf maps a list of tickets, keeping nil nil (null, or left out)
// and empty empty ([]).
func ticketsOf(ts []sale.TicketView) []ticketJSON {
	if ts == nil {
		return nil
	}
	out := make([]ticketJSON, len(ts))
	for i := range ts {
		out[i] = ticketOf(&ts[i])
	}
	return out
}

func ticketsSale(ts []ticketJSON) []sale.TicketView {
	if ts == nil {
		return nil
	}
	out := make([]sale.TicketView, len(ts))
	for i, t := range ts {
		out[i] = t.sale()
	}
	return out
}

// confirmationJSON is the answer to a confirm, and the body of its
// idempotency record.
type confirmationJSON struct {
	BookingID        boxoffice.ID `json:"booking_id"`
	ConfirmationCode string       `json:"confirmation_code"`
	AmountCents      int64        `json:"amount_cents"`
	Tickets          []ticketJSON `json:"tickets"`
}

func confirmationOf(c *sale.Confirmation) confirmationJSON {
	return confirmationJSON{BookingID: c.BookingID, ConfirmationCode: c.ConfirmationCode, AmountCents: c.AmountCents,
		Tickets: ticketsOf(c.Tickets)}
}

func (j confirmationJSON) sale() sale.Confirmation {
	return sale.Confirmation{BookingID: j.BookingID, ConfirmationCode: j.ConfirmationCode, AmountCents: j.AmountCents,
		Tickets: ticketsSale(j.Tickets)}
}

// cancellationJSON is the answer to a cancel, and the body of its
// idempotency record.
type cancellationJSON struct {
	BookingID    boxoffice.ID `json:"booking_id"`
	Status       string       `json:"status"`
	RefundCents  int64        `json:"refund_cents"`
	RefundStatus string       `json:"refund_status"`
}

func cancellationOf(c *sale.Cancellation) cancellationJSON {
	return cancellationJSON{BookingID: c.BookingID, Status: c.Status, RefundCents: c.RefundCents, RefundStatus: c.RefundStatus}
}

func (j cancellationJSON) sale() sale.Cancellation {
	return sale.Cancellation{BookingID: j.BookingID, Status: j.Status, RefundCents: j.RefundCents, RefundStatus: j.RefundStatus}
}

// listedJSON is the body of a listing's idempotency record: the listing a
// retry reads again (sale.CreatedListing).
type listedJSON struct {
	ListingID boxoffice.ID `json:"listing_id"`
}

// joinedJSON is the body of a waitlist join's idempotency record: the
// entry a retry reads again (sale.CreatedEntry).
type joinedJSON struct {
	EntryID boxoffice.ID `json:"entry_id"`
}

// bookingJSON is a booking as its owner sees it.
type bookingJSON struct {
	BookingID        boxoffice.ID `json:"booking_id"`
	EventID          boxoffice.ID `json:"event_id"`
	UserID           string       `json:"user_id"`
	Status           string       `json:"status"`
	SeatIDs          []string     `json:"seat_ids"`
	AmountCents      int64        `json:"amount_cents"`
	HeldUntil        string       `json:"held_until,omitempty"`
	PaymentURL       string       `json:"payment_url,omitempty"`
	ConfirmationCode string       `json:"confirmation_code,omitempty"`
	Tickets          []ticketJSON `json:"tickets,omitempty"`
	CreatedAt        string       `json:"created_at"`
	ListingID        boxoffice.ID `json:"listing_id,omitempty"`
	WaitlistEntryID  boxoffice.ID `json:"waitlist_entry_id,omitempty"`
}

func bookingOf(b *sale.BookingView) bookingJSON {
	return bookingJSON{BookingID: b.BookingID, EventID: b.EventID, UserID: b.UserID, Status: b.Status, SeatIDs: b.SeatIDs,
		AmountCents: b.AmountCents, HeldUntil: b.HeldUntil, PaymentURL: b.PaymentURL, ConfirmationCode: b.ConfirmationCode,
		Tickets: ticketsOf(b.Tickets), CreatedAt: b.CreatedAt, ListingID: b.ListingID, WaitlistEntryID: b.WaitlistEntryID}
}

// queueTicketJSON is a queued request as its user sees it (202, GET
// /queue/{id} and its stream).
type queueTicketJSON struct {
	RequestID            boxoffice.ID          `json:"request_id"`
	EventID              boxoffice.ID          `json:"event_id"`
	Status               boxoffice.QueueStatus `json:"status"`
	QueuePosition        int64                 `json:"queue_position"`
	Ahead                int64                 `json:"ahead"`
	EstimatedWaitSeconds *float64              `json:"estimated_wait_seconds"`
	SeatsLeft            *int                  `json:"seats_left,omitempty"`
	ExpectedSeatsLeft    *int                  `json:"expected_seats_left_at_turn,omitempty"`
	SaleOpensAt          time.Time             `json:"sale_opens_at"`
	StatusURL            string                `json:"status_url"`
	EventsURL            string                `json:"events_url"`
	Reason               string                `json:"reason,omitempty"`
	Message              string                `json:"message,omitempty"`
	BookingID            boxoffice.ID          `json:"booking_id,omitempty"`
	HeldUntil            *time.Time            `json:"held_until,omitempty"`
	PaymentURL           string                `json:"payment_url,omitempty"`
	WaitlistURL          string                `json:"waitlist_url,omitempty"`
}

func queueTicketOf(t *sale.QueueTicket) queueTicketJSON {
	return queueTicketJSON{RequestID: t.RequestID, EventID: t.EventID, Status: t.Status, QueuePosition: t.QueuePosition,
		Ahead: t.Ahead, EstimatedWaitSeconds: t.EstimatedWaitSeconds, SeatsLeft: t.SeatsLeft,
		ExpectedSeatsLeft: t.ExpectedSeatsLeft, SaleOpensAt: t.SaleOpensAt, StatusURL: t.StatusURL, EventsURL: t.EventsURL,
		Reason: t.Reason, Message: t.Message, BookingID: t.BookingID, HeldUntil: t.HeldUntil, PaymentURL: t.PaymentURL,
		WaitlistURL: t.WaitlistURL}
}

// listingJSON is a resale listing.
type listingJSON struct {
	ListingID      boxoffice.ID `json:"listing_id"`
	EventID        boxoffice.ID `json:"event_id"`
	SeatID         string       `json:"seat_id"`
	Section        string       `json:"section"`
	Row            string       `json:"row"`
	Number         int          `json:"number"`
	PriceTier      string       `json:"price_tier"`
	PriceCents     int64        `json:"price_cents"`
	FaceValueCents int64        `json:"face_value_cents"`
	Status         string       `json:"status"`
	CreatedAt      string       `json:"created_at"`
	TicketID       boxoffice.ID `json:"ticket_id,omitempty"`
}

func listingOf(l *sale.ListingView) listingJSON {
	return listingJSON{ListingID: l.ListingID, EventID: l.EventID, SeatID: l.SeatID, Section: l.Section, Row: l.Row,
		Number: l.Number, PriceTier: l.PriceTier, PriceCents: l.PriceCents, FaceValueCents: l.FaceValueCents,
		Status: l.Status, CreatedAt: l.CreatedAt, TicketID: l.TicketID}
}

// listingsOf maps a list of listings; always a list ([] when empty).
func listingsOf(ls []*sale.ListingView) []listingJSON {
	out := make([]listingJSON, len(ls))
	for i, l := range ls {
		out[i] = listingOf(l)
	}
	return out
}

// payoutJSON is what a seller is owed for a sold listing.
type payoutJSON struct {
	ListingID   boxoffice.ID `json:"listing_id"`
	AmountCents int64        `json:"amount_cents"`
	Status      string       `json:"status"`
	CreatedAt   string       `json:"created_at"`
}

// payoutsOf maps a list of payouts; always a list ([] when empty).
func payoutsOf(ps []sale.PayoutView) []payoutJSON {
	out := make([]payoutJSON, len(ps))
	for i, p := range ps {
		out[i] = payoutJSON{ListingID: p.ListingID, AmountCents: p.AmountCents, Status: p.Status, CreatedAt: p.CreatedAt}
	}
	return out
}

// waitlistJSON is a waitlist entry as its user sees it.
type waitlistJSON struct {
	EntryID   boxoffice.ID `json:"entry_id"`
	EventID   boxoffice.ID `json:"event_id"`
	Status    string       `json:"status"`
	Section   string       `json:"section,omitempty"`
	PriceTier string       `json:"price_tier,omitempty"`
	Quantity  int          `json:"quantity"`
	Ahead     *int         `json:"ahead,omitempty"`
	Offers    int          `json:"offers"`
	Offer     *offerJSON   `json:"offer,omitempty"`
	JoinedAt  string       `json:"joined_at"`
	StatusURL string       `json:"status_url"`
	EventsURL string       `json:"events_url"`
}

// offerJSON is an open waitlist offer.
type offerJSON struct {
	BookingID   boxoffice.ID `json:"booking_id"`
	SeatIDs     []string     `json:"seat_ids"`
	AmountCents int64        `json:"amount_cents"`
	HeldUntil   string       `json:"held_until"`
	PaymentURL  string       `json:"payment_url"`
	ListingID   boxoffice.ID `json:"listing_id,omitempty"`
}

func waitlistOf(v *sale.WaitlistView) waitlistJSON {
	j := waitlistJSON{EntryID: v.EntryID, EventID: v.EventID, Status: v.Status, Section: v.Section, PriceTier: v.PriceTier,
		Quantity: v.Quantity, Ahead: v.Ahead, Offers: v.Offers, JoinedAt: v.JoinedAt, StatusURL: v.StatusURL,
		EventsURL: v.EventsURL}
	if o := v.Offer; o != nil {
		j.Offer = &offerJSON{BookingID: o.BookingID, SeatIDs: o.SeatIDs, AmountCents: o.AmountCents, HeldUntil: o.HeldUntil,
			PaymentURL: o.PaymentURL, ListingID: o.ListingID}
	}
	return j
}

// waitlistsOf maps a list of entries; always a list ([] when empty).
func waitlistsOf(vs []*sale.WaitlistView) []waitlistJSON {
	out := make([]waitlistJSON, len(vs))
	for i, v := range vs {
		out[i] = waitlistOf(v)
	}
	return out
}

// myTicketJSON is a ticket with its seat and event, for its owner.
type myTicketJSON struct {
	ticketJSON
	Section    string `json:"section"`
	Row        string `json:"row"`
	Number     int    `json:"number"`
	PriceTier  string `json:"price_tier"`
	EventName  string `json:"event_name"`
	Venue      string `json:"venue"`
	StartsAt   string `json:"starts_at"`
	Refundable bool   `json:"refundable"`
}

func myTicketOf(t *sale.MyTicketView) myTicketJSON {
	return myTicketJSON{ticketJSON: ticketOf(&t.TicketView), Section: t.Section, Row: t.Row, Number: t.Number,
		PriceTier: t.PriceTier, EventName: t.EventName, Venue: t.Venue, StartsAt: t.StartsAt, Refundable: t.Refundable}
}

// myTicketsOf maps a list of tickets; always a list ([] when empty).
func myTicketsOf(ts []sale.MyTicketView) []myTicketJSON {
	out := make([]myTicketJSON, len(ts))
	for i := range ts {
		out[i] = myTicketOf(&ts[i])
	}
	return out
}
