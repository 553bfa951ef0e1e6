package apitest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// After the sell-out: the waitlist, cancellation and refund, fan-to-fan
// resale and check-in, over HTTP on every stack.

type waitlistEntry struct {
	EntryID string `json:"entry_id"`
	Status  string `json:"status"`
	Ahead   *int   `json:"ahead"`
	Offers  int    `json:"offers"`
	Offer   *struct {
		BookingID   string   `json:"booking_id"`
		SeatIDs     []string `json:"seat_ids"`
		AmountCents int64    `json:"amount_cents"`
		PaymentURL  string   `json:"payment_url"`
		ListingID   string   `json:"listing_id"`
	} `json:"offer"`
	EventsURL string `json:"events_url"`
}

type listingView struct {
	ListingID      string `json:"listing_id"`
	SeatID         string `json:"seat_id"`
	PriceCents     int64  `json:"price_cents"`
	FaceValueCents int64  `json:"face_value_cents"`
	Status         string `json:"status"`
	TicketID       string `json:"ticket_id"`
}

type ticketView struct {
	TicketID    string `json:"ticket_id"`
	SeatID      string `json:"seat_id"`
	Code        string `json:"code"`
	Status      string `json:"status"`
	VoidReason  string `json:"void_reason"`
	CheckedInAt string `json:"checked_in_at"`
	ListingID   string `json:"listing_id"`
}

// join puts c on the event's waitlist and fails the test unless it got 201.
func (c *client) join(eventID string, body map[string]any) waitlistEntry {
	c.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if body["idempotency_key"] == nil {
		body["idempotency_key"] = fmt.Sprintf("w-%d", keySeq.Add(1))
	}
	r := c.do("POST", "/events/"+eventID+"/waitlist", body)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("join waitlist: %d %s", r.Status, r.Body)
	}
	var e waitlistEntry
	r.decode(c.t, &e)
	return e
}

func (c *client) entry(id string) waitlistEntry {
	c.t.Helper()
	r := c.do("GET", "/waitlist/"+id, nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("waitlist entry: %d %s", r.Status, r.Body)
	}
	var e waitlistEntry
	r.decode(c.t, &e)
	return e
}

// buy reserves and pays for seats and returns the confirmation.
func (c *client) buy(eventID string, seats ...string) confirmation {
	c.t.Helper()
	res := c.mustReserve(eventID, seats...)
	r := c.confirm(res.BookingID, "tok_visa", fmt.Sprintf("pay-%d", keySeq.Add(1)))
	if r.Status != http.StatusOK {
		c.t.Fatalf("confirm: %d %s", r.Status, r.Body)
	}
	var conf confirmation
	r.decode(c.t, &conf)
	return conf
}

func (c *client) list(ticketID string, price int64) response {
	c.t.Helper()
	return c.do("POST", "/tickets/"+ticketID+"/listing", map[string]any{"price_cents": price},
		"Idempotency-Key", fmt.Sprintf("l-%d", keySeq.Add(1)))
}

func (c *client) mustList(ticketID string, price int64) listingView {
	c.t.Helper()
	r := c.list(ticketID, price)
	if r.Status != http.StatusCreated {
		c.t.Fatalf("list ticket %s: %d %s", ticketID, r.Status, r.Body)
	}
	var l listingView
	r.decode(c.t, &l)
	return l
}

func (c *client) reserveListing(listingID, key string) response {
	c.t.Helper()
	return c.do("POST", "/bookings/reserve", map[string]any{"listing_id": listingID, "idempotency_key": key})
}

func (c *client) ticket(id string) ticketView {
	c.t.Helper()
	r := c.do("GET", "/tickets/"+id, nil)
	if r.Status != http.StatusOK {
		c.t.Fatalf("ticket %s: %d %s", id, r.Status, r.Body)
	}
	var v ticketView
	r.decode(c.t, &v)
	return v
}

func (c *client) checkIn(code string) response {
	c.t.Helper()
	return c.do("POST", "/checkin", map[string]any{"code": code})
}

func (s *Stack) refundableEvent(t testing.TB, hours int, secs ...section) string {
	t.Helper()
	b := eventBody(s, secs...)
	b["refund_cutoff_hours"] = hours
	return s.newEvent(t, b)
}

// chargedFor sums what the gateway holds for one booking (its keys are
// "<booking id>:<key>").
func (s *Stack) chargedFor(bookingID string) int64 {
	var n int64
	for k, v := range s.Pay.Charged() {
		if strings.HasPrefix(k, bookingID+":") {
			n += v
		}
	}
	return n
}

