// Package storetest is the one contract test suite of boxoffice.Store.
// Every implementation (sqlite.Store, postgres.Store) runs it:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) boxoffice.Store {
//			s := openFreshStore(t)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The subtests read as the specification of the port: where store.go's doc
// comments leave a detail open, the test that pins it says so.
//
// Promises pinned here beyond the doc comments (both stores keep them):
//   - times come back in UTC, truncated to the millisecond;
//   - Events returns each event with its sections;
//   - a booking's SeatIDs keep their order, and its Tickets follow it;
//   - "live" in CreateBooking is judged at nb.Booking.CreatedAt, the only
//     "now" NewBooking carries;
//   - ConfirmBooking sets UpdatedAt to c.Now, ReleaseBooking to now;
//   - ConfirmBooking refuses with EINVALID tickets that do not name each
//     seat of the booking exactly once;
//   - ExpireBookings expires holds with HeldUntil <= cutoff (a hold is not
//     live at its HeldUntil, see Booking.Live); UncapturedPayments lists
//     CreatedAt < cutoff; PurgeIdempotency deletes ExpiresAt < now;
//   - a taken event or booking ID is ECONFLICT, an unknown seat EINVALID;
//   - the ESEATTAKEN of CreateBooking names exactly the sold seats;
//   - ReleaseBooking to anything but released or expired is EINVALID.
//
// The files of cancellation, resale, check-in and the waitlist (cancel.go,
// resale.go, tickets.go, waitlist.go, returns.go) each open with the
// promises they pin.
package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// RunBatch runs only the specs of CreateBookings, which compare it with
// CreateBooking: for a store whose CreateBooking itself goes through
// CreateBookings (postgres's group commit), a wrapper whose CreateBooking
// writes alone gives the batch a reference to be held to.
func RunBatch(t *testing.T, newStore func(t *testing.T) boxoffice.Store) {
	suite(newStore).batchBookings(t)
}

// Run runs the contract suite. newStore must return a fresh, empty store
// each time it is called and close it in a t.Cleanup. It is called once
// per *testing.T (a spec that needs two stores opens its second in a
// subtest of its own, see testTwo). The subtests do not call t.Parallel;
// newStore may make them so.
func Run(t *testing.T, newStore func(t *testing.T) boxoffice.Store) {
	s := suite(newStore)
	s.test(t, "Ping", func(t *testing.T, f *fixture) {
		if err := f.store.Ping(f.ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	s.events(t)
	s.draws(t)
	s.bookings(t)
	s.ticketLimit(t)
	s.confirm(t)
	s.confirmConcurrency(t)
	s.release(t)
	s.expire(t)
	s.payments(t)
	s.idempotency(t)
	s.batchBookings(t)
	s.idempotencies(t)
	s.outbox(t)
	s.eventPolicy(t)
	s.tickets(t)
	s.checkIn(t)
	s.listings(t)
	s.resalePurchase(t)
	s.resaleConfirm(t)
	s.resaleOfferedToTheWaitlist(t)
	s.cancel(t)
	s.refunds(t)
	s.waitlist(t)
	s.waitlistOffers(t)
	s.seatReturns(t)
}

// suite makes a fixture around a fresh store for each subtest.
type suite func(t *testing.T) boxoffice.Store

// test runs body as the subtest name with a fixture of its own.
func (s suite) test(t *testing.T, name string, body func(t *testing.T, f *fixture)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		body(t, &fixture{t: t, ctx: t.Context(), store: s(t)})
	})
}

// testTwo runs body as the subtest name with two fixtures, each on a fresh
// store of its own, for specs that compare two stores taken through the
// same history. newStore is called once per *testing.T (it may call
// t.Parallel, which a test may call only once), so the second store is
// opened in a subtest, "second store", that runs body; the first stays
// open until it ends. The fixtures share nothing: the caller builds each
// value once, with one of them, and writes it to both.
func (s suite) testTwo(t *testing.T, name string, body func(t *testing.T, one, two *fixture)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		first := s(t)
		t.Run("second store", func(t *testing.T) {
			second := s(t)
			body(t, &fixture{t: t, ctx: t.Context(), store: first}, &fixture{t: t, ctx: t.Context(), store: second})
		})
	})
}

