package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/sale"
	"github.com/google/go-cmp/cmp"
)

// The result types of package sale as they were when they carried JSON
// tags (commit 6912627, sale/*.go): what the API wrote, and what the
// idempotency records written before hold. Frozen: the API's JSON must
// stay what they produce.
type (
	oldReserveResult struct {
		BookingID  boxoffice.ID `json:"booking_id"`
		HeldUntil  time.Time    `json:"held_until"`
		PaymentURL string       `json:"payment_url"`
		SeatIDs    []string     `json:"seat_ids,omitempty"`
		Replayed   bool         `json:"-"`
	}
	oldTicketView struct {
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
	oldConfirmation struct {
		BookingID        boxoffice.ID    `json:"booking_id"`
		ConfirmationCode string          `json:"confirmation_code"`
		AmountCents      int64           `json:"amount_cents"`
		Tickets          []oldTicketView `json:"tickets"`
		Replayed         bool            `json:"-"`
	}
	oldCancellation struct {
		BookingID    boxoffice.ID `json:"booking_id"`
		Status       string       `json:"status"`
		RefundCents  int64        `json:"refund_cents"`
		RefundStatus string       `json:"refund_status"`
		Replayed     bool         `json:"-"`
	}
	oldCreatedListing struct {
		ListingID boxoffice.ID `json:"listing_id"`
	}
	oldCreatedEntry struct {
		EntryID boxoffice.ID `json:"entry_id"`
	}
	oldBookingView struct {
		BookingID        boxoffice.ID    `json:"booking_id"`
		EventID          boxoffice.ID    `json:"event_id"`
		UserID           string          `json:"user_id"`
		Status           string          `json:"status"`
		SeatIDs          []string        `json:"seat_ids"`
		AmountCents      int64           `json:"amount_cents"`
		HeldUntil        string          `json:"held_until,omitempty"`
		PaymentURL       string          `json:"payment_url,omitempty"`
		ConfirmationCode string          `json:"confirmation_code,omitempty"`
		Tickets          []oldTicketView `json:"tickets,omitempty"`
		CreatedAt        string          `json:"created_at"`
		ListingID        boxoffice.ID    `json:"listing_id,omitempty"`
		WaitlistEntryID  boxoffice.ID    `json:"waitlist_entry_id,omitempty"`
	}
	oldQueueTicket struct {
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
		Replayed             bool                  `json:"-"`
	}
	oldListingView struct {
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
		Replayed       bool         `json:"-"`
	}
	oldPayoutView struct {
		ListingID   boxoffice.ID `json:"listing_id"`
		AmountCents int64        `json:"amount_cents"`
		Status      string       `json:"status"`
		CreatedAt   string       `json:"created_at"`
	}
	oldWaitlistView struct {
		EntryID   boxoffice.ID  `json:"entry_id"`
		EventID   boxoffice.ID  `json:"event_id"`
		Status    string        `json:"status"`
		Section   string        `json:"section,omitempty"`
		PriceTier string        `json:"price_tier,omitempty"`
		Quantity  int           `json:"quantity"`
		Ahead     *int          `json:"ahead,omitempty"`
		Offers    int           `json:"offers"`
		Offer     *oldOfferView `json:"offer,omitempty"`
		JoinedAt  string        `json:"joined_at"`
		StatusURL string        `json:"status_url"`
		EventsURL string        `json:"events_url"`
		Replayed  bool          `json:"-"`
	}
	oldOfferView struct {
		BookingID   boxoffice.ID `json:"booking_id"`
		SeatIDs     []string     `json:"seat_ids"`
		AmountCents int64        `json:"amount_cents"`
		HeldUntil   string       `json:"held_until"`
		PaymentURL  string       `json:"payment_url"`
		ListingID   boxoffice.ID `json:"listing_id,omitempty"`
	}
	oldMyTicketView struct {
		oldTicketView
		Section    string `json:"section"`
		Row        string `json:"row"`
		Number     int    `json:"number"`
		PriceTier  string `json:"price_tier"`
		EventName  string `json:"event_name"`
		Venue      string `json:"venue"`
		StartsAt   string `json:"starts_at"`
		Refundable bool   `json:"refundable"`
	}
)

var (
	heldUntil = time.Date(2030, 6, 1, 12, 10, 0, 123456789, time.UTC)
	opensAt   = time.Date(2030, 6, 1, 10, 0, 0, 0, time.UTC)

	fullTicket = sale.TicketView{TicketID: 7, EventID: 5, BookingID: 123, SeatID: "A-1", Code: "QWERTYUIOPASDFGH",
		Status: "valid", VoidReason: "", CheckedInAt: "2030-06-01T19:00:00.000Z", ListingID: 77}
	oldFullTicket = oldTicketView{TicketID: 7, EventID: 5, BookingID: 123, SeatID: "A-1", Code: "QWERTYUIOPASDFGH",
		Status: "valid", VoidReason: "", CheckedInAt: "2030-06-01T19:00:00.000Z", ListingID: 77}
	voidTicket    = sale.TicketView{TicketID: 8, EventID: 5, SeatID: "A-2", Status: "void", VoidReason: "cancelled"}
	oldVoidTicket = oldTicketView{TicketID: 8, EventID: 5, SeatID: "A-2", Status: "void", VoidReason: "cancelled"}
)

// answerCase is one answer sale records: the value it hands the codec,
// the same answer in the old tagged type, and a decoder into a new value
// of the sale type.
type answerCase struct {
	name    string
	outcome boxoffice.Outcome
	v, ptr  any // the sale value, and a pointer to it
	old     any
	decode  func(outcome boxoffice.Outcome, b []byte) (any, error)
}

func answer[T any](name string, outcome boxoffice.Outcome, v T, old any) answerCase {
	return answerCase{name: name, outcome: outcome, v: v, ptr: &v, old: old,
		decode: func(outcome boxoffice.Outcome, b []byte) (any, error) {
			var out T
			err := Answers{}.Decode(outcome, b, &out)
			return out, err
		}}
}

func answerCases() []answerCase {
	return []answerCase{
		answer("reserve", boxoffice.OutcomeHeld,
			sale.ReserveResult{BookingID: 123, HeldUntil: heldUntil, PaymentURL: "/bookings/123/confirm"},
			oldReserveResult{BookingID: 123, HeldUntil: heldUntil, PaymentURL: "/bookings/123/confirm"}),
		answer("reserve best available", boxoffice.OutcomeHeld,
			sale.ReserveResult{BookingID: 124, HeldUntil: heldUntil, PaymentURL: "/bookings/124/confirm", SeatIDs: []string{"B-1", "B-2"}},
			oldReserveResult{BookingID: 124, HeldUntil: heldUntil, PaymentURL: "/bookings/124/confirm", SeatIDs: []string{"B-1", "B-2"}}),
		answer("confirm", boxoffice.OutcomeConfirmed,
			sale.Confirmation{BookingID: 123, ConfirmationCode: "BX-ABCDE", AmountCents: 9000, Tickets: []sale.TicketView{fullTicket, voidTicket}},
			oldConfirmation{BookingID: 123, ConfirmationCode: "BX-ABCDE", AmountCents: 9000, Tickets: []oldTicketView{oldFullTicket, oldVoidTicket}}),
		answer("confirm without tickets", boxoffice.OutcomeConfirmed,
			sale.Confirmation{BookingID: 125, ConfirmationCode: "BX-FGHIJ", Tickets: []sale.TicketView{}},
			oldConfirmation{BookingID: 125, ConfirmationCode: "BX-FGHIJ", Tickets: []oldTicketView{}}),
		answer("cancel", boxoffice.OutcomeCancelled,
			sale.Cancellation{BookingID: 123, Status: "cancelled", RefundCents: 9000, RefundStatus: "pending"},
			oldCancellation{BookingID: 123, Status: "cancelled", RefundCents: 9000, RefundStatus: "pending"}),
		answer("list", boxoffice.OutcomeListed, sale.CreatedListing{ListingID: 77}, oldCreatedListing{ListingID: 77}),
		answer("join", boxoffice.OutcomeJoined, sale.CreatedEntry{EntryID: 88}, oldCreatedEntry{EntryID: 88}),
	}
}

// TestAnswersAreTheAPIsJSON checks, for every answer sale records, that
// the codec writes the API's JSON (what the old tagged type wrote, and
// what the handler writes), and reads it back into an equal sale value.
func TestAnswersAreTheAPIsJSON(t *testing.T) {
	for _, c := range answerCases() {
		t.Run(c.name, func(t *testing.T) {
			b, err := Answers{}.Encode(c.outcome, c.v)
			if err != nil {
				t.Fatal(err)
			}
			old, err := json.Marshal(c.old)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(old) {
				t.Errorf("encoded\n%s\nwant the API's JSON\n%s", b, old)
			}
			if wire := wireOf(t, c.v); string(b) != string(wire) {
				t.Errorf("encoded\n%s\nbut the handler writes\n%s", b, wire)
			}
			bp, err := Answers{}.Encode(c.outcome, c.ptr)
			if err != nil || string(bp) != string(b) {
				t.Errorf("encoding a pointer: %s, %v; want %s", bp, err, b)
			}
			got, err := c.decode(c.outcome, b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.v, got); diff != "" {
				t.Errorf("round trip (-sent +decoded):\n%s", diff)
			}
		})
	}
}

// wireOf is what a handler writes for a recorded answer.
func wireOf(t *testing.T, v any) []byte {
	t.Helper()
	var w any
	switch v := v.(type) {
	case sale.ReserveResult:
		w = reserveOf(&v)
	case sale.Confirmation:
		w = confirmationOf(&v)
	case sale.Cancellation:
		w = cancellationOf(&v)
	case sale.CreatedListing:
		w = listedJSON{ListingID: v.ListingID} // not an answer on its own: the record's body
	case sale.CreatedEntry:
		w = joinedJSON{EntryID: v.EntryID}
	default:
		t.Fatalf("no wire type for %T", v)
	}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAnswersLeaveOutReplayed: Replayed is said by a header, never in the
// body or the record.
func TestAnswersLeaveOutReplayed(t *testing.T) {
	for _, v := range []struct{ replayed, fresh any }{
		{&sale.ReserveResult{BookingID: 1, Replayed: true}, &sale.ReserveResult{BookingID: 1}},
		{&sale.Confirmation{BookingID: 1, Replayed: true}, &sale.Confirmation{BookingID: 1}},
		{&sale.Cancellation{BookingID: 1, Replayed: true}, &sale.Cancellation{BookingID: 1}},
	} {
		a, err := Answers{}.Encode("", v.replayed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Answers{}.Encode("", v.fresh)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%T: replayed encodes %s, fresh %s", v.fresh, a, b)
		}
	}
}

// TestAnswersReadRecordsOfBefore decodes bodies as the records written
// before sale lost its JSON tags hold them (json.Marshal of the tagged
// types), with their outcome and without one (records older than the
// outcome column have "").
func TestAnswersReadRecordsOfBefore(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome boxoffice.Outcome
		body    string
		want    any
	}{
		{"reserve", boxoffice.OutcomeHeld,
			`{"booking_id":"123456789","held_until":"2030-06-01T12:10:00Z","payment_url":"/bookings/123456789/confirm"}`,
			sale.ReserveResult{BookingID: 123456789, HeldUntil: time.Date(2030, 6, 1, 12, 10, 0, 0, time.UTC), PaymentURL: "/bookings/123456789/confirm"}},
		{"reserve best available", boxoffice.OutcomeHeld,
			`{"booking_id":"124","held_until":"2030-06-01T12:10:00.123456789Z","payment_url":"/bookings/124/confirm","seat_ids":["B-1","B-2"]}`,
			sale.ReserveResult{BookingID: 124, HeldUntil: heldUntil, PaymentURL: "/bookings/124/confirm", SeatIDs: []string{"B-1", "B-2"}}},
		{"confirm", boxoffice.OutcomeConfirmed,
			`{"booking_id":"123","confirmation_code":"BX-ABCDE","amount_cents":9000,"tickets":[` +
				`{"ticket_id":"7","event_id":"5","booking_id":"123","seat_id":"A-1","code":"QWERTYUIOPASDFGH","status":"valid"},` +
				`{"ticket_id":"8","event_id":"5","booking_id":"123","seat_id":"A-2","code":"ASDFGHJKLZXCVBNM","status":"valid"}]}`,
			sale.Confirmation{BookingID: 123, ConfirmationCode: "BX-ABCDE", AmountCents: 9000, Tickets: []sale.TicketView{
				{TicketID: 7, EventID: 5, BookingID: 123, SeatID: "A-1", Code: "QWERTYUIOPASDFGH", Status: "valid"},
				{TicketID: 8, EventID: 5, BookingID: 123, SeatID: "A-2", Code: "ASDFGHJKLZXCVBNM", Status: "valid"},
			}}},
		{"cancel", boxoffice.OutcomeCancelled,
			`{"booking_id":"123","status":"cancelled","refund_cents":9000,"refund_status":"pending"}`,
			sale.Cancellation{BookingID: 123, Status: "cancelled", RefundCents: 9000, RefundStatus: "pending"}},
		{"list", boxoffice.OutcomeListed, `{"listing_id":"77"}`, sale.CreatedListing{ListingID: 77}},
		{"join", boxoffice.OutcomeJoined, `{"entry_id":"88"}`, sale.CreatedEntry{EntryID: 88}},
	} {
		for _, outcome := range []boxoffice.Outcome{c.outcome, ""} {
			t.Run(c.name+"/"+string(outcome), func(t *testing.T) {
				var got any
				var err error
				switch c.want.(type) {
				case sale.ReserveResult:
					var out sale.ReserveResult
					err, got = Answers{}.Decode(outcome, []byte(c.body), &out), out
				case sale.Confirmation:
					var out sale.Confirmation
					err, got = Answers{}.Decode(outcome, []byte(c.body), &out), out
				case sale.Cancellation:
					var out sale.Cancellation
					err, got = Answers{}.Decode(outcome, []byte(c.body), &out), out
				case sale.CreatedListing:
					var out sale.CreatedListing
					err, got = Answers{}.Decode(outcome, []byte(c.body), &out), out
				case sale.CreatedEntry:
					var out sale.CreatedEntry
					err, got = Answers{}.Decode(outcome, []byte(c.body), &out), out
				}
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("decoded (-want +got):\n%s", diff)
				}
				// A record written today is the same bytes.
				if b, err := (Answers{}).Encode(outcome, c.want); err != nil || string(b) != c.body {
					t.Errorf("encoding it again: %s, %v; want %s", b, err, c.body)
				}
			})
		}
	}
}