// Seats whose hold runs out go to the first waitlisted user who wants
// them, then to the next when that offer lapses; nobody outside the
// waitlist gets them first.
func testWaitlistExpiryOffersInJoinOrder(t *testing.T, s *Stack) {
	ev := s.newEvent(t, eventBody(s, section{"W", "t", 2000, 1, 4}))
	holder, buyer := s.client(t, "holder", ""), s.client(t, "buyer", "")
	held := holder.mustReserve(ev, "W-A-1", "W-A-2")
	buyer.buy(ev, "W-A-3", "W-A-4")

	first, second, single := s.client(t, "first", ""), s.client(t, "second", ""), s.client(t, "single", "")
	e1 := first.join(ev, map[string]any{"quantity": 2})
	e2 := second.join(ev, map[string]any{"quantity": 2})
	e3 := single.join(ev, map[string]any{"quantity": 1, "section": "W"})
	if e1.Status != "waiting" || e1.Ahead == nil || *e1.Ahead != 0 || e2.Ahead == nil || *e2.Ahead != 1 || *e3.Ahead != 2 {
		t.Fatalf("entries on joining: %+v %+v %+v", e1, e2, e3)
	}

	s.Advance(s.HoldTTL + time.Second) // the hold runs out; the returns pass runs
	got := first.entry(e1.EntryID)
	if got.Status != "offered" || got.Offer == nil || len(got.Offer.SeatIDs) != 2 || got.Offer.AmountCents != 4000 {
		t.Fatalf("first in line after the hold ran out: %+v", got)
	}
	if st := s.statuses(t, ev); st["W-A-1"] != "held" || st["W-A-2"] != "held" {
		t.Errorf("offered seats in the seat map: %s %s, want held", st["W-A-1"], st["W-A-2"])
	}
	outsider := s.client(t, "outsider", "")
	if r := outsider.reserve(ev, "grab", "W-A-1"); r.Status != http.StatusConflict {
		t.Errorf("an outsider reserving an offered seat: %d %s, want 409", r.Status, r.Body)
	}
	if r := holder.confirm(held.BookingID, "tok_visa", "too-late"); r.Status != http.StatusGone && r.Status != http.StatusConflict {
		t.Errorf("the old holder's confirm: %d %s, want 410 or 409", r.Status, r.Body)
	}
	if e := second.entry(e2.EntryID); e.Status != "waiting" || e.Ahead == nil || *e.Ahead != 0 {
		t.Errorf("second in line: %+v, want waiting with none ahead", e)
	}

	s.Advance(s.OfferWindow + time.Second) // the first offer lapses
	if e := first.entry(e1.EntryID); e.Status != "lapsed" {
		t.Errorf("first after its offer ran out: %s, want lapsed", e.Status)
	}
	got = second.entry(e2.EntryID)
	if got.Status != "offered" || got.Offer == nil || len(got.Offer.SeatIDs) != 2 {
		t.Fatalf("second after the first offer lapsed: %+v", got)
	}
	if r := outsider.reserve(ev, "grab-2", "W-A-2"); r.Status != http.StatusConflict {
		t.Errorf("an outsider between offers: %d, want 409", r.Status)
	}
	r := second.confirm(got.Offer.BookingID, "tok_visa", "offer-pay")
	if r.Status != http.StatusOK {
		t.Fatalf("paying for the offer: %d %s", r.Status, r.Body)
	}
	if e := second.entry(e2.EntryID); e.Status != "fulfilled" {
		t.Errorf("second after paying: %s, want fulfilled", e.Status)
	}
	if e := single.entry(e3.EntryID); e.Status != "waiting" {
		t.Errorf("third, who wanted one seat: %s, want still waiting (nothing came back for it)", e.Status)
	}
	if st := s.statuses(t, ev); st["W-A-1"] != "sold" || st["W-A-2"] != "sold" {
		t.Errorf("seats after the offer was paid: %s %s", st["W-A-1"], st["W-A-2"])
	}
}