// t0 is the suite's "now": the clock is always passed in, never read.
var t0 = time.Date(2030, 6, 1, 18, 0, 0, 0, time.UTC)

// hold is how long the fixture's bookings are held.
const hold = 10 * time.Minute

// fixture builds events and bookings on one store. Its helpers fail the
// test (t.Fatal) on any unexpected error, so they are called only from the
// test's goroutine.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store boxoffice.Store
	ids   atomic.Int64
	fence atomic.Int64
}

// nextID returns a fresh id (the suite needs unique, increasing ids, not
// Snowflake's time bits).
func (f *fixture) nextID() boxoffice.ID { return boxoffice.ID(1000 + f.ids.Add(1)) }

// snowflakeTimeShift is where a Snowflake id's time part starts
// (snowflake.TimeShift).
const snowflakeTimeShift = 22

// idPlacer is a store that finds a row by the shard its id names
// (postgres.Sharded): the ids of an event's rows are minted for its shard.
type idPlacer interface {
	PlaceID(ctx context.Context, eventID, id boxoffice.ID) (boxoffice.ID, error)
}

// idFor returns a fresh id for a row of event eventID: nextID, or on a
// sharded store, as the service mints them, nextID as the time part of a
// Snowflake id (so that ids keep their order across shards) moved onto
// the event's shard.
func (f *fixture) idFor(eventID boxoffice.ID) boxoffice.ID {
	f.t.Helper()
	id := f.nextID()
	p, ok := f.store.(idPlacer)
	if !ok {
		return id
	}
	id, err := p.PlaceID(f.ctx, eventID, id<<snowflakeTimeShift)
	if err != nil {
		f.t.Fatalf("PlaceID: %v", err)
	}
	return id
}

// nextFence returns a fencing token larger than every earlier one.
func (f *fixture) nextFence() int64 { return f.fence.Add(1) }

// newEvent returns an unsaved event of 60 seats: section A (4 rows of 10,
// rows A-D) and section B (2 rows of 10, rows A-B).
func (f *fixture) newEvent() *boxoffice.Event {
	return &boxoffice.Event{
		ID:          f.nextID(),
		Name:        "The Flash Sale Tour",
		Venue:       "Arena",
		StartsAt:    t0.Add(30 * 24 * time.Hour),
		SaleOpensAt: t0.Add(-time.Hour),
		SaleMode:    boxoffice.SaleDirect,
		TicketLimit: boxoffice.DefaultTicketLimit,
		Sections: []boxoffice.Section{
			{Name: "A", PriceTier: "gold", PriceCents: 12000, Rows: 4, SeatsPerRow: 10},
			{Name: "B", PriceTier: "silver", PriceCents: 4500, Rows: 2, SeatsPerRow: 10},
		},
		CreatedAt: t0.Add(-24 * time.Hour),
	}
}

// createEvent saves a newEvent and returns it.
func (f *fixture) createEvent() *boxoffice.Event {
	f.t.Helper()
	e := f.newEvent()
	if err := f.store.CreateEvent(f.ctx, e); err != nil {
		f.t.Fatalf("CreateEvent: %v", err)
	}
	return e
}

// newBooking returns an unsaved pending booking of user for seats of e,
// created at t0 and held until t0+hold, with a fresh fence.
func (f *fixture) newBooking(e *boxoffice.Event, user string, seats ...string) *boxoffice.Booking {
	f.t.Helper()
	layout := make(map[string]boxoffice.Seat)
	for _, s := range e.Seats() {
		layout[s.ID] = s
	}
	var amount int64
	for _, id := range seats {
		s, ok := layout[id]
		if !ok {
			f.t.Fatalf("fixture: seat %q is not in the layout", id)
		}
		amount += s.PriceCents
	}
	return &boxoffice.Booking{
		ID:          f.idFor(e.ID),
		EventID:     e.ID,
		UserID:      user,
		SeatIDs:     seats,
		Status:      boxoffice.BookingPending,
		Fence:       f.nextFence(),
		AmountCents: amount,
		HeldUntil:   t0.Add(hold),
		CreatedAt:   t0,
		UpdatedAt:   t0,
	}
}

