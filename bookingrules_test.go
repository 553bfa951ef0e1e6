package boxoffice

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wantErr is an expected *Error: its code, message and seats; the zero
// value expects no error.
type wantErr struct {
	code, msg string
	seats     []string
}

func checkErr(t *testing.T, what string, err error, want wantErr) {
	t.Helper()
	if want.code == "" {
		if err != nil {
			t.Errorf("%s = %v, want no error", what, err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s = %v, want %s %q", what, err, want.code, want.msg)
		return
	}
	if e.Code != want.code || e.Message != want.msg || !slices.Equal(e.Seats, want.seats) {
		t.Errorf("%s = %s %q %v, want %s %q %v", what, e.Code, e.Message, e.Seats, want.code, want.msg, want.seats)
	}
}

func TestNewBookingValidate(t *testing.T) {
	var (
		noSeats = wantErr{code: EINVALID, msg: "a booking needs at least one seat"}
		oneSeat = wantErr{code: EINVALID, msg: "a resale purchase is of exactly one seat, the listing's"}
		alone   = wantErr{code: EINVALID, msg: "a resale purchase or a waitlist offer is booked on its own"}
	)
	tests := []struct {
		name          string
		b             *Booking
		want, inBatch wantErr
	}{
		{"NoBooking", nil, noSeats, noSeats},
		{"NoSeats", &Booking{}, noSeats, noSeats},
		{"EmptySeatList", &Booking{SeatIDs: []string{}}, noSeats, noSeats},
		{"Plain", &Booking{SeatIDs: []string{"A-1", "A-2"}}, wantErr{}, wantErr{}},
		{"PurchaseOfOneSeat", &Booking{SeatIDs: []string{"A-1"}, ListingID: 7}, wantErr{}, alone},
		{"PurchaseOfNoSeat", &Booking{ListingID: 7}, noSeats, noSeats},
		{"PurchaseOfTwoSeats", &Booking{SeatIDs: []string{"A-1", "A-2"}, ListingID: 7}, oneSeat, oneSeat},
		{"Offer", &Booking{SeatIDs: []string{"A-1", "A-2"}, WaitlistEntryID: 9}, wantErr{}, alone},
		// A listing offered to the waitlist: a purchase and an offer at once.
		{"PurchaseAndOffer", &Booking{SeatIDs: []string{"A-1"}, ListingID: 7, WaitlistEntryID: 9}, wantErr{}, alone},
		{"PurchaseOfTwoSeatsAndOffer", &Booking{SeatIDs: []string{"A-1", "A-2"}, ListingID: 7, WaitlistEntryID: 9}, oneSeat, oneSeat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nb := NewBooking{Booking: tc.b, TicketLimit: 1} // the limit is not Validate's
			checkErr(t, "Validate", nb.Validate(), tc.want)
			checkErr(t, "ValidateForBatch", nb.ValidateForBatch(), tc.inBatch)
		})
	}
}

func TestNewBookingCheckLimit(t *testing.T) {
	tests := []struct {
		name         string
		seats, limit int
		taken        int
		want         wantErr
	}{
		{"UnderTheLimit", 2, 6, 3, wantErr{}},
		{"UpToTheLimit", 2, 6, 4, wantErr{}},
		{"OneOverTheLimit", 2, 6, 5, wantErr{ELIMIT, "at most 6 tickets per user for this event: 5 already held or bought", nil}},
		{"OverTheLimitAlone", 3, 2, 0, wantErr{ELIMIT, "at most 2 tickets per user for this event: 0 already held or bought", nil}},
		{"TheLimitReachedBefore", 1, 4, 4, wantErr{ELIMIT, "at most 4 tickets per user for this event: 4 already held or bought", nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nb := NewBooking{Booking: &Booking{SeatIDs: make([]string, tc.seats)}, TicketLimit: tc.limit}
			checkErr(t, "CheckLimit", nb.CheckLimit(tc.taken), tc.want)
		})
	}
}

func TestNewBookingCheckSeatsOnce(t *testing.T) {
	twice := wantErr{code: EINVALID, msg: "a booking lists a seat twice"}
	tests := []struct {
		name  string
		seats []string
		want  wantErr
	}{
		{"OneSeat", []string{"A-1"}, wantErr{}},
		{"DistinctSeats", []string{"A-2", "A-1", "B-1"}, wantErr{}},
		{"ASeatTwiceInARow", []string{"A-1", "A-1"}, twice},
		{"ASeatTwiceApart", []string{"A-1", "B-1", "C-1", "A-1"}, twice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nb := NewBooking{Booking: &Booking{SeatIDs: tc.seats}}
			checkErr(t, "CheckSeatsOnce", nb.CheckSeatsOnce(), tc.want)
		})
	}
}