// A release hands the seats straight to the waitlist; declining an offer
// (leaving the waitlist) moves them on; with nobody left they go back to
// the public at once.
func testWaitlistReleaseAndDecline(t *testing.T, s *Stack) {
	ev := s.newEvent(t, eventBody(s, section{"R", "t", 1500, 1, 3}))
	holder := s.client(t, "holder", "")
	b := holder.mustReserve(ev, "R-A-1", "R-A-2", "R-A-3")
	a, bb := s.client(t, "alice", ""), s.client(t, "bob", "")
	ea := a.join(ev, map[string]any{"quantity": 3})
	eb := bb.join(ev, map[string]any{"quantity": 1})

	if r := holder.do("DELETE", "/bookings/"+b.BookingID, nil); r.Status != http.StatusOK {
		t.Fatalf("release: %d %s", r.Status, r.Body)
	}
	got := a.entry(ea.EntryID)
	if got.Status != "offered" || got.Offer == nil || len(got.Offer.SeatIDs) != 3 {
		t.Fatalf("alice right after the release: %+v", got)
	}
	// Alice leaves: her offer is declined, and the seats move on; Bob
	// wanted one.
	r := a.do("DELETE", "/waitlist/"+ea.EntryID, nil)
	var left waitlistEntry
	r.decode(t, &left)
	if r.Status != http.StatusOK || left.Status != "left" {
		t.Fatalf("leaving with an open offer: %d %s", r.Status, r.Body)
	}
	if r := a.confirm(got.Offer.BookingID, "tok_visa", "declined-pay"); r.Status == http.StatusOK {
		t.Errorf("paying for a declined offer succeeded")
	}
	got = bb.entry(eb.EntryID)
	if got.Status != "offered" || got.Offer == nil || len(got.Offer.SeatIDs) != 1 {
		t.Fatalf("bob after alice declined: %+v", got)
	}
	// The two seats nobody on the waitlist wanted are the public's again.
	st := s.statuses(t, ev)
	free := 0
	for _, seat := range []string{"R-A-1", "R-A-2", "R-A-3"} {
		if st[seat] == "available" {
			free++
		}
	}
	if free != 2 {
		t.Errorf("seats back to the public: %d of 3 (%v), want 2", free, st)
	}
	// Bob declines by releasing the offer's booking: nobody is left, the
	// seat is the public's.
	if r := bb.do("DELETE", "/bookings/"+got.Offer.BookingID, nil); r.Status != http.StatusOK {
		t.Fatalf("declining by release: %d %s", r.Status, r.Body)
	}
	if e := bb.entry(eb.EntryID); e.Status != "lapsed" {
		t.Errorf("bob after releasing his offer: %s, want lapsed", e.Status)
	}
	if r := s.client(t, "public", "").reserve(ev, "pub", "R-A-1", "R-A-2", "R-A-3"); r.Status != http.StatusCreated {
		t.Errorf("the public after the waitlist is done: %d %s", r.Status, r.Body)
	}
}

func testWaitlistInput(t *testing.T, s *Stack) {
	ev := s.newEvent(t, nil)
	c, other := s.client(t, "fan", ""), s.client(t, "other", "")
	path := "/events/" + ev + "/waitlist"
	cases := []struct {
		name   string
		body   any
		status int
	}{
		{"MissingKey", map[string]any{"quantity": 1}, 400},
		{"QuantityTooLarge", map[string]any{"quantity": 99, "idempotency_key": "q"}, 400},
		{"NegativeQuantity", map[string]any{"quantity": -1, "idempotency_key": "q"}, 400},
		{"ZeroQuantity", map[string]any{"quantity": 0, "idempotency_key": "q"}, 400},
		{"FieldNameCase", map[string]any{"QUANTITY": 2, "idempotency_key": "q"}, 400},
		{"UnknownSection", map[string]any{"section": "Z", "idempotency_key": "q"}, 400},
		{"UnknownField", map[string]any{"vip": true, "idempotency_key": "q"}, 400},
		{"Malformed", `{"quantity":`, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do("POST", path, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			r.problem(t)
		})
	}
	if r := c.do("POST", "/events/999/waitlist", map[string]any{"idempotency_key": "q"}); r.Status != http.StatusNotFound {
		t.Errorf("unknown event: %d", r.Status)
	}
	e := c.join(ev, map[string]any{"section": "A", "quantity": 2, "idempotency_key": "same"})
	r := c.do("POST", path, map[string]any{"section": "A", "quantity": 2, "idempotency_key": "same"})
	var again waitlistEntry
	r.decode(t, &again)
	if r.Status != http.StatusCreated || again.EntryID != e.EntryID || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the same key again: %d %s, want the same entry replayed", r.Status, r.Body)
	}
	if r := c.do("POST", path, map[string]any{"quantity": 1, "idempotency_key": "same"}); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("the same key with another body: %d, want 422", r.Status)
	}
	if r := c.do("POST", path, map[string]any{"idempotency_key": "second"}); r.Status != http.StatusConflict {
		t.Errorf("joining twice: %d, want 409", r.Status)
	}
	if r := other.do("GET", "/waitlist/"+e.EntryID, nil); r.Status != http.StatusNotFound {
		t.Errorf("another user's entry: %d, want 404", r.Status)
	}
	if r := other.do("DELETE", "/waitlist/"+e.EntryID, nil); r.Status != http.StatusNotFound {
		t.Errorf("another user leaving it: %d, want 404", r.Status)
	}
	var mine struct {
		Entries []waitlistEntry `json:"entries"`
	}
	c.do("GET", "/me/waitlist", nil).decode(t, &mine)
	if len(mine.Entries) != 1 || mine.Entries[0].EntryID != e.EntryID {
		t.Errorf("my waitlist: %+v", mine.Entries)
	}
	for range 2 {
		var l waitlistEntry
		c.do("DELETE", "/waitlist/"+e.EntryID, nil).decode(t, &l)
		if l.Status != "left" {
			t.Errorf("leaving: %+v", l)
		}
	}
	if r := s.anonymous(t).do("POST", path, map[string]any{"idempotency_key": "anon"}); r.Status != http.StatusUnauthorized {
		t.Errorf("anonymous join: %d, want 401", r.Status)
	}
}

