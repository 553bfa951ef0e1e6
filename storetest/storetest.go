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

// Run runs the contract suite. newStore must return a fresh, empty store
// each time it is called (once per subtest) and close it in a t.Cleanup.
// The subtests do not call t.Parallel; newStore may make them so.
func Run(t *testing.T, newStore func(t *testing.T) boxoffice.Store) {
	s := suite(newStore)
	s.test(t, "Ping", func(t *testing.T, f *fixture) {
		if err := f.store.Ping(f.ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	s.events(t)
	s.bookings(t)
	s.ticketLimit(t)
	s.confirm(t)
	s.confirmConcurrency(t)
	s.release(t)
	s.expire(t)
	s.payments(t)
	s.idempotency(t)
	s.outbox(t)
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
		ID:          f.nextID(),
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
		Fence:     b.Fence,
		Now:       now,
		Code:      fmt.Sprintf("CONF-%d-%s", b.ID, tag),
		Payment: boxoffice.Payment{
			BookingID:   b.ID,
			AuthID:      fmt.Sprintf("auth-%d-%s", b.ID, tag),
			AmountCents: b.AmountCents,
			Status:      boxoffice.PaymentAuthorized,
			CreatedAt:   now,
		},
	}
	for _, seat := range b.SeatIDs {
		c.Tickets = append(c.Tickets, boxoffice.Ticket{
			ID:        f.nextID(),
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
		t.IssuedAt = ms(t.IssuedAt)
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