func TestConfirmBookingCheck(t *testing.T) {
	t0 := time.Date(2030, 5, 1, 20, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Minute)
	// pending is the booking as the store read it: two seats held by alice
	// with fence 5 until t0+10m.
	pending := func() *Booking {
		return &Booking{ID: 100, EventID: 200, UserID: "alice", SeatIDs: []string{"A-2", "A-1"},
			Status: BookingPending, Fence: 5, AmountCents: 9000, HeldUntil: t0.Add(10 * time.Minute)}
	}
	// confirm is a valid confirmation of pending at now; the tickets name
	// the seats in another order than the booking, and carry values the
	// booking must override.
	confirm := func() ConfirmBooking {
		return ConfirmBooking{BookingID: 100, Fence: 5, Now: now, Code: "CODE",
			Tickets: []Ticket{
				{ID: 11, SeatID: "A-1", Code: "t-a1", EventID: 999, UserID: "mallory", Status: TicketVoid},
				{ID: 12, SeatID: "A-2", Code: "t-a2"},
			},
			Payment: Payment{AuthID: "auth-1", AmountCents: 9000}}
	}
	var (
		invalidTicket = wantErr{code: EINVALID, msg: "booking 100: every ticket needs an id and a code"}
		takenOver     = wantErr{code: EHOLDLOST, msg: "booking 100: the hold was taken over"}
		ranOut        = wantErr{code: EHOLDLOST, msg: "booking 100: the hold ran out"}
		noAuth        = wantErr{code: EINVALID, msg: "booking 100: the payment has no authorization id"}
		conflict      = func(s BookingStatus) wantErr {
			return wantErr{code: ECONFLICT, msg: "booking 100 is " + string(s)}
		}
	)
	tests := []struct {
		name    string
		arrange func(b *Booking, c *ConfirmBooking)
		want    wantErr
	}{
		// 1. A booking confirmed before is answered as it is, whatever c
		// says: none of the other rules apply.
		{"AlreadyConfirmedWhateverTheRequest", func(b *Booking, c *ConfirmBooking) {
			b.Status = BookingConfirmed
			c.Fence, c.Now, c.Tickets, c.Payment = 1, b.HeldUntil.Add(time.Hour), nil, Payment{}
		}, wantErr{}},
		// 2. Any other status than pending.
		{"Released", func(b *Booking, c *ConfirmBooking) { b.Status = BookingReleased }, conflict(BookingReleased)},
		{"Expired", func(b *Booking, c *ConfirmBooking) { b.Status = BookingExpired }, conflict(BookingExpired)},
		{"Cancelled", func(b *Booking, c *ConfirmBooking) { b.Status = BookingCancelled }, conflict(BookingCancelled)},
		{"Failed", func(b *Booking, c *ConfirmBooking) { b.Status = "failed" }, conflict("failed")},
		{"ReleasedBeforeTheFence", func(b *Booking, c *ConfirmBooking) {
			b.Status, c.Fence, c.Now = BookingReleased, 4, b.HeldUntil
		}, conflict(BookingReleased)},
		// 3. The fence.
		{"AnOlderFence", func(b *Booking, c *ConfirmBooking) { c.Fence = 4 }, takenOver},
		{"ANewerFence", func(b *Booking, c *ConfirmBooking) { c.Fence = 6 }, takenOver},
		{"TheFenceBeforeTheHold", func(b *Booking, c *ConfirmBooking) { c.Fence, c.Now = 4, b.HeldUntil }, takenOver},
		// 4. The hold, judged as Booking.Live does.
		{"AtTheEndOfTheHold", func(b *Booking, c *ConfirmBooking) { c.Now = b.HeldUntil }, ranOut},
		{"AfterTheHold", func(b *Booking, c *ConfirmBooking) { c.Now = b.HeldUntil.Add(time.Second) }, ranOut},
		{"AMomentBeforeTheEndOfTheHold", func(b *Booking, c *ConfirmBooking) { c.Now = b.HeldUntil.Add(-time.Nanosecond) }, wantErr{}},
		{"TheHoldBeforeTheTickets", func(b *Booking, c *ConfirmBooking) { c.Now, c.Tickets = b.HeldUntil, nil }, ranOut},
		// 5. The tickets.
		{"ATicketWithoutAnID", func(b *Booking, c *ConfirmBooking) { c.Tickets[1].ID = 0 }, invalidTicket},
		{"ATicketWithANegativeID", func(b *Booking, c *ConfirmBooking) { c.Tickets[0].ID = -3 }, invalidTicket},
		{"ATicketWithoutACode", func(b *Booking, c *ConfirmBooking) { c.Tickets[0].Code = "" }, invalidTicket},
		{"ATicketForASeatNotHeld", func(b *Booking, c *ConfirmBooking) { c.Tickets[1].SeatID = "A-3" },
			wantErr{EINVALID, "a ticket names a seat the booking does not hold, or names it twice", []string{"A-3"}}},
		{"TwoTicketsForOneSeat", func(b *Booking, c *ConfirmBooking) { c.Tickets[1].SeatID = "A-1" },
			wantErr{EINVALID, "a ticket names a seat the booking does not hold, or names it twice", []string{"A-1"}}},
		{"ATicketMissing", func(b *Booking, c *ConfirmBooking) { c.Tickets = c.Tickets[:1] },
			wantErr{EINVALID, "booking 100: 1 of its seats have no ticket", nil}},
		{"NoTickets", func(b *Booking, c *ConfirmBooking) { c.Tickets = nil },
			wantErr{EINVALID, "booking 100: 2 of its seats have no ticket", nil}},
		{"TheTicketsBeforeThePayment", func(b *Booking, c *ConfirmBooking) { c.Tickets[0].Code, c.Payment.AuthID = "", "" }, invalidTicket},
		// 6. The payment.
		{"APaymentWithoutAnAuthorization", func(b *Booking, c *ConfirmBooking) { c.Payment.AuthID = "" }, noAuth},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, c := pending(), confirm()
			tc.arrange(b, &c)
			before := *b
			plan, err := c.Check(b)
			checkErr(t, "Check", err, tc.want)
			if diff := cmp.Diff(before, *b); diff != "" {
				t.Errorf("Check changed the booking (-before +after):\n%s", diff)
			}
			switch {
			case err != nil:
				if diff := cmp.Diff(ConfirmPlan{}, plan); diff != "" {
					t.Errorf("a refusal came with a plan:\n%s", diff)
				}
			case b.Status == BookingConfirmed:
				if diff := cmp.Diff(ConfirmPlan{AlreadyConfirmed: true}, plan); diff != "" {
					t.Errorf("plan of a booking confirmed before (-want +got):\n%s", diff)
				}
			default:
				if plan.AlreadyConfirmed || len(plan.Tickets) != len(b.SeatIDs) {
					t.Errorf("plan = %+v, want a ticket for each of the %d seats", plan, len(b.SeatIDs))
				}
			}
		})
	}
}