// Two buyers race for one listing: one hold, one ticket, one charge; the
// seller's ticket is void, the seller is owed the price.
// A resale buyer who does not pay returns the listing to the market, and
// the waitlist gets it first: the offer is the listing at its price, and
// paying for it moves the ticket as a resale does.
func testResaleUnpaidGoesToTheWaitlist(t *testing.T, s *Stack) {
	b := eventBody(s, section{"U", "t", 5000, 1, 2})
	b["resale_cap_percent"] = 120
	ev := s.newEvent(t, b)
	seller := s.client(t, "seller", "")
	conf := seller.buy(ev, "U-A-1", "U-A-2") // sold out
	l := seller.mustList(conf.Tickets[0].TicketID, 5500)
	buyer := s.client(t, "buyer", "")
	if r := buyer.reserveListing(l.ListingID, "buy"); r.Status != http.StatusCreated {
		t.Fatalf("reserving the listing: %d %s", r.Status, r.Body)
	}
	fan := s.client(t, "fan", "")
	e := fan.join(ev, map[string]any{"quantity": 1})

	s.Advance(s.HoldTTL + time.Second) // the buyer's hold runs out; the returns pass runs
	got := fan.entry(e.EntryID)
	if got.Status != "offered" || got.Offer == nil || got.Offer.ListingID != l.ListingID ||
		got.Offer.AmountCents != 5500 || len(got.Offer.SeatIDs) != 1 || got.Offer.SeatIDs[0] != l.SeatID {
		t.Fatalf("the waitlisted fan after the buyer's hold ran out: %+v, want offered the listing at 5500", got)
	}
	if r := s.client(t, "outsider", "").reserveListing(l.ListingID, "grab"); r.Status != http.StatusConflict {
		t.Errorf("an outsider buying the offered listing: %d %s, want 409", r.Status, r.Body)
	}
	if r := fan.confirm(got.Offer.BookingID, "tok_visa", "offer-pay"); r.Status != http.StatusOK {
		t.Fatalf("paying for the offer: %d %s", r.Status, r.Body)
	}
	if e := fan.entry(e.EntryID); e.Status != "fulfilled" {
		t.Errorf("the fan's entry after paying: %s, want fulfilled", e.Status)
	}
	if v := seller.ticket(conf.Tickets[0].TicketID); v.Status != "void" || v.VoidReason != "resold" {
		t.Errorf("the seller's ticket: %s (%s), want void (resold)", v.Status, v.VoidReason)
	}
	var sold listingView
	s.anonymous(t).do("GET", "/listings/"+l.ListingID, nil).decode(t, &sold)
	if sold.Status != "sold" {
		t.Errorf("the listing after the fan paid: %s, want sold", sold.Status)
	}
	if st := s.statuses(t, ev); st[l.SeatID] != "sold" {
		t.Errorf("the seat after the fan paid: %s, want sold", st[l.SeatID])
	}
}

