package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// Promises of TicketStore pinned here:
//   - UserTickets is newest first by ticket ID, largest first (ids are
//     time-ordered), across events;
//   - CheckIn of a void ticket is ETICKETVOID and returns no ticket; of a
//     ticket checked in before, ECHECKEDIN with the ticket as it is, and
//     the error's message holds the first CheckedInAt in RFC 3339, UTC,
//     millisecond precision (time.RFC3339Nano);
//   - CheckIn voids the ticket's active listing with UpdatedAt = now.

func (s suite) tickets(t *testing.T) {
	s.test(t, "TicketReturnsTheTicketWithItsActiveListing", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-A-2")
		if diff := cmp.Diff(&b.Tickets[0], f.ticket(b.Tickets[0].ID), opts); diff != "" {
			t.Errorf("Ticket mismatch (-want +got):\n%s", diff)
		}
		l := f.list(b.Tickets[1], 9000)
		want := b.Tickets[1]
		want.ListingID = l.ID
		if diff := cmp.Diff(&want, f.ticket(want.ID), opts); diff != "" {
			t.Errorf("Ticket of a listed ticket mismatch (-want +got):\n%s", diff)
		}
		// Only an active listing is the ticket's.
		if _, err := f.store.WithdrawListing(f.ctx, l.ID, "alice", resoldAt); err != nil {
			t.Fatalf("WithdrawListing: %v", err)
		}
		if diff := cmp.Diff(&b.Tickets[1], f.ticket(want.ID), opts); diff != "" {
			t.Errorf("Ticket after the withdrawal mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "TicketUnknownIsNotFound", func(t *testing.T, f *fixture) {
		f.sell(f.createEvent(), "alice", "A-A-1")
		_, err := f.store.Ticket(f.ctx, 424242)
		wantCode(t, "Ticket(unknown)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "TicketVoidKeepsWhyItIsVoid", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		resold := f.sell(e, "alice", "A-A-1").Tickets[0]
		f.resell(f.list(resold, 9000), "bob")
		cancelled := f.cancel(f.sell(e, "carol", "A-A-2")).Tickets[0]
		for _, tc := range []struct {
			ticket boxoffice.Ticket
			reason string
		}{{resold, boxoffice.VoidResold}, {cancelled, boxoffice.VoidCancelled}} {
			want := tc.ticket
			want.Status, want.VoidReason, want.ListingID = boxoffice.TicketVoid, tc.reason, 0
			if diff := cmp.Diff(&want, f.ticket(want.ID), opts); diff != "" {
				t.Errorf("Ticket(%s) mismatch (-want +got):\n%s", tc.reason, diff)
			}
		}
	})

	s.test(t, "UserTicketsListsTheUsersValidTicketsNewestFirst", func(t *testing.T, f *fixture) {
		e, other := f.createEvent(), f.createEvent()
		first := f.sell(e, "alice", "A-A-1", "A-A-2")
		f.sell(e, "bob", "A-A-3")
		f.cancel(f.sell(e, "alice", "A-A-4"))           // void: not listed
		f.resell(f.list(first.Tickets[0], 9000), "bob") // resold: not alice's any more
		second := f.sell(other, "alice", "B-A-1")
		l := f.list(second.Tickets[0], 5000)
		listed := second.Tickets[0]
		listed.ListingID = l.ID
		want := []boxoffice.Ticket{listed, first.Tickets[1]}
		if diff := cmp.Diff(want, f.userTickets("alice"), opts); diff != "" {
			t.Errorf("UserTickets(alice) mismatch (-want +got):\n%s", diff)
		}
		if got := f.userTickets("nobody"); len(got) != 0 {
			t.Errorf("UserTickets(nobody) = %v, want none", got)
		}
	})
}

func (s suite) checkIn(t *testing.T) {
	s.test(t, "CheckInAdmitsATicketOnce", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-A-2")
		doors := e.StartsAt.Add(-time.Hour + 123_456_789)
		got, err := f.store.CheckIn(f.ctx, 0, b.Tickets[0].Code, doors)
		if err != nil {
			t.Fatalf("CheckIn: %v", err)
		}
		want := b.Tickets[0]
		want.CheckedInAt = ms(doors)
		if diff := cmp.Diff(&want, got, opts); diff != "" {
			t.Errorf("CheckIn mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(&want, f.ticket(want.ID), opts); diff != "" {
			t.Errorf("Ticket after CheckIn mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]boxoffice.Ticket{want, b.Tickets[1]}, f.booking(b.ID).Tickets, opts); diff != "" {
			t.Errorf("Booking tickets after CheckIn mismatch (-want +got):\n%s", diff)
		}

		// The second scan is told when the first one was.
		again, err := f.store.CheckIn(f.ctx, 0, b.Tickets[0].Code, doors.Add(time.Minute))
		wantCode(t, "CheckIn(again)", err, boxoffice.ECHECKEDIN)
		if diff := cmp.Diff(&want, again, opts); diff != "" {
			t.Errorf("CheckIn(again) ticket mismatch (-want +got):\n%s", diff)
		}
		if msg, at := boxoffice.ErrorMessage(err), ms(doors).Format(time.RFC3339Nano); !strings.Contains(msg, at) {
			t.Errorf("CheckIn(again) message %q does not name the first check-in %s", msg, at)
		}
		if diff := cmp.Diff(&want, f.ticket(want.ID), opts); diff != "" {
			t.Errorf("Ticket after the second CheckIn mismatch (-want +got):\n%s", diff)
		}
		// The other ticket of the booking is still to be admitted.
		f.checkIn(b.Tickets[1], doors.Add(time.Second))
	})

	s.test(t, "CheckInAtAnotherEventsDoorsAdmitsNothing", func(t *testing.T, f *fixture) {
		e, other := f.createEvent(), f.createEvent()
		b := f.sell(e, "alice", "A-A-1")
		_, err := f.store.CheckIn(f.ctx, other.ID, b.Tickets[0].Code, t0)
		wantCode(t, "CheckIn(another event)", err, boxoffice.ECONFLICT)
		if got := f.ticket(b.Tickets[0].ID); !got.CheckedInAt.IsZero() {
			t.Errorf("a scan at another event's doors used the ticket up: checked in at %s", got.CheckedInAt)
		}
		if _, err := f.store.CheckIn(f.ctx, e.ID, b.Tickets[0].Code, t0); err != nil {
			t.Errorf("CheckIn at its own event's doors: %v", err)
		}
	})

	s.test(t, "CheckInOfAnUnknownCodeIsNotFound", func(t *testing.T, f *fixture) {
		f.sell(f.createEvent(), "alice", "A-A-1")
		_, err := f.store.CheckIn(f.ctx, 0, "no-such-code", t0)
		wantCode(t, "CheckIn(unknown)", err, boxoffice.ENOTFOUND)
	})

	t.Run("CheckInOfAVoidTicketIsTicketVoid", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			void func(f *fixture, b *boxoffice.Booking)
		}{
			{"Resold", func(f *fixture, b *boxoffice.Booking) { f.resell(f.list(b.Tickets[0], 9000), "bob") }},
			{"Cancelled", func(f *fixture, b *boxoffice.Booking) { f.cancel(b) }},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				b := f.sell(f.createEvent(), "alice", "A-A-1")
				tc.void(f, b)
				before := f.ticket(b.Tickets[0].ID)
				_, err := f.store.CheckIn(f.ctx, 0, b.Tickets[0].Code, resoldAt.Add(time.Hour))
				wantCode(t, "CheckIn(void)", err, boxoffice.ETICKETVOID)
				if diff := cmp.Diff(before, f.ticket(b.Tickets[0].ID), opts); diff != "" {
					t.Errorf("a refused check-in changed the ticket (-before +after):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "CheckInOfAResoldTicketAdmitsTheBuyersNewCode", func(t *testing.T, f *fixture) {
		b := f.sell(f.createEvent(), "alice", "A-A-1")
		bought := f.resell(f.list(b.Tickets[0], 9000), "bob")
		got := f.checkIn(bought.Tickets[0], resoldAt.Add(time.Hour))
		if got.UserID != "bob" || got.ID != bought.Tickets[0].ID {
			t.Errorf("CheckIn admitted ticket %d of %s, want %d of bob", got.ID, got.UserID, bought.Tickets[0].ID)
		}
	})

	s.test(t, "CheckInVoidsTheTicketsActiveListing", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-A-2")
		l := f.list(b.Tickets[0], 9000)
		other := f.list(b.Tickets[1], 9000)
		buyer := f.purchase(l, "bob") // a buyer's hold does not keep the ticket out
		doors := resoldAt.Add(time.Minute)
		got := f.checkIn(b.Tickets[0], doors)
		if got.ListingID != 0 {
			t.Errorf("CheckIn returned ListingID %d, want none: the listing is void", got.ListingID)
		}
		want := storedListing(l)
		want.Status, want.UpdatedAt = boxoffice.ListingVoid, ms(doors)
		if diff := cmp.Diff(want, f.listing(l.ID), opts); diff != "" {
			t.Errorf("Listing after CheckIn mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]boxoffice.Listing{*storedListing(other)}, f.eventListings(e.ID), opts); diff != "" {
			t.Errorf("EventListings after CheckIn mismatch (-want +got):\n%s", diff)
		}
		// The buyer cannot complete the purchase of a used ticket.
		_, err := f.store.ConfirmBooking(f.ctx, f.confirmation(buyer, doors, "late"))
		wantCode(t, "ConfirmBooking(purchase of a checked-in ticket)", err, boxoffice.ECONFLICT)
		if got := f.ticket(b.Tickets[0].ID); got.Status != boxoffice.TicketValid || got.UserID != "alice" {
			t.Errorf("ticket is %s of %s, want still valid and alice's", got.Status, got.UserID)
		}
	})

	s.test(t, "ConcurrentCheckInsOfOneCodeAdmitItOnce", func(t *testing.T, f *fixture) {
		// One ticket scanned at every gate at once: one scan admits it,
		// every other is told it was admitted, and when.
		b := f.sell(f.createEvent(), "alice", "A-A-1")
		code := b.Tickets[0].Code
		type result struct {
			ticket *boxoffice.Ticket
			err    error
		}
		results := make([]result, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				tk, err := f.store.CheckIn(f.ctx, 0, code, t0.Add(time.Hour+time.Duration(i)*time.Millisecond))
				results[i] = result{tk, err}
			})
		}
		close(start)
		wg.Wait()

		stored := f.ticket(b.Tickets[0].ID)
		if stored.CheckedInAt.IsZero() {
			t.Fatalf("the ticket is not checked in")
		}
		admitted := 0
		for i, r := range results {
			switch boxoffice.ErrorCode(r.err) {
			case "":
				admitted++
				if !r.ticket.CheckedInAt.Equal(t0.Add(time.Hour + time.Duration(i)*time.Millisecond)) {
					t.Errorf("scan %d admitted at %v, want its own time", i, r.ticket.CheckedInAt)
				}
			case boxoffice.ECHECKEDIN:
			default:
				t.Errorf("scan %d: %v, want success or %s", i, r.err, boxoffice.ECHECKEDIN)
				continue
			}
			if diff := cmp.Diff(stored, r.ticket, opts); diff != "" {
				t.Errorf("scan %d returned (-stored +returned):\n%s", i, diff)
			}
		}
		if admitted != 1 {
			t.Errorf("%d scans admitted the ticket, want exactly 1", admitted)
		}
	})
}

// ticketIDs lists the ids of tickets, for messages.
func ticketIDs(ts []boxoffice.Ticket) string {
	ids := make([]string, len(ts))
	for i, tk := range ts {
		ids[i] = fmt.Sprint(tk.ID)
	}
	return strings.Join(ids, ",")
}