func TestConfirmBookingCheckPlan(t *testing.T) {
	t0 := time.Date(2030, 5, 1, 20, 0, 0, 0, time.UTC)
	now := t0.Add(3*time.Minute + 456*time.Microsecond)
	b := &Booking{ID: 100, EventID: 200, UserID: "alice", SeatIDs: []string{"A-2", "A-1"},
		Status: BookingPending, Fence: 5, AmountCents: 9000, HeldUntil: t0.Add(10 * time.Minute)}
	c := ConfirmBooking{BookingID: 100, Fence: 5, Now: now, Code: "CODE",
		Tickets: []Ticket{
			// Only ID, SeatID and Code are the request's.
			{ID: 11, SeatID: "A-1", Code: "t-a1", EventID: 999, BookingID: 998, UserID: "mallory",
				Status: TicketVoid, IssuedAt: t0, VoidReason: VoidResold, ListingID: 5},
			{ID: 12, SeatID: "A-2", Code: "t-a2"},
		},
		// The amount is the request's (the authorized one), not the
		// booking's.
		Payment: Payment{BookingID: 999, AuthID: "auth-1", AmountCents: 8500, Status: PaymentRefunded}}

	want := ConfirmPlan{
		// In the order of the booking's seats, not of c.Tickets.
		Tickets: []Ticket{
			{ID: 12, EventID: 200, BookingID: 100, SeatID: "A-2", UserID: "alice", Code: "t-a2", Status: TicketValid, IssuedAt: now},
			{ID: 11, EventID: 200, BookingID: 100, SeatID: "A-1", UserID: "alice", Code: "t-a1", Status: TicketValid, IssuedAt: now},
		},
		// A zero CreatedAt is c.Now; the event and the booking are b's.
		Payment: Payment{EventID: 200, BookingID: 100, AuthID: "auth-1", AmountCents: 8500, Status: PaymentAuthorized, CreatedAt: now},
	}
	got, err := c.Check(b)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan mismatch (-want +got):\n%s", diff)
	}

	// A CreatedAt the caller set is kept.
	paid := t0.Add(2 * time.Minute)
	c.Payment.CreatedAt = paid
	got, err = c.Check(b)
	if err != nil {
		t.Fatalf("Check(paid earlier): %v", err)
	}
	if !got.Payment.CreatedAt.Equal(paid) {
		t.Errorf("Payment.CreatedAt = %v, want the request's %v", got.Payment.CreatedAt, paid)
	}
}