func testResaleRace(t *testing.T, s *Stack) {
	b := eventBody(s, section{"S", "t", 5000, 1, 4})
	b["resale_cap_percent"] = 120
	ev := s.newEvent(t, b)
	seller := s.client(t, "seller", "")
	conf := seller.buy(ev, "S-A-1")
	old := conf.Tickets[0]

	if r := seller.list(old.TicketID, 6001); r.Status != http.StatusBadRequest {
		t.Errorf("listing above the 120%% cap: %d %s, want 400", r.Status, r.Body)
	}
	if r := s.client(t, "thief", "").list(old.TicketID, 5000); r.Status != http.StatusNotFound {
		t.Errorf("listing someone else's ticket: %d, want 404", r.Status)
	}
	l := seller.mustList(old.TicketID, 6000)
	if l.Status != "active" || l.PriceCents != 6000 || l.FaceValueCents != 5000 || l.TicketID != old.TicketID {
		t.Errorf("listing: %+v", l)
	}
	if r := seller.list(old.TicketID, 5500); r.Status != http.StatusConflict {
		t.Errorf("listing a listed ticket again: %d, want 409", r.Status)
	}
	if r := seller.reserveListing(l.ListingID, "self"); r.Status != http.StatusBadRequest {
		t.Errorf("buying one's own listing: %d, want 400", r.Status)
	}
	if st := s.statuses(t, ev); st["S-A-1"] != "resale" {
		t.Errorf("seat map of a listed seat: %s, want resale", st["S-A-1"])
	}
	var public struct {
		Listings []listingView `json:"listings"`
	}
	s.anonymous(t).do("GET", "/events/"+ev+"/listings", nil).decode(t, &public)
	if len(public.Listings) != 1 || public.Listings[0].ListingID != l.ListingID || public.Listings[0].TicketID != "" {
		t.Errorf("public listings: %+v (the ticket id is the seller's to see)", public.Listings)
	}

	const n = 16
	var wins atomic.Int32
	var winner atomic.Pointer[string]
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := s.client(t, fmt.Sprintf("buyer-%d", i), "")
			r := c.reserveListing(l.ListingID, "buy")
			switch r.Status {
			case http.StatusCreated:
				wins.Add(1)
				var res reserved
				r.decode(t, &res)
				name := fmt.Sprintf("buyer-%d", i) + "|" + res.BookingID
				winner.Store(&name)
			case http.StatusConflict:
			default:
				t.Errorf("a racing buyer: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d buyers hold the one listing, want exactly 1", wins.Load())
	}
	who, booking, _ := strings.Cut(*winner.Load(), "|")
	buyer := s.client(t, who, "")
	if r := seller.do("DELETE", "/listings/"+l.ListingID, nil); r.Status != http.StatusConflict {
		t.Errorf("withdrawing a listing a buyer holds: %d, want 409", r.Status)
	}
	r := buyer.confirm(booking, "tok_visa", "resale-pay")
	if r.Status != http.StatusOK {
		t.Fatalf("the buyer's confirm: %d %s", r.Status, r.Body)
	}
	var bought confirmation
	r.decode(t, &bought)
	if len(bought.Tickets) != 1 || bought.AmountCents != 6000 {
		t.Fatalf("resale confirmation: %+v", bought)
	}
	newT := bought.Tickets[0]
	if newT.SeatID != "S-A-1" || newT.TicketID == old.TicketID || newT.Code == old.Code || newT.Code == "" {
		t.Errorf("the buyer's ticket %+v must be new (old %+v)", newT, old)
	}
	if got := s.chargedFor(booking); got != 6000 {
		t.Errorf("charged the buyer %d, want 6000 once", got)
	}
	if v := seller.ticket(old.TicketID); v.Status != "void" || v.VoidReason != "resold" || v.Code != "" {
		t.Errorf("the seller's old ticket: %+v, want void (resold) without a code", v)
	}
	var payouts struct {
		Payouts []struct {
			ListingID   string `json:"listing_id"`
			AmountCents int64  `json:"amount_cents"`
		} `json:"payouts"`
	}
	seller.do("GET", "/me/payouts", nil).decode(t, &payouts)
	if len(payouts.Payouts) != 1 || payouts.Payouts[0].ListingID != l.ListingID || payouts.Payouts[0].AmountCents != 6000 {
		t.Errorf("the seller's payouts: %+v", payouts.Payouts)
	}
	var sellerTickets, buyerTickets struct {
		Tickets []ticketView `json:"tickets"`
	}
	seller.do("GET", "/me/tickets", nil).decode(t, &sellerTickets)
	buyer.do("GET", "/me/tickets", nil).decode(t, &buyerTickets)
	if len(sellerTickets.Tickets) != 0 || len(buyerTickets.Tickets) != 1 || buyerTickets.Tickets[0].TicketID != newT.TicketID {
		t.Errorf("tickets after the resale: seller %+v, buyer %+v", sellerTickets.Tickets, buyerTickets.Tickets)
	}
	if r := s.client(t, "late", "").reserveListing(l.ListingID, "late"); r.Status != http.StatusConflict {
		t.Errorf("reserving a sold listing: %d, want 409", r.Status)
	}
	sold, err := s.Store.SoldSeats(ctx, parseID(t, ev))
	if err != nil || len(sold) != 1 {
		t.Errorf("valid tickets of the seat: %v %v, want exactly one", sold, err)
	}
	if st := s.statuses(t, ev); st["S-A-1"] != "sold" {
		t.Errorf("seat map after the resale: %s, want sold", st["S-A-1"])
	}
	// A buyer whose hold on a listing ran out cannot pay for it once another
	// buyer has it: one ticket, one charge.
	l2 := buyer.mustList(newT.TicketID, 5000)
	late, fast := s.client(t, "slowpoke", ""), s.client(t, "fast", "")
	r = late.reserveListing(l2.ListingID, "slow")
	if r.Status != http.StatusCreated {
		t.Fatalf("reserve listing: %d %s", r.Status, r.Body)
	}
	var lateRes reserved
	r.decode(t, &lateRes)
	s.Advance(s.HoldTTL + time.Second)
	r = fast.reserveListing(l2.ListingID, "fast")
	if r.Status != http.StatusCreated {
		t.Fatalf("reserving a listing whose hold lapsed: %d %s", r.Status, r.Body)
	}
	var fastRes reserved
	r.decode(t, &fastRes)
	if r := late.confirm(lateRes.BookingID, "tok_visa", "slow-pay"); r.Status == http.StatusOK {
		t.Fatalf("the lapsed buyer paid: %s", r.Body)
	}
	if r := fast.confirm(fastRes.BookingID, "tok_visa", "fast-pay"); r.Status != http.StatusOK {
		t.Fatalf("the second buyer's confirm: %d %s", r.Status, r.Body)
	}
	if s.chargedFor(lateRes.BookingID) != 0 || s.chargedFor(fastRes.BookingID) != 5000 {
		t.Errorf("charges: lapsed %d, paid %d", s.chargedFor(lateRes.BookingID), s.chargedFor(fastRes.BookingID))
	}
}