// createBooking saves b with the largest ticket limit.
func (f *fixture) createBooking(b *boxoffice.Booking) {
	f.t.Helper()
	if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: boxoffice.MaxTicketLimit}); err != nil {
		f.t.Fatalf("CreateBooking(%d): %v", b.ID, err)
	}
}

// book creates a pending booking (see newBooking) and returns it.
func (f *fixture) book(e *boxoffice.Event, user string, seats ...string) *boxoffice.Booking {
	f.t.Helper()
	b := f.newBooking(e, user, seats...)
	f.createBooking(b)
	return b
}

// confirmation returns a valid confirmation of b at now: one ticket per
// seat, in seat order, and an authorized payment of its amount. tag makes
// the ticket ids, codes and authorization distinct between attempts.
func (f *fixture) confirmation(b *boxoffice.Booking, now time.Time, tag string) boxoffice.ConfirmBooking {
	c := boxoffice.ConfirmBooking{
		BookingID: b.ID,
		EventID:   b.EventID,
		Fence:     b.Fence,
		Now:       now,
		Code:      fmt.Sprintf("CONF-%d-%s", b.ID, tag),
		Payment: boxoffice.Payment{
			EventID:     b.EventID,
			BookingID:   b.ID,
			AuthID:      fmt.Sprintf("auth-%d-%s", b.ID, tag),
			AmountCents: b.AmountCents,
			Status:      boxoffice.PaymentAuthorized,
			CreatedAt:   now,
		},
	}
	for _, seat := range b.SeatIDs {
		c.Tickets = append(c.Tickets, boxoffice.Ticket{
			ID:        f.idFor(b.EventID),
			EventID:   b.EventID,
			BookingID: b.ID,
			SeatID:    seat,
			UserID:    b.UserID,
			Code:      fmt.Sprintf("TKT-%d-%s-%s", b.ID, seat, tag),
			Status:    boxoffice.TicketValid,
			IssuedAt:  now,
		})
	}
	return c
}

// confirm confirms b a minute after t0 and returns it as stored.
func (f *fixture) confirm(b *boxoffice.Booking) *boxoffice.Booking {
	f.t.Helper()
	got, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, t0.Add(time.Minute), "ok"))
	if err != nil {
		f.t.Fatalf("ConfirmBooking(%d): %v", b.ID, err)
	}
	return got
}

// release moves b to status to at t0 plus a minute.
func (f *fixture) release(b *boxoffice.Booking, to boxoffice.BookingStatus) {
	f.t.Helper()
	if _, err := f.store.ReleaseBooking(f.ctx, b.ID, to, t0.Add(time.Minute)); err != nil {
		f.t.Fatalf("ReleaseBooking(%d, %s): %v", b.ID, to, err)
	}
}

// booking reads a booking that must exist.
func (f *fixture) booking(id boxoffice.ID) *boxoffice.Booking {
	f.t.Helper()
	b, err := f.store.Booking(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Booking(%d): %v", id, err)
	}
	return b
}

// soldSeats reads SoldSeats, sorted.
func (f *fixture) soldSeats(eventID boxoffice.ID) []string {
	f.t.Helper()
	seats, err := f.store.SoldSeats(f.ctx, eventID)
	if err != nil {
		f.t.Fatalf("SoldSeats(%d): %v", eventID, err)
	}
	return seats
}