// TestAnswersRefuseOtherTypes: a type the codec does not know is an
// error, not a body of some other shape.
func TestAnswersRefuseOtherTypes(t *testing.T) {
	if _, err := (Answers{}).Encode(boxoffice.OutcomeHeld, &sale.ListingView{}); err == nil {
		t.Error("encoding a ListingView: no error")
	}
	var v sale.WaitlistView
	if err := (Answers{}).Decode(boxoffice.OutcomeJoined, []byte(`{"entry_id":"1"}`), &v); err == nil {
		t.Error("decoding into a WaitlistView: no error")
	}
	var r sale.ReserveResult
	if err := (Answers{}).Decode(boxoffice.OutcomeHeld, []byte(`{"booking_id":`), &r); err == nil {
		t.Error("decoding a broken body: no error")
	}
}

// TestViewsAreTheAPIsJSON checks that what the handlers write for each
// view is byte for byte what the API wrote when sale's types carried the
// JSON tags.
func TestViewsAreTheAPIsJSON(t *testing.T) {
	wait, seats, expect, ahead := 12.5, 40, 3, 9
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"booking pending",
			bookingOf(&sale.BookingView{BookingID: 1, EventID: 5, UserID: "u1", Status: "pending", SeatIDs: []string{"A-1"},
				AmountCents: 4500, HeldUntil: "2030-06-01T12:10:00.000Z", PaymentURL: "/bookings/1/confirm", CreatedAt: "2030-06-01T12:00:00.000Z"}),
			oldBookingView{BookingID: 1, EventID: 5, UserID: "u1", Status: "pending", SeatIDs: []string{"A-1"},
				AmountCents: 4500, HeldUntil: "2030-06-01T12:10:00.000Z", PaymentURL: "/bookings/1/confirm", CreatedAt: "2030-06-01T12:00:00.000Z"}},
		{"booking confirmed",
			bookingOf(&sale.BookingView{BookingID: 1, EventID: 5, UserID: "u1", Status: "confirmed", SeatIDs: []string{"A-1", "A-2"},
				AmountCents: 9000, ConfirmationCode: "BX-ABCDE", Tickets: []sale.TicketView{fullTicket, voidTicket},
				CreatedAt: "2030-06-01T12:00:00.000Z", ListingID: 77, WaitlistEntryID: 88}),
			oldBookingView{BookingID: 1, EventID: 5, UserID: "u1", Status: "confirmed", SeatIDs: []string{"A-1", "A-2"},
				AmountCents: 9000, ConfirmationCode: "BX-ABCDE", Tickets: []oldTicketView{oldFullTicket, oldVoidTicket},
				CreatedAt: "2030-06-01T12:00:00.000Z", ListingID: 77, WaitlistEntryID: 88}},
		{"booking without seats", bookingOf(&sale.BookingView{BookingID: 1, Tickets: []sale.TicketView{}}),
			oldBookingView{BookingID: 1, Tickets: []oldTicketView{}}},
		{"queue ticket waiting",
			queueTicketOf(&sale.QueueTicket{RequestID: 9, EventID: 5, Status: boxoffice.QueueQueued, QueuePosition: 10, Ahead: 4,
				EstimatedWaitSeconds: &wait, SeatsLeft: &seats, ExpectedSeatsLeft: &expect, SaleOpensAt: opensAt,
				StatusURL: "/queue/9", EventsURL: "/queue/9/events", Replayed: true}),
			oldQueueTicket{RequestID: 9, EventID: 5, Status: boxoffice.QueueQueued, QueuePosition: 10, Ahead: 4,
				EstimatedWaitSeconds: &wait, SeatsLeft: &seats, ExpectedSeatsLeft: &expect, SaleOpensAt: opensAt,
				StatusURL: "/queue/9", EventsURL: "/queue/9/events"}},
		{"queue ticket held",
			queueTicketOf(&sale.QueueTicket{RequestID: 9, EventID: 5, Status: boxoffice.QueueHeld, QueuePosition: 10,
				SaleOpensAt: opensAt, StatusURL: "/queue/9", EventsURL: "/queue/9/events",
				BookingID: 123, HeldUntil: &heldUntil, PaymentURL: "/bookings/123/confirm"}),
			oldQueueTicket{RequestID: 9, EventID: 5, Status: boxoffice.QueueHeld, QueuePosition: 10,
				SaleOpensAt: opensAt, StatusURL: "/queue/9", EventsURL: "/queue/9/events",
				BookingID: 123, HeldUntil: &heldUntil, PaymentURL: "/bookings/123/confirm"}},
		{"queue ticket sold out",
			queueTicketOf(&sale.QueueTicket{RequestID: 9, EventID: 5, Status: boxoffice.QueueRejected, SaleOpensAt: opensAt,
				Reason: "sold-out", Message: "the event is sold out", WaitlistURL: "/events/5/waitlist"}),
			oldQueueTicket{RequestID: 9, EventID: 5, Status: boxoffice.QueueRejected, SaleOpensAt: opensAt,
				Reason: "sold-out", Message: "the event is sold out", WaitlistURL: "/events/5/waitlist"}},
		{"listing",
			listingOf(&sale.ListingView{ListingID: 77, EventID: 5, SeatID: "A-1", Section: "A", Row: "1", Number: 1, PriceTier: "gold",
				PriceCents: 6000, FaceValueCents: 4500, Status: "active", CreatedAt: "2030-06-01T12:00:00.000Z", TicketID: 7, Replayed: true}),
			oldListingView{ListingID: 77, EventID: 5, SeatID: "A-1", Section: "A", Row: "1", Number: 1, PriceTier: "gold",
				PriceCents: 6000, FaceValueCents: 4500, Status: "active", CreatedAt: "2030-06-01T12:00:00.000Z", TicketID: 7}},
		{"listings", listingsOf([]*sale.ListingView{{ListingID: 77}, {ListingID: 78}}),
			[]*oldListingView{{ListingID: 77}, {ListingID: 78}}},
		{"no listings", listingsOf(nil), []oldListingView{}},
		{"payouts", payoutsOf([]sale.PayoutView{{ListingID: 77, AmountCents: 5400, Status: "owed", CreatedAt: "2030-06-01T12:00:00.000Z"}}),
			[]oldPayoutView{{ListingID: 77, AmountCents: 5400, Status: "owed", CreatedAt: "2030-06-01T12:00:00.000Z"}}},
		{"no payouts", payoutsOf(nil), []oldPayoutView{}},
		{"waitlist waiting",
			waitlistOf(&sale.WaitlistView{EntryID: 88, EventID: 5, Status: "waiting", Section: "A", PriceTier: "gold", Quantity: 2,
				Ahead: &ahead, JoinedAt: "2030-06-01T12:00:00.000Z", StatusURL: "/waitlist/88", EventsURL: "/waitlist/88/events", Replayed: true}),
			oldWaitlistView{EntryID: 88, EventID: 5, Status: "waiting", Section: "A", PriceTier: "gold", Quantity: 2,
				Ahead: &ahead, JoinedAt: "2030-06-01T12:00:00.000Z", StatusURL: "/waitlist/88", EventsURL: "/waitlist/88/events"}},
		{"waitlist offered",
			waitlistOf(&sale.WaitlistView{EntryID: 88, EventID: 5, Status: "offered", Quantity: 1, Offers: 1,
				Offer: &sale.OfferView{BookingID: 123, SeatIDs: []string{"A-1"}, AmountCents: 4500, HeldUntil: "2030-06-01T12:10:00.000Z",
					PaymentURL: "/bookings/123/confirm", ListingID: 77},
				JoinedAt: "2030-06-01T12:00:00.000Z", StatusURL: "/waitlist/88", EventsURL: "/waitlist/88/events"}),
			oldWaitlistView{EntryID: 88, EventID: 5, Status: "offered", Quantity: 1, Offers: 1,
				Offer: &oldOfferView{BookingID: 123, SeatIDs: []string{"A-1"}, AmountCents: 4500, HeldUntil: "2030-06-01T12:10:00.000Z",
					PaymentURL: "/bookings/123/confirm", ListingID: 77},
				JoinedAt: "2030-06-01T12:00:00.000Z", StatusURL: "/waitlist/88", EventsURL: "/waitlist/88/events"}},
		{"waitlist offer without seats",
			waitlistOf(&sale.WaitlistView{EntryID: 88, Offer: &sale.OfferView{BookingID: 123}}),
			oldWaitlistView{EntryID: 88, Offer: &oldOfferView{BookingID: 123}}},
		{"waitlist entries", waitlistsOf([]*sale.WaitlistView{{EntryID: 88}}), []*oldWaitlistView{{EntryID: 88}}},
		{"no waitlist entries", waitlistsOf(nil), []oldWaitlistView{}},
		{"my ticket",
			myTicketOf(&sale.MyTicketView{TicketView: fullTicket, Section: "A", Row: "1", Number: 1, PriceTier: "gold",
				EventName: "The Show", Venue: "The Hall", StartsAt: "2030-06-01T20:00:00.000Z", Refundable: true}),
			oldMyTicketView{oldTicketView: oldFullTicket, Section: "A", Row: "1", Number: 1, PriceTier: "gold",
				EventName: "The Show", Venue: "The Hall", StartsAt: "2030-06-01T20:00:00.000Z", Refundable: true}},
		{"my tickets", myTicketsOf([]sale.MyTicketView{{TicketView: voidTicket}}),
			[]oldMyTicketView{{oldTicketView: oldVoidTicket}}},
		{"no tickets", myTicketsOf(nil), []oldMyTicketView{}},
	} {
		got, err := json.Marshal(c.got)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(c.want)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
}