// After a resale the seller's code admits nobody, the buyer's admits once,
// and only venue staff check tickets in.
func testResaleCheckIn(t *testing.T, s *Stack) {
	ev := s.newEvent(t, eventBody(s, section{"C", "t", 3000, 1, 2}))
	seller, buyer := s.client(t, "seller", ""), s.client(t, "buyer", "")
	door := s.client(t, "door-1", boxoffice.RoleStaff)
	old := seller.buy(ev, "C-A-1").Tickets[0]
	l := seller.mustList(old.TicketID, 3000)
	res := buyer.reserveListing(l.ListingID, "buy")
	var rv reserved
	res.decode(t, &rv)
	r := buyer.confirm(rv.BookingID, "tok_visa", "p")
	if r.Status != http.StatusOK {
		t.Fatalf("buy listing: %d %s", r.Status, r.Body)
	}
	var conf confirmation
	r.decode(t, &conf)
	fresh := conf.Tickets[0]

	if r := buyer.checkIn(fresh.Code); r.Status != http.StatusForbidden {
		t.Errorf("a customer checking in: %d, want 403", r.Status)
	}
	if r := door.checkIn(old.Code); r.Status != http.StatusGone || r.problem(t).Code != boxoffice.ETICKETVOID {
		t.Errorf("the seller's old code at the door: %d %s, want 410 ticket-void", r.Status, r.Body)
	}
	elsewhere := s.newEvent(t, nil)
	if r := door.do("POST", "/checkin", map[string]any{"code": fresh.Code, "event_id": elsewhere}); r.Status != http.StatusConflict {
		t.Errorf("the code at another event's door: %d %s, want 409 (and the ticket not used up)", r.Status, r.Body)
	}
	r = door.do("POST", "/checkin", map[string]any{"code": fresh.Code, "event_id": ev})
	if r.Status != http.StatusOK {
		t.Fatalf("the buyer's code: %d %s", r.Status, r.Body)
	}
	var in ticketView
	r.decode(t, &in)
	if in.TicketID != fresh.TicketID || in.CheckedInAt == "" {
		t.Errorf("admitted ticket %+v", in)
	}
	if r := door.checkIn(fresh.Code); r.Status != http.StatusConflict || r.problem(t).Code != boxoffice.ECHECKEDIN {
		t.Errorf("the same code again: %d %s, want 409 already-checked-in", r.Status, r.Body)
	}
	if r := door.checkIn("NO-SUCH-CODE"); r.Status != http.StatusNotFound {
		t.Errorf("an unknown code: %d, want 404", r.Status)
	}
	if r := buyer.list(fresh.TicketID, 3000); r.Status != http.StatusConflict {
		t.Errorf("listing a used ticket: %d, want 409", r.Status)
	}
	// Scoped tokens: staff of one event admit at its doors and read its
	// tickets; unscoped staff read no ticket; an organiser of another
	// event sees none of this one's stats.
	mine, theirs := s.scoped(t, "door-ev", boxoffice.RoleStaff, ev), s.scoped(t, "door-else", boxoffice.RoleStaff, elsewhere)
	if r := theirs.do("POST", "/checkin", map[string]any{"code": fresh.Code, "event_id": ev}); r.Status != http.StatusForbidden {
		t.Errorf("staff of another event at this door: %d, want 403", r.Status)
	}
	if r := theirs.checkIn(fresh.Code); r.Status != http.StatusConflict {
		t.Errorf("staff of another event, no event named (their own is taken): %d %s, want 409", r.Status, r.Body)
	}
	if r := mine.checkIn(fresh.Code); r.Status != http.StatusConflict || r.problem(t).Code != boxoffice.ECHECKEDIN {
		t.Errorf("this event's staff, no event named: %d %s, want 409 already-checked-in", r.Status, r.Body)
	}
	for who, c := range map[string]*client{"this event's staff": mine, "unscoped staff": door, "another event's staff": theirs} {
		want := http.StatusNotFound
		if c == mine {
			want = http.StatusOK
		}
		if r := c.do("GET", "/tickets/"+fresh.TicketID, nil); r.Status != want {
			t.Errorf("%s reading a ticket: %d, want %d", who, r.Status, want)
		}
	}
	if r := s.scoped(t, "org-else", "admin", elsewhere).do("GET", "/events/"+ev+"/stats", nil); r.Status != http.StatusNotFound {
		t.Errorf("an organiser of another event reading this one's stats: %d, want 404", r.Status)
	}
	if r := s.scoped(t, "org-ev", "admin", ev).do("GET", "/events/"+ev+"/stats", nil); r.Status != http.StatusOK {
		t.Errorf("this event's organiser reading its stats: %d, want 200", r.Status)
	}
	// Concurrent scans of one code: one admission.
	other := seller.buy(ev, "C-A-2").Tickets[0]
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			d := s.client(t, fmt.Sprintf("door-%d", i), boxoffice.RoleStaff)
			if d.checkIn(other.Code).Status == http.StatusOK {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Errorf("%d doors admitted one code, want 1", ok.Load())
	}
}