// payments reads every uncaptured payment.
func (f *fixture) payments() []boxoffice.Payment {
	f.t.Helper()
	ps, err := f.store.UncapturedPayments(f.ctx, t0.Add(100*365*24*time.Hour), 1000)
	if err != nil {
		f.t.Fatalf("UncapturedPayments: %v", err)
	}
	return ps
}

// opts compare store values: nil and empty slices are alike; times must be
// the same instant and in UTC (every store returns UTC).
var opts = cmp.Options{
	cmpopts.EquateEmpty(),
	cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) && x.Location() == y.Location() }),
}

// sortedStrings sorts string slices before comparing, for results whose
// order the port leaves open.
var sortedStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// ms is how a store keeps a time: truncated to the millisecond, in UTC.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond).UTC() }

// stored returns b as a store gives it back: times in ms UTC, a copy.
func stored(b *boxoffice.Booking) *boxoffice.Booking {
	c := *b
	c.SeatIDs = append([]string(nil), b.SeatIDs...)
	c.HeldUntil, c.CreatedAt, c.UpdatedAt = ms(b.HeldUntil), ms(b.CreatedAt), ms(b.UpdatedAt)
	c.Tickets = nil
	for _, t := range b.Tickets {
		t.IssuedAt, t.CheckedInAt = ms(t.IssuedAt), ms(t.CheckedInAt)
		c.Tickets = append(c.Tickets, t)
	}
	return &c
}

// wantCode fails the test unless err carries the domain error code want
// ("" for no error).
func wantCode(t testing.TB, what string, err error, want string) {
	t.Helper()
	if got := boxoffice.ErrorCode(err); got != want {
		t.Fatalf("%s: error code %q, want %q (error: %v)", what, got, want, err)
	}
}

// The fixture's clock after the sale of t0 (confirmed at t0+1m): a ticket
// is listed at listedAt, a buyer holds the listing from purchaseAt and pays
// at resoldAt; a booking is cancelled at cancelledAt.
var (
	listedAt    = t0.Add(2 * time.Minute)
	purchaseAt  = t0.Add(3 * time.Minute)
	resoldAt    = t0.Add(4 * time.Minute)
	cancelledAt = t0.Add(5 * time.Minute)
)

// sell books seats of e for user and confirms them (see confirm); it
// returns the booking as stored, its tickets in seat order.
func (f *fixture) sell(e *boxoffice.Event, user string, seats ...string) *boxoffice.Booking {
	f.t.Helper()
	return f.confirm(f.book(e, user, seats...))
}

// newListing returns an unsaved listing of t by its holder at price, made
// at listedAt.
func (f *fixture) newListing(t boxoffice.Ticket, price int64) *boxoffice.Listing {
	return &boxoffice.Listing{
		ID:         f.idFor(t.EventID),
		TicketID:   t.ID,
		SellerID:   t.UserID,
		PriceCents: price,
		CreatedAt:  listedAt,
		UpdatedAt:  listedAt,
	}
}

// list lists t at price and returns the listing as CreateListing left it.
func (f *fixture) list(t boxoffice.Ticket, price int64) *boxoffice.Listing {
	f.t.Helper()
	l := f.newListing(t, price)
	if err := f.store.CreateListing(f.ctx, l, nil); err != nil {
		f.t.Fatalf("CreateListing(ticket %d): %v", t.ID, err)
	}
	return l
}

// newPurchase returns an unsaved resale purchase of l by buyer: a pending
// booking of the listing's seat at its price, created at purchaseAt and
// held for hold, with a fresh fence.
func (f *fixture) newPurchase(l *boxoffice.Listing, buyer string) *boxoffice.Booking {
	return &boxoffice.Booking{
		ID:          f.idFor(l.EventID),
		EventID:     l.EventID,
		UserID:      buyer,
		SeatIDs:     []string{l.SeatID},
		Status:      boxoffice.BookingPending,
		Fence:       f.nextFence(),
		AmountCents: l.PriceCents,
		HeldUntil:   purchaseAt.Add(hold),
		CreatedAt:   purchaseAt,
		UpdatedAt:   purchaseAt,
		ListingID:   l.ID,
	}
}

