package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
	"github.com/boxoffice/boxoffice/snowflake"
)

// t0 is the tests' "now": every time they write is derived from it.
var t0 = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

var lastID atomic.Int64

// newID returns an id no other fixture of this test binary uses.
func newID() boxoffice.ID { return boxoffice.ID(lastID.Add(1)) }

// createEvent writes an event with one section A of rows×perRow seats and
// the given ticket limit.
func createEvent(tb testing.TB, s *postgres.Store, rows, perRow, limit int) *boxoffice.Event {
	tb.Helper()
	return createEventWithID(tb, s, newID(), t0.Add(30*24*time.Hour), rows, perRow, limit)
}

// createEventShowing is createEvent with an id of a show at the time given,
// as sale.Catalog makes them: its rows go to that month's partition.
func createEventShowing(tb testing.TB, s *postgres.Store, show time.Time, rows, perRow, limit int) *boxoffice.Event {
	tb.Helper()
	return createEventWithID(tb, s, snowflake.OnDay(newID(), show), show, rows, perRow, limit)
}

func createEventWithID(tb testing.TB, s *postgres.Store, id boxoffice.ID, startsAt time.Time, rows, perRow, limit int) *boxoffice.Event {
	tb.Helper()
	e := &boxoffice.Event{
		ID: id, Name: "Flash sale", Venue: "Arena",
		StartsAt: startsAt, SaleOpensAt: t0.Add(-time.Hour),
		SaleMode: boxoffice.SaleDirect, TicketLimit: limit, CreatedAt: t0,
		Sections: []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: rows, SeatsPerRow: perRow}},
	}
	if err := s.CreateEvent(context.Background(), e); err != nil {
		tb.Fatalf("CreateEvent: %v", err)
	}
	return e
}

// booking returns a pending booking of user for seats, held for ten
// minutes from t0 under fence.
func booking(e *boxoffice.Event, user string, fence int64, seats ...string) *boxoffice.Booking {
	return &boxoffice.Booking{
		ID: newID(), EventID: e.ID, UserID: user, SeatIDs: seats, Status: boxoffice.BookingPending,
		Fence: fence, AmountCents: 5000 * int64(len(seats)),
		HeldUntil: t0.Add(10 * time.Minute), CreatedAt: t0, UpdatedAt: t0,
	}
}

// createBooking writes booking(...) with the event's limit and fails the
// test on error.
func createBooking(tb testing.TB, s *postgres.Store, e *boxoffice.Event, user string, fence int64, seats ...string) *boxoffice.Booking {
	tb.Helper()
	b := booking(e, user, fence, seats...)
	if err := s.CreateBooking(context.Background(), boxoffice.NewBooking{Booking: b, TicketLimit: e.TicketLimit}); err != nil {
		tb.Fatalf("CreateBooking: %v", err)
	}
	return b
}

// confirmation confirms b one minute after t0, one new ticket per seat.
func confirmation(b *boxoffice.Booking) boxoffice.ConfirmBooking {
	c := boxoffice.ConfirmBooking{
		BookingID: b.ID, Fence: b.Fence, Now: t0.Add(time.Minute), Code: fmt.Sprintf("C%d", b.ID),
		Payment: boxoffice.Payment{AuthID: fmt.Sprintf("auth-%d", b.ID), AmountCents: b.AmountCents},
	}
	for _, seat := range b.SeatIDs {
		id := newID()
		c.Tickets = append(c.Tickets, boxoffice.Ticket{ID: id, SeatID: seat, Code: fmt.Sprintf("T%d", id)})
	}
	return c
}

// seat returns the id of seat n (from 1) of row A of section A.
func seat(n int) string { return boxoffice.SeatID("A", "A", n) }