// Cancel and refund: the tickets go void, the money goes back, the seats
// go to the waitlist first; a closed policy refuses.
func testCancelRefund(t *testing.T, s *Stack) {
	ev := s.refundableEvent(t, 24, section{"X", "t", 2500, 1, 4})
	c := s.client(t, "fan", "")
	conf := c.buy(ev, "X-A-1", "X-A-2")
	w := s.client(t, "waiter", "")
	e := w.join(ev, map[string]any{"quantity": 1})

	if r := s.client(t, "other", "").do("POST", "/bookings/"+conf.BookingID+"/cancel", nil, "Idempotency-Key", "x"); r.Status != http.StatusNotFound {
		t.Errorf("another user cancelling: %d, want 404", r.Status)
	}
	if r := c.do("POST", "/bookings/"+conf.BookingID+"/cancel", nil); r.Status != http.StatusBadRequest {
		t.Errorf("cancel without a key: %d, want 400", r.Status)
	}
	for i := range 2 {
		r := c.do("POST", "/bookings/"+conf.BookingID+"/cancel", nil, "Idempotency-Key", "cancel-1")
		var out struct {
			Status       string `json:"status"`
			RefundCents  int64  `json:"refund_cents"`
			RefundStatus string `json:"refund_status"`
		}
		r.decode(t, &out)
		if r.Status != http.StatusOK || out.Status != "cancelled" || out.RefundCents != 5000 || out.RefundStatus != "refunded" {
			t.Fatalf("cancel #%d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if got := s.chargedFor(conf.BookingID); got != 0 {
		t.Errorf("charged after the refund: %d, want 0", got)
	}
	var b struct {
		Status  string       `json:"status"`
		Tickets []ticketView `json:"tickets"`
	}
	c.do("GET", "/bookings/"+conf.BookingID, nil).decode(t, &b)
	if b.Status != "cancelled" || len(b.Tickets) != 2 || b.Tickets[0].Status != "void" || b.Tickets[0].VoidReason != "cancelled" || b.Tickets[0].Code != "" {
		t.Errorf("the cancelled booking: %+v", b)
	}
	if r := s.client(t, "door", boxoffice.RoleStaff).checkIn(conf.Tickets[0].Code); r.Status != http.StatusGone {
		t.Errorf("a cancelled ticket at the door: %d, want 410", r.Status)
	}
	got := w.entry(e.EntryID)
	if got.Status != "offered" || got.Offer == nil || len(got.Offer.SeatIDs) != 1 {
		t.Errorf("the waitlist after the cancel: %+v", got)
	}
	st := s.statuses(t, ev)
	if st["X-A-1"] == "sold" || st["X-A-2"] == "sold" {
		t.Errorf("cancelled seats still sold: %v", st)
	}

	// A listed ticket cannot be cancelled from under its listing.
	c2 := s.client(t, "lister", "")
	conf2 := c2.buy(ev, "X-A-3")
	l := c2.mustList(conf2.Tickets[0].TicketID, 2500)
	if r := c2.do("POST", "/bookings/"+conf2.BookingID+"/cancel", nil, "Idempotency-Key", "c2"); r.Status != http.StatusConflict {
		t.Errorf("cancelling a booking with a listed ticket: %d, want 409", r.Status)
	}
	c2.do("DELETE", "/listings/"+l.ListingID, nil)
	if r := c2.do("POST", "/bookings/"+conf2.BookingID+"/cancel", nil, "Idempotency-Key", "c3"); r.Status != http.StatusOK {
		t.Errorf("cancelling after withdrawing the listing: %d %s", r.Status, r.Body)
	}

	// Not refundable: refused, nothing changed.
	ev2 := s.newEvent(t, eventBody(s, section{"N", "t", 1000, 1, 2}))
	conf3 := c.buy(ev2, "N-A-1")
	r := c.do("POST", "/bookings/"+conf3.BookingID+"/cancel", nil, "Idempotency-Key", "c4")
	if r.Status != http.StatusConflict || r.problem(t).Code != boxoffice.ECANCELCLOSED {
		t.Errorf("cancelling a non-refundable booking: %d %s, want 409 cancellation-closed", r.Status, r.Body)
	}
	if got := s.chargedFor(conf3.BookingID); got != 1000 {
		t.Errorf("a refused cancel changed the charge: %d", got)
	}
}

// A randomized run of buying, cancelling, listing, buying on resale and
// letting holds lapse, audited against the store and the gateway: no
// ticket without a payment, no payment without a ticket, one valid ticket
// per seat at most.
func testAfterSaleAudit(t *testing.T, s *Stack) {
	ev := s.refundableEvent(t, 24, section{"Z", "t", 1000, 1, 8})
	seats := []string{"Z-A-1", "Z-A-2", "Z-A-3", "Z-A-4", "Z-A-5", "Z-A-6", "Z-A-7", "Z-A-8"}
	var (
		mu       sync.Mutex
		bookings = map[string]bool{}
	)
	note := func(id string) { mu.Lock(); bookings[id] = true; mu.Unlock() }
	var wg sync.WaitGroup
	for u := range 12 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(u), 5))
			c := s.client(t, fmt.Sprintf("mix-%d", u), "")
			for i := range 10 {
				key := fmt.Sprintf("m%d-%d", u, i)
				switch rng.IntN(4) {
				case 0, 1: // buy a seat, maybe cancel it
					r := c.reserve(ev, key, seats[rng.IntN(len(seats))])
					if r.Status != http.StatusCreated {
						continue
					}
					var res reserved
					r.decode(t, &res)
					note(res.BookingID)
					if c.confirm(res.BookingID, []string{"tok_visa", "tok_visa", "tok_chargeDeclined"}[rng.IntN(3)], key+"-p").Status != http.StatusOK {
						c.do("DELETE", "/bookings/"+res.BookingID, nil)
						continue
					}
					if rng.IntN(3) == 0 {
						c.do("POST", "/bookings/"+res.BookingID+"/cancel", nil, "Idempotency-Key", key+"-x")
					}
				case 2: // list a ticket of mine
					var mine struct {
						Tickets []ticketView `json:"tickets"`
					}
					c.do("GET", "/me/tickets", nil).decode(t, &mine)
					for _, tk := range mine.Tickets {
						if tk.ListingID == "" {
							c.list(tk.TicketID, int64(500+rng.IntN(1000)))
							break
						}
					}
				case 3: // buy on resale
					var market struct {
						Listings []listingView `json:"listings"`
					}
					s.anonymous(t).do("GET", "/events/"+ev+"/listings", nil).decode(t, &market)
					if len(market.Listings) == 0 {
						continue
					}
					l := market.Listings[rng.IntN(len(market.Listings))]
					r := c.reserveListing(l.ListingID, key)
					if r.Status != http.StatusCreated {
						continue
					}
					var res reserved
					r.decode(t, &res)
					note(res.BookingID)
					if rng.IntN(4) > 0 {
						c.confirm(res.BookingID, "tok_visa", key+"-p")
					} else {
						c.do("DELETE", "/bookings/"+res.BookingID, nil)
					}
				}
			}
		})
	}
	wg.Wait()

	sold := s.soldOnce(t, ev)
	valid := 0
	byStatus := map[boxoffice.BookingStatus]int{}
	for id := range bookings {
		b, err := s.Store.Booking(ctx, parseID(t, id))
		if err != nil {
			t.Fatal(err)
		}
		byStatus[b.Status]++
		charged := s.chargedFor(id)
		switch b.Status {
		case boxoffice.BookingConfirmed:
			if charged != b.AmountCents {
				t.Errorf("confirmed booking %s (%d cents) charged %d", id, b.AmountCents, charged)
			}
			for _, tk := range b.Tickets {
				if tk.Status == boxoffice.TicketValid {
					valid++
				} else if tk.VoidReason != boxoffice.VoidResold {
					t.Errorf("a paid booking's ticket is void for %q", tk.VoidReason)
				}
			}
		default: // cancelled (refunded), released, expired, pending: no money kept
			if charged != 0 {
				t.Errorf("%s booking %s charged %d: a payment without a ticket", b.Status, id, charged)
			}
			for _, tk := range b.Tickets {
				if tk.Status == boxoffice.TicketValid {
					t.Errorf("%s booking %s has a valid ticket: a ticket without a payment", b.Status, id)
				}
			}
		}
	}
	if valid != len(sold) {
		t.Errorf("%d valid tickets in paid bookings, %d seats sold", valid, len(sold))
	}
	t.Logf("%d bookings %v, %d seats sold at the end", len(bookings), byStatus, len(sold))
}