// purchase saves a newPurchase and returns it.
func (f *fixture) purchase(l *boxoffice.Listing, buyer string) *boxoffice.Booking {
	f.t.Helper()
	b := f.newPurchase(l, buyer)
	f.createBooking(b)
	return b
}

// resell has buyer buy l (purchase, then confirm at resoldAt) and returns
// the buyer's booking as stored, with the one new ticket.
func (f *fixture) resell(l *boxoffice.Listing, buyer string) *boxoffice.Booking {
	f.t.Helper()
	b := f.purchase(l, buyer)
	got, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, resoldAt, "resale"))
	if err != nil {
		f.t.Fatalf("ConfirmBooking(resale %d): %v", b.ID, err)
	}
	return got
}

// cancel cancels b at cancelledAt and returns it as stored.
func (f *fixture) cancel(b *boxoffice.Booking) *boxoffice.Booking {
	f.t.Helper()
	got, err := f.store.CancelBooking(f.ctx, boxoffice.CancelBooking{BookingID: b.ID, Now: cancelledAt})
	if err != nil {
		f.t.Fatalf("CancelBooking(%d): %v", b.ID, err)
	}
	return got
}

// checkIn admits t at now.
func (f *fixture) checkIn(t boxoffice.Ticket, now time.Time) *boxoffice.Ticket {
	f.t.Helper()
	got, err := f.store.CheckIn(f.ctx, 0, t.Code, now)
	if err != nil {
		f.t.Fatalf("CheckIn(%s): %v", t.Code, err)
	}
	return got
}

// newEntry returns an unsaved waitlist entry of user for quantity seats
// of e, joined at t0.
func (f *fixture) newEntry(e *boxoffice.Event, user string, quantity int) *boxoffice.WaitlistEntry {
	return &boxoffice.WaitlistEntry{
		ID:        f.idFor(e.ID),
		EventID:   e.ID,
		UserID:    user,
		Quantity:  quantity,
		JoinedAt:  t0,
		UpdatedAt: t0,
	}
}

// join puts user on e's waitlist for two seats and returns the entry as
// JoinWaitlist left it.
func (f *fixture) join(e *boxoffice.Event, user string) *boxoffice.WaitlistEntry {
	f.t.Helper()
	w := f.newEntry(e, user, 2)
	if err := f.store.JoinWaitlist(f.ctx, w, nil); err != nil {
		f.t.Fatalf("JoinWaitlist(%s): %v", user, err)
	}
	return w
}

// newOffer returns an unsaved waitlist offer of seats of e to w's user (see
// newBooking).
func (f *fixture) newOffer(w *boxoffice.WaitlistEntry, e *boxoffice.Event, seats ...string) *boxoffice.Booking {
	f.t.Helper()
	b := f.newBooking(e, w.UserID, seats...)
	b.WaitlistEntryID = w.ID
	return b
}

// offer saves a newOffer and returns it.
func (f *fixture) offer(w *boxoffice.WaitlistEntry, e *boxoffice.Event, seats ...string) *boxoffice.Booking {
	f.t.Helper()
	b := f.newOffer(w, e, seats...)
	f.createBooking(b)
	return b
}

// ticket reads a ticket that must exist.
func (f *fixture) ticket(id boxoffice.ID) *boxoffice.Ticket {
	f.t.Helper()
	t, err := f.store.Ticket(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Ticket(%d): %v", id, err)
	}
	return t
}

// userTickets reads a user's valid tickets.
func (f *fixture) userTickets(user string) []boxoffice.Ticket {
	f.t.Helper()
	ts, err := f.store.UserTickets(f.ctx, user)
	if err != nil {
		f.t.Fatalf("UserTickets(%s): %v", user, err)
	}
	return ts
}

// listing reads a listing that must exist.
func (f *fixture) listing(id boxoffice.ID) *boxoffice.Listing {
	f.t.Helper()
	l, err := f.store.Listing(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Listing(%d): %v", id, err)
	}
	return l
}

// eventListings reads an event's active listings.
func (f *fixture) eventListings(eventID boxoffice.ID) []boxoffice.Listing {
	f.t.Helper()
	ls, err := f.store.EventListings(f.ctx, eventID)
	if err != nil {
		f.t.Fatalf("EventListings(%d): %v", eventID, err)
	}
	return ls
}

// payouts reads a seller's payouts.
func (f *fixture) payouts(seller string) []boxoffice.Payout {
	f.t.Helper()
	ps, err := f.store.UserPayouts(f.ctx, seller)
	if err != nil {
		f.t.Fatalf("UserPayouts(%s): %v", seller, err)
	}
	return ps
}

// entry reads a waitlist entry that must exist.
func (f *fixture) entry(id boxoffice.ID) *boxoffice.WaitlistEntry {
	f.t.Helper()
	w, err := f.store.WaitlistEntry(f.ctx, id)
	if err != nil {
		f.t.Fatalf("WaitlistEntry(%d): %v", id, err)
	}
	return w
}

// payment reads a booking's payment, which must exist.
func (f *fixture) payment(bookingID boxoffice.ID) *boxoffice.Payment {
	f.t.Helper()
	p, err := f.store.Payment(f.ctx, bookingID)
	if err != nil {
		f.t.Fatalf("Payment(%d): %v", bookingID, err)
	}
	return p
}

// returns reads every pending seat return.
func (f *fixture) returns() []boxoffice.SeatReturn {
	f.t.Helper()
	rs, err := f.store.PendingReturns(f.ctx, 10_000)
	if err != nil {
		f.t.Fatalf("PendingReturns: %v", err)
	}
	return rs
}

// forgetReturns deletes every pending seat return, so that what a test
// does next is alone in the list.
func (f *fixture) forgetReturns() {
	f.t.Helper()
	for _, r := range f.returns() {
		if err := f.store.DeleteReturn(f.ctx, r.ID); err != nil {
			f.t.Fatalf("DeleteReturn(%d): %v", r.ID, err)
		}
	}
}

// wantReturns fails unless the pending seat returns are exactly want, in
// order, with rising IDs (the store's, so want's are not compared).
func (f *fixture) wantReturns(want ...boxoffice.SeatReturn) {
	f.t.Helper()
	got := f.returns()
	for i := 1; i < len(got); i++ {
		if got[i].ID <= got[i-1].ID {
			f.t.Errorf("seat return %d has ID %d after %d: want rising IDs, oldest first", i, got[i].ID, got[i-1].ID)
		}
	}
	noID := cmpopts.IgnoreFields(boxoffice.SeatReturn{}, "ID")
	if diff := cmp.Diff(want, got, opts, noID); diff != "" {
		f.t.Errorf("PendingReturns mismatch (-want +got):\n%s", diff)
	}
}

// returnOf is the seat return that ending b at at writes.
func returnOf(b *boxoffice.Booking, at time.Time) boxoffice.SeatReturn {
	return boxoffice.SeatReturn{
		EventID:   b.EventID,
		BookingID: b.ID,
		SeatIDs:   append([]string(nil), b.SeatIDs...),
		ListingID: b.ListingID,
		CreatedAt: ms(at),
	}
}

// storedListing returns l as a store gives it back: times in ms UTC.
func storedListing(l *boxoffice.Listing) *boxoffice.Listing {
	c := *l
	c.CreatedAt, c.UpdatedAt = ms(l.CreatedAt), ms(l.UpdatedAt)
	return &c
}

// storedEntry returns w as a store gives it back: times in ms UTC.
func storedEntry(w *boxoffice.WaitlistEntry) *boxoffice.WaitlistEntry {
	c := *w
	c.JoinedAt, c.UpdatedAt = ms(w.JoinedAt), ms(w.UpdatedAt)
	return &c
}
