package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// Promises of ResaleStore and of resale purchases pinned here:
//   - CreateListing keeps l.CreatedAt and l.UpdatedAt as given, sets
//     EventID, SeatID and Status (active) on l, and leaves BuyerBookingID
//     zero; a negative price is EINVALID. It does not look at the event's
//     resale policy (ResaleDisabled, ResaleCapPercent): the caller does.
//   - CreateListing checks, in this order: the ticket (ENOTFOUND), the
//     idempotency key (EIDEMINFLIGHT), then checked in or listed
//     (ECONFLICT). A taken listing ID is ECONFLICT.
//   - EventListings is by seat id; UserListings and UserPayouts are newest
//     first by listing ID, largest first, every status.
//   - WithdrawListing sets UpdatedAt = now; a listing withdrawn before is
//     returned as it is (its first UpdatedAt).
//   - CreateBooking of a resale purchase: more than one seat is EINVALID, a
//     listing that is not active or not of the booking's event and seat
//     ECONFLICT, the seller's own EINVALID, a live pending purchase of the
//     same listing ESEATTAKEN naming the seat, the buyer's limit ELIMIT;
//     a booking both a purchase and an offer is EINVALID.
//   - ConfirmBooking of a resale purchase: the listing's UpdatedAt and the
//     payout's CreatedAt are c.Now; the outbox gets booking.confirmed, then
//     ticket.resold (at c.Now).

func (s suite) listings(t *testing.T) {
	s.test(t, "CreateListingListsAValidTicket", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-B-2")
		l := f.newListing(b.Tickets[1], 15000)
		l.CreatedAt = listedAt.Add(123_456_789).In(time.FixedZone("WEST", 3600))
		l.UpdatedAt = l.CreatedAt
		l.Status, l.EventID, l.SeatID = "", 0, "" // the store's to set
		rec := f.idem("alice", "list-1")
		if err := f.store.CreateListing(f.ctx, l, rec); err != nil {
			t.Fatalf("CreateListing: %v", err)
		}
		want := &boxoffice.Listing{
			ID: l.ID, EventID: e.ID, TicketID: b.Tickets[1].ID, SeatID: "A-B-2", SellerID: "alice",
			PriceCents: 15000, Status: boxoffice.ListingActive, CreatedAt: ms(l.CreatedAt), UpdatedAt: ms(l.CreatedAt),
		}
		if diff := cmp.Diff(want, storedListing(l), opts); diff != "" {
			t.Errorf("the listing as CreateListing left it (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.listing(l.ID), opts); diff != "" {
			t.Errorf("Listing mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]boxoffice.Listing{*want}, f.eventListings(e.ID), opts); diff != "" {
			t.Errorf("EventListings mismatch (-want +got):\n%s", diff)
		}
		if got := f.ticket(b.Tickets[1].ID).ListingID; got != l.ID {
			t.Errorf("Ticket.ListingID = %d, want %d", got, l.ID)
		}
		wantBooking := stored(b)
		wantBooking.Tickets[1].ListingID = l.ID
		if diff := cmp.Diff(wantBooking, f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking mismatch (-want +got):\n%s", diff)
		}
		f.wantIdempotency(rec)
		// The seat stays sold: the listing is the ticket's, not the seat's.
		if diff := cmp.Diff([]string{"A-A-1", "A-B-2"}, f.soldSeats(e.ID), sortedStrings); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("CreateListingRefuses", func(t *testing.T) {
		// Each case returns the listing to try; a refused listing writes
		// nothing, its idempotency record included.
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) *boxoffice.Listing
			want    string
		}{
			{"AnUnknownTicketIsNotFound", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				l := f.newListing(f.sell(e, "alice", "A-A-1").Tickets[0], 9000)
				l.TicketID = 424242
				return l
			}, boxoffice.ENOTFOUND},
			{"AnotherUsersTicketIsNotFound", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				l := f.newListing(f.sell(e, "bob", "A-A-1").Tickets[0], 9000)
				l.SellerID = "alice"
				return l
			}, boxoffice.ENOTFOUND},
			{"AResoldTicketIsNotFound", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				tk := f.sell(e, "alice", "A-A-1").Tickets[0]
				f.resell(f.list(tk, 9000), "bob")
				return f.newListing(tk, 9500)
			}, boxoffice.ENOTFOUND},
			{"ACancelledTicketIsNotFound", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				b := f.sell(e, "alice", "A-A-1")
				f.cancel(b)
				return f.newListing(b.Tickets[0], 9000)
			}, boxoffice.ENOTFOUND},
			{"ACheckedInTicketIsConflict", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				tk := f.sell(e, "alice", "A-A-1").Tickets[0]
				f.checkIn(tk, listedAt)
				return f.newListing(tk, 9000)
			}, boxoffice.ECONFLICT},
			{"ATicketListedAlreadyIsConflict", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				tk := f.sell(e, "alice", "A-A-1").Tickets[0]
				f.list(tk, 9000)
				return f.newListing(tk, 8000)
			}, boxoffice.ECONFLICT},
			{"ATakenListingIDIsConflict", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				b := f.sell(e, "alice", "A-A-1", "A-A-2")
				first := f.list(b.Tickets[0], 9000)
				l := f.newListing(b.Tickets[1], 8000)
				l.ID = first.ID
				return l
			}, boxoffice.ECONFLICT},
			{"ANegativePriceIsInvalid", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				return f.newListing(f.sell(e, "alice", "A-A-1").Tickets[0], -1)
			}, boxoffice.EINVALID},
			{"ATakenIdempotencyKeyIsInFlight", func(f *fixture, e *boxoffice.Event) *boxoffice.Listing {
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "list")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				return f.newListing(f.sell(e, "alice", "A-A-1").Tickets[0], 9000)
			}, boxoffice.EIDEMINFLIGHT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				l := tc.arrange(f, e)
				before := f.eventListings(e.ID)
				var first *boxoffice.Listing
				if prior, err := f.store.Listing(f.ctx, l.ID); err == nil {
					first = prior
				}
				rec := f.idem("alice", "list")
				rec.RequestHash = "the listing"
				err := f.store.CreateListing(f.ctx, l, rec)
				wantCode(t, "CreateListing", err, tc.want)
				if diff := cmp.Diff(before, f.eventListings(e.ID), opts); diff != "" {
					t.Errorf("a refused listing changed EventListings (-before +after):\n%s", diff)
				}
				if first != nil {
					if diff := cmp.Diff(first, f.listing(l.ID), opts); diff != "" {
						t.Errorf("a refused listing changed the listing with its ID (-before +after):\n%s", diff)
					}
				} else {
					_, err := f.store.Listing(f.ctx, l.ID)
					wantCode(t, "Listing(refused)", err, boxoffice.ENOTFOUND)
				}
				if tc.want == boxoffice.EIDEMINFLIGHT {
					f.wantIdempotency(f.idem("alice", "list"))
				} else {
					f.wantNoIdempotency("alice", "list")
				}
			})
		}
	})

	s.test(t, "CreateListingAfterAWithdrawalListsTheTicketAgain", func(t *testing.T, f *fixture) {
		tk := f.sell(f.createEvent(), "alice", "A-A-1").Tickets[0]
		first := f.list(tk, 9000)
		if _, err := f.store.WithdrawListing(f.ctx, first.ID, "alice", resoldAt); err != nil {
			t.Fatalf("WithdrawListing: %v", err)
		}
		second := f.list(tk, 8000)
		if got := f.ticket(tk.ID).ListingID; got != second.ID {
			t.Errorf("Ticket.ListingID = %d, want the new listing %d", got, second.ID)
		}
	})

	s.test(t, "ListingUnknownIsNotFound", func(t *testing.T, f *fixture) {
		f.list(f.sell(f.createEvent(), "alice", "A-A-1").Tickets[0], 9000)
		_, err := f.store.Listing(f.ctx, 424242)
		wantCode(t, "Listing(unknown)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "EventListingsListsTheEventsActiveListingsBySeat", func(t *testing.T, f *fixture) {
		e, other := f.createEvent(), f.createEvent()
		b := f.sell(e, "alice", "B-A-1", "A-C-3", "A-A-9", "A-B-1")
		c := f.sell(e, "carol", "A-A-10")
		active := []*boxoffice.Listing{f.list(b.Tickets[0], 5000), f.list(b.Tickets[1], 5000), f.list(c.Tickets[0], 7000)}
		withdrawn := f.list(b.Tickets[2], 5000)
		if _, err := f.store.WithdrawListing(f.ctx, withdrawn.ID, "alice", resoldAt); err != nil {
			t.Fatalf("WithdrawListing: %v", err)
		}
		f.resell(f.list(b.Tickets[3], 5000), "bob") // sold
		f.list(f.sell(other, "alice", "A-A-2").Tickets[0], 5000)
		var want []boxoffice.Listing
		for _, i := range []int{2, 1, 0} { // A-A-10, A-C-3, B-A-1
			want = append(want, *storedListing(active[i]))
		}
		if diff := cmp.Diff(want, f.eventListings(e.ID), opts); diff != "" {
			t.Errorf("EventListings mismatch (-want +got):\n%s", diff)
		}
		if got := f.eventListings(424242); len(got) != 0 {
			t.Errorf("EventListings(unknown event) = %v, want none", got)
		}
	})

	s.test(t, "UserListingsListsTheSellersListingsNewestFirst", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-A-2", "A-A-3")
		first := f.list(b.Tickets[0], 5000)
		second := f.list(b.Tickets[1], 6000)
		f.list(f.sell(e, "bob", "A-A-4").Tickets[0], 5000)
		third := f.list(b.Tickets[2], 7000)
		withdrawn, err := f.store.WithdrawListing(f.ctx, second.ID, "alice", resoldAt)
		if err != nil {
			t.Fatalf("WithdrawListing: %v", err)
		}
		buyer := f.resell(first, "carol")
		sold := storedListing(first)
		sold.Status, sold.BuyerBookingID, sold.UpdatedAt = boxoffice.ListingSold, buyer.ID, ms(resoldAt)
		want := []boxoffice.Listing{*storedListing(third), *withdrawn, *sold}
		got, err := f.store.UserListings(f.ctx, "alice")
		if err != nil {
			t.Fatalf("UserListings: %v", err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("UserListings mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "WithdrawListingTakesItOffTheMarket", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		tk := f.sell(e, "alice", "A-A-1").Tickets[0]
		l := f.list(tk, 9000)
		at := resoldAt.Add(42 * time.Millisecond)
		got, err := f.store.WithdrawListing(f.ctx, l.ID, "alice", at)
		if err != nil {
			t.Fatalf("WithdrawListing: %v", err)
		}
		want := storedListing(l)
		want.Status, want.UpdatedAt = boxoffice.ListingWithdrawn, ms(at)
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("WithdrawListing mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.listing(l.ID), opts); diff != "" {
			t.Errorf("Listing mismatch (-want +got):\n%s", diff)
		}
		if got := f.eventListings(e.ID); len(got) != 0 {
			t.Errorf("EventListings = %v, want none", got)
		}
		if got := f.ticket(tk.ID).ListingID; got != 0 {
			t.Errorf("Ticket.ListingID = %d, want none", got)
		}
		// Withdrawn before: returned as it is.
		again, err := f.store.WithdrawListing(f.ctx, l.ID, "alice", at.Add(time.Hour))
		if err != nil {
			t.Fatalf("WithdrawListing(again): %v", err)
		}
		if diff := cmp.Diff(want, again, opts); diff != "" {
			t.Errorf("WithdrawListing(again) mismatch (-want +got):\n%s", diff)
		}
		// A withdrawn listing cannot be bought.
		err = f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: f.newPurchase(l, "bob"), TicketLimit: 8})
		wantCode(t, "CreateBooking(withdrawn listing)", err, boxoffice.ECONFLICT)
	})

	t.Run("WithdrawListingRefuses", func(t *testing.T) {
		tests := []struct {
			name    string
			arrange func(f *fixture, l *boxoffice.Listing) (seller string, now time.Time)
			want    string
		}{
			{"AnotherSellerIsNotFound", func(f *fixture, l *boxoffice.Listing) (string, time.Time) {
				return "bob", resoldAt
			}, boxoffice.ENOTFOUND},
			{"AnUnknownListingIsNotFound", func(f *fixture, l *boxoffice.Listing) (string, time.Time) {
				l.ID = 424242
				return "alice", resoldAt
			}, boxoffice.ENOTFOUND},
			{"ASoldListingIsConflict", func(f *fixture, l *boxoffice.Listing) (string, time.Time) {
				f.resell(l, "bob")
				return "alice", resoldAt.Add(time.Minute)
			}, boxoffice.ECONFLICT},
			{"AListingVoidedByCheckInIsConflict", func(f *fixture, l *boxoffice.Listing) (string, time.Time) {
				f.checkIn(*f.ticket(l.TicketID), resoldAt)
				return "alice", resoldAt.Add(time.Minute)
			}, boxoffice.ECONFLICT},
			{"ABuyersLiveHoldIsConflict", func(f *fixture, l *boxoffice.Listing) (string, time.Time) {
				b := f.purchase(l, "bob")
				return "alice", b.HeldUntil.Add(-time.Millisecond)
			}, boxoffice.ECONFLICT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				l := f.list(f.sell(f.createEvent(), "alice", "A-A-1").Tickets[0], 9000)
				id := l.ID
				seller, now := tc.arrange(f, l)
				before := f.listing(id)
				_, err := f.store.WithdrawListing(f.ctx, l.ID, seller, now)
				wantCode(t, "WithdrawListing", err, tc.want)
				if diff := cmp.Diff(before, f.listing(id), opts); diff != "" {
					t.Errorf("a refused withdrawal changed the listing (-before +after):\n%s", diff)
				}
			})
		}
	})

	t.Run("WithdrawListingIsNotRefusedBy", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			buyer func(f *fixture, b *boxoffice.Booking) time.Time // returns the withdrawal's now
		}{
			{"ABuyersHoldThatRanOut", func(f *fixture, b *boxoffice.Booking) time.Time { return b.HeldUntil }},
			{"AReleasedPurchase", func(f *fixture, b *boxoffice.Booking) time.Time {
				f.release(b, boxoffice.BookingReleased)
				return purchaseAt.Add(time.Minute)
			}},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				l := f.list(f.sell(f.createEvent(), "alice", "A-A-1").Tickets[0], 9000)
				now := tc.buyer(f, f.purchase(l, "bob"))
				got, err := f.store.WithdrawListing(f.ctx, l.ID, "alice", now)
				if err != nil {
					t.Fatalf("WithdrawListing: %v", err)
				}
				if got.Status != boxoffice.ListingWithdrawn {
					t.Errorf("listing is %s, want withdrawn", got.Status)
				}
			})
		}
	})

	s.test(t, "UserPayoutsListsTheSellersPayoutsNewestFirst", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-A-2", "A-A-3")
		first, second := f.list(b.Tickets[0], 5000), f.list(b.Tickets[1], 6500)
		f.list(b.Tickets[2], 7000) // never sold: no payout
		f.resell(second, "bob")
		f.resell(first, "carol")
		f.resell(f.list(f.sell(e, "dave", "A-A-4").Tickets[0], 1), "erin") // another seller's
		want := []boxoffice.Payout{
			{ListingID: second.ID, SellerID: "alice", AmountCents: 6500, Status: boxoffice.PayoutPending, CreatedAt: ms(resoldAt)},
			{ListingID: first.ID, SellerID: "alice", AmountCents: 5000, Status: boxoffice.PayoutPending, CreatedAt: ms(resoldAt)},
		}
		if diff := cmp.Diff(want, f.payouts("alice"), opts); diff != "" {
			t.Errorf("UserPayouts mismatch (-want +got):\n%s", diff)
		}
		if got := f.payouts("bob"); len(got) != 0 {
			t.Errorf("UserPayouts(bob) = %v, want none", got)
		}
	})
}

func (s suite) resalePurchase(t *testing.T) {
	s.test(t, "CreateBookingOfAListingHoldsTheSoldSeat", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		l := f.list(f.sell(e, "alice", "A-A-1").Tickets[0], 9000)
		f.publishAll()
		b := f.newPurchase(l, "bob")
		rec := f.idem("bob", "buy")
		if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: rec}); err != nil {
			t.Fatalf("CreateBooking: %v", err)
		}
		if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking mismatch (-want +got):\n%s", diff)
		}
		f.wantIdempotency(rec)
		f.wantPending(wantEvent{boxoffice.TopicBookingHeld, b, b.CreatedAt})
		// Nothing changed hands yet.
		if diff := cmp.Diff(storedListing(l), f.listing(l.ID), opts); diff != "" {
			t.Errorf("Listing mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("CreateBookingOfAListingRefuses", func(t *testing.T) {
		// Each case returns the booking to try (bob buys alice's listing
		// unless it says otherwise); a refused purchase writes nothing.
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking
			want    string
		}{
			{"AnUnknownListingIsNotFound", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				b := f.newPurchase(l, "bob")
				b.ListingID = 424242
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ENOTFOUND},
			{"AWithdrawnListingIsConflict", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				if _, err := f.store.WithdrawListing(f.ctx, l.ID, "alice", listedAt); err != nil {
					f.t.Fatalf("WithdrawListing: %v", err)
				}
				return boxoffice.NewBooking{Booking: f.newPurchase(l, "bob"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"ASoldListingIsConflict", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				f.resell(l, "carol")
				b := f.newPurchase(l, "bob")
				b.CreatedAt, b.HeldUntil = resoldAt.Add(time.Minute), resoldAt.Add(time.Minute+hold)
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"AListingVoidedByCheckInIsConflict", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				f.checkIn(*f.ticket(l.TicketID), listedAt)
				return boxoffice.NewBooking{Booking: f.newPurchase(l, "bob"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"AnotherSeatThanTheListingsIsConflict", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				b := f.newPurchase(l, "bob")
				b.SeatIDs = []string{"A-A-2"}
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"AnotherEventThanTheListingsIsConflict", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				b := f.newPurchase(l, "bob")
				b.EventID = f.createEvent().ID
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"TwoSeatsIsInvalid", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				b := f.newPurchase(l, "bob")
				b.SeatIDs = []string{l.SeatID, "A-A-2"}
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.EINVALID},
			{"TheSellersOwnListingIsInvalid", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				return boxoffice.NewBooking{Booking: f.newPurchase(l, "alice"), TicketLimit: 8}
			}, boxoffice.EINVALID},
			{"AlsoAnOfferOfAnEntryNotWaitingIsConflict", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				w := f.join(e, "bob")
				if _, err := f.store.LeaveWaitlist(f.ctx, w.ID, t0.Add(time.Second)); err != nil {
					f.t.Fatalf("LeaveWaitlist: %v", err)
				}
				b := f.newPurchase(l, "bob")
				b.WaitlistEntryID = w.ID
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"ALivePurchaseOfAnotherBuyerIsSeatTaken", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				first := f.purchase(l, "carol")
				b := f.newPurchase(l, "bob")
				b.CreatedAt = first.HeldUntil.Add(-time.Millisecond)
				b.HeldUntil = b.CreatedAt.Add(hold)
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ESEATTAKEN},
			{"ALivePurchaseOfTheSameBuyerIsSeatTaken", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				f.purchase(l, "bob")
				return boxoffice.NewBooking{Booking: f.newPurchase(l, "bob"), TicketLimit: 8}
			}, boxoffice.ESEATTAKEN},
			{"OverTheBuyersLimitIsLimit", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				f.sell(e, "bob", "B-A-1")
				f.book(e, "bob", "B-A-2")
				return boxoffice.NewBooking{Booking: f.newPurchase(l, "bob"), TicketLimit: 2}
			}, boxoffice.ELIMIT},
			{"ATakenIdempotencyKeyIsInFlight", func(f *fixture, e *boxoffice.Event, l *boxoffice.Listing) boxoffice.NewBooking {
				if err := f.store.PutIdempotency(f.ctx, f.idem("bob", "buy")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				return boxoffice.NewBooking{Booking: f.newPurchase(l, "bob"), TicketLimit: 8}
			}, boxoffice.EIDEMINFLIGHT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				l := f.list(f.sell(e, "alice", "A-A-1").Tickets[0], 9000)
				nb := tc.arrange(f, e, l)
				user := nb.Booking.UserID
				nb.Idempotency = f.idem(user, "buy")
				nb.Idempotency.RequestHash = "the purchase"
				f.publishAll()
				listing := f.listing(l.ID)
				err := f.store.CreateBooking(f.ctx, nb)
				wantCode(t, "CreateBooking", err, tc.want)
				if tc.want == boxoffice.ESEATTAKEN {
					if diff := cmp.Diff([]string{l.SeatID}, boxoffice.ErrorSeats(err)); diff != "" {
						t.Errorf("ErrorSeats mismatch (-want +got):\n%s", diff)
					}
				}
				f.wantNoBooking(nb.Booking.ID)
				if tc.want == boxoffice.EIDEMINFLIGHT {
					f.wantIdempotency(f.idem(user, "buy"))
				} else {
					f.wantNoIdempotency(user, "buy")
				}
				f.wantPending()
				if diff := cmp.Diff(listing, f.listing(l.ID), opts); diff != "" {
					t.Errorf("a refused purchase changed the listing (-before +after):\n%s", diff)
				}
			})
		}
	})

	t.Run("CreateBookingOfAListingIsNotRefusedBy", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			prior func(f *fixture, l *boxoffice.Listing) time.Time // returns the new purchase's CreatedAt
		}{
			{"APurchaseWhoseHoldRanOut", func(f *fixture, l *boxoffice.Listing) time.Time {
				return f.purchase(l, "carol").HeldUntil
			}},
			{"AReleasedPurchase", func(f *fixture, l *boxoffice.Listing) time.Time {
				f.release(f.purchase(l, "carol"), boxoffice.BookingReleased)
				return purchaseAt.Add(time.Minute)
			}},
			{"AnExpiredPurchase", func(f *fixture, l *boxoffice.Listing) time.Time {
				f.release(f.purchase(l, "carol"), boxoffice.BookingExpired)
				return purchaseAt.Add(time.Minute)
			}},
			{"APrimaryHoldOnAnotherSeat", func(f *fixture, l *boxoffice.Listing) time.Time {
				f.book(f.event(l.EventID), "carol", "A-A-2")
				return purchaseAt
			}},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				l := f.list(f.sell(e, "alice", "A-A-1").Tickets[0], 9000)
				at := tc.prior(f, l)
				b := f.newPurchase(l, "bob")
				b.CreatedAt, b.UpdatedAt, b.HeldUntil = at, at, at.Add(hold)
				f.createBooking(b)
			})
		}
	})

	s.test(t, "ConcurrentPurchasesOfOneListingHoldItOnce", func(t *testing.T, f *fixture) {
		// The lock layer let every buyer through: the database alone
		// gives the listing one live buyer.
		l := f.list(f.sell(f.createEvent(), "alice", "A-A-1").Tickets[0], 9000)
		bookings := make([]*boxoffice.Booking, racers)
		for i := range bookings {
			bookings[i] = f.newPurchase(l, fmt.Sprint("buyer-", i))
		}
		errs := make([]error, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, b := range bookings {
			wg.Go(func() {
				<-start
				errs[i] = f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8})
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch boxoffice.ErrorCode(err) {
			case "":
				won++
			case boxoffice.ESEATTAKEN:
				f.wantNoBooking(bookings[i].ID)
			default:
				t.Errorf("purchase %d: %v, want success or %s", i, err, boxoffice.ESEATTAKEN)
			}
		}
		if won != 1 {
			t.Errorf("%d purchases of one listing hold it, want exactly 1", won)
		}
	})
}

// event reads an event that must exist.
func (f *fixture) event(id boxoffice.ID) *boxoffice.Event {
	f.t.Helper()
	e, err := f.store.Event(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Event(%d): %v", id, err)
	}
	return e
}

// A listing whose buyer did not pay goes to the waitlist first: the offer
// is a resale purchase and a waitlist offer at once, and its confirm both
// moves the ticket and fulfils the entry.
func (s suite) resaleOfferedToTheWaitlist(t *testing.T) {
	s.test(t, "AListingOfferedToTheWaitlistIsBoughtByTheEntry", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		old := f.sell(e, "alice", "A-A-1").Tickets[0]
		l := f.list(old, 12000)
		w := f.newEntry(e, "bob", 1)
		if err := f.store.JoinWaitlist(f.ctx, w, nil); err != nil {
			t.Fatalf("JoinWaitlist: %v", err)
		}
		b := f.newPurchase(l, "bob")
		b.WaitlistEntryID = w.ID
		if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8}); err != nil {
			t.Fatalf("CreateBooking(purchase and offer): %v", err)
		}
		entry, err := f.store.WaitlistEntry(f.ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		if entry.Status != boxoffice.WaitlistOffered || entry.BookingID != b.ID {
			t.Fatalf("entry after the offer: %s, booking %d; want offered, booking %d", entry.Status, entry.BookingID, b.ID)
		}
		got, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, resoldAt, "resale-offer"))
		if err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		if got.Status != boxoffice.BookingConfirmed || len(got.Tickets) != 1 || got.Tickets[0].UserID != "bob" {
			t.Fatalf("the offer confirmed: %s with %d tickets, want confirmed with bob's one", got.Status, len(got.Tickets))
		}
		if entry, err = f.store.WaitlistEntry(f.ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		if entry.Status != boxoffice.WaitlistFulfilled {
			t.Errorf("entry after the confirm: %s, want fulfilled", entry.Status)
		}
		if got := f.listing(l.ID); got.Status != boxoffice.ListingSold {
			t.Errorf("listing after the confirm: %s, want sold", got.Status)
		}
		if got := f.ticket(old.ID); got.Status != boxoffice.TicketVoid || got.VoidReason != boxoffice.VoidResold {
			t.Errorf("the seller's ticket: %s (%s), want void (resold)", got.Status, got.VoidReason)
		}
	})
}

func (s suite) resaleConfirm(t *testing.T) {
	s.test(t, "ConfirmResalePurchaseMovesTheTicketToTheBuyer", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		sale := f.sell(e, "alice", "A-A-1", "A-A-2")
		old := sale.Tickets[0]
		l := f.list(old, 15000)
		b := f.purchase(l, "bob")
		f.publishAll()
		now := resoldAt.Add(789 * time.Microsecond)
		c := f.confirmation(b, now, "resale")
		c.Idempotency = f.idem("bob", "pay")
		got, err := f.store.ConfirmBooking(f.ctx, c)
		if err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}

		// The buyer's booking: confirmed with one new ticket.
		want := stored(b)
		want.Status, want.UpdatedAt = boxoffice.BookingConfirmed, ms(now)
		want.ConfirmationCode, want.PaymentAuthID = c.Code, c.Payment.AuthID
		want.Tickets = stored(&boxoffice.Booking{Tickets: c.Tickets}).Tickets
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ConfirmBooking mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking(buyer) mismatch (-want +got):\n%s", diff)
		}
		bought := want.Tickets[0]
		if bought.ID == old.ID || bought.Code == old.Code {
			t.Fatalf("fixture: the buyer's ticket must have a new id and code")
		}
		// The seller's ticket is void, resold; their booking keeps it.
		voided := old
		voided.Status, voided.VoidReason = boxoffice.TicketVoid, boxoffice.VoidResold
		if diff := cmp.Diff(&voided, f.ticket(old.ID), opts); diff != "" {
			t.Errorf("Ticket(seller's) mismatch (-want +got):\n%s", diff)
		}
		wantSale := stored(sale)
		wantSale.Tickets[0] = voided
		if diff := cmp.Diff(wantSale, f.booking(sale.ID), opts); diff != "" {
			t.Errorf("Booking(seller's) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]boxoffice.Ticket{sale.Tickets[1]}, f.userTickets("alice"), opts); diff != "" {
			t.Errorf("UserTickets(alice) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]boxoffice.Ticket{bought}, f.userTickets("bob"), opts); diff != "" {
			t.Errorf("UserTickets(bob) mismatch (-want +got):\n%s", diff)
		}
		// The seat is still sold, once.
		if diff := cmp.Diff([]string{"A-A-1", "A-A-2"}, f.soldSeats(e.ID), sortedStrings); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
		// The listing is sold to the booking, the seller is owed its price.
		wantListing := storedListing(l)
		wantListing.Status, wantListing.BuyerBookingID, wantListing.UpdatedAt = boxoffice.ListingSold, b.ID, ms(now)
		if diff := cmp.Diff(wantListing, f.listing(l.ID), opts); diff != "" {
			t.Errorf("Listing mismatch (-want +got):\n%s", diff)
		}
		if got := f.eventListings(e.ID); len(got) != 0 {
			t.Errorf("EventListings = %v, want none", got)
		}
		wantPayouts := []boxoffice.Payout{{ListingID: l.ID, SellerID: "alice", AmountCents: 15000, Status: boxoffice.PayoutPending, CreatedAt: ms(now)}}
		if diff := cmp.Diff(wantPayouts, f.payouts("alice"), opts); diff != "" {
			t.Errorf("UserPayouts mismatch (-want +got):\n%s", diff)
		}
		wantPayment := &boxoffice.Payment{EventID: b.EventID, BookingID: b.ID, AuthID: c.Payment.AuthID, AmountCents: 15000, Status: boxoffice.PaymentAuthorized, CreatedAt: ms(now)}
		if diff := cmp.Diff(wantPayment, f.payment(b.ID), opts); diff != "" {
			t.Errorf("Payment mismatch (-want +got):\n%s", diff)
		}
		f.wantIdempotency(c.Idempotency)

		// The outbox: the booking's confirmation, then the resale.
		evs := f.pending()
		if len(evs) != 2 {
			t.Fatalf("%d pending events %v, want booking.confirmed and ticket.resold", len(evs), eventIDs(evs))
		}
		f.checkEvent(evs[0], wantEvent{boxoffice.TopicBookingConfirmed, want, now})
		if evs[1].Seq <= evs[0].Seq {
			t.Errorf("ticket.resold has seq %d, not after booking.confirmed's %d", evs[1].Seq, evs[0].Seq)
		}
		f.checkResold(evs[1], boxoffice.Resale{
			ListingID: l.ID, EventID: e.ID, SeatID: "A-A-1", PriceCents: 15000, SellerID: "alice", BuyerID: "bob",
			BookingID: b.ID, OldTicketID: old.ID, NewTicketID: bought.ID,
		}, now)

		// A retry returns the booking and writes nothing more.
		f.publishAll()
		again, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, now.Add(time.Second), "retry"))
		if err != nil {
			t.Fatalf("ConfirmBooking(again): %v", err)
		}
		if diff := cmp.Diff(want, again, opts); diff != "" {
			t.Errorf("ConfirmBooking(again) mismatch (-want +got):\n%s", diff)
		}
		f.wantPending()
		if got := f.payouts("alice"); len(got) != 1 {
			t.Errorf("%d payouts after a retry, want 1", len(got))
		}
	})

	s.test(t, "ConfirmResalePurchaseOfAResoldTicketSellsItOnAgain", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		first := f.sell(e, "alice", "A-A-1").Tickets[0]
		second := f.resell(f.list(first, 9000), "bob").Tickets[0]
		l := f.list(second, 12000)
		b := f.purchase(l, "carol")
		third, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, resoldAt.Add(time.Minute), "again"))
		if err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		for _, tc := range []struct {
			id     boxoffice.ID
			status boxoffice.TicketStatus
			user   string
		}{{first.ID, boxoffice.TicketVoid, "alice"}, {second.ID, boxoffice.TicketVoid, "bob"}, {third.Tickets[0].ID, boxoffice.TicketValid, "carol"}} {
			if got := f.ticket(tc.id); got.Status != tc.status || got.UserID != tc.user {
				t.Errorf("ticket %d is %s of %s, want %s of %s", tc.id, got.Status, got.UserID, tc.status, tc.user)
			}
		}
		if got := f.payouts("bob"); len(got) != 1 || got[0].AmountCents != 12000 {
			t.Errorf("UserPayouts(bob) = %+v, want one of 12000", got)
		}
		if diff := cmp.Diff([]string{"A-A-1"}, f.soldSeats(e.ID)); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("ConfirmResalePurchaseFailsAndWritesNothing", func(t *testing.T) {
		tests := []struct {
			name    string
			arrange func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking
			want    string
		}{
			{"WhenTheTicketWasCheckedInIsConflict", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				f.checkIn(*f.ticket(l.TicketID), resoldAt)
				return f.confirmation(b, resoldAt, "ok")
			}, boxoffice.ECONFLICT},
			{"WhenTheListingWasWithdrawnIsConflict", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				// The seller withdrew once the buyer's hold ran out; the
				// buyer's confirm read its clock before that.
				if _, err := f.store.WithdrawListing(f.ctx, l.ID, "alice", b.HeldUntil); err != nil {
					f.t.Fatalf("WithdrawListing: %v", err)
				}
				return f.confirmation(b, resoldAt, "ok")
			}, boxoffice.ECONFLICT},
			{"WhenTheListingWasSoldToAnotherBuyerIsConflict", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				other := f.newPurchase(l, "carol")
				other.Fence = b.Fence // the lock layer's fences were lost
				other.CreatedAt, other.UpdatedAt = b.HeldUntil, b.HeldUntil
				other.HeldUntil = b.HeldUntil.Add(hold)
				f.createBooking(other)
				if _, err := f.store.ConfirmBooking(f.ctx, f.confirmation(other, b.HeldUntil.Add(time.Minute), "carol")); err != nil {
					f.t.Fatalf("ConfirmBooking(carol): %v", err)
				}
				return f.confirmation(b, resoldAt, "ok")
			}, boxoffice.ECONFLICT},
			{"AfterTheHoldRanOutIsHoldLost", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				return f.confirmation(b, b.HeldUntil, "late")
			}, boxoffice.EHOLDLOST},
			{"WhenANewerPurchaseHoldsTheListingIsHoldLost", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				other := f.newPurchase(l, "carol")
				other.CreatedAt, other.UpdatedAt = b.HeldUntil, b.HeldUntil
				other.HeldUntil = b.HeldUntil.Add(hold)
				f.createBooking(other)
				return f.confirmation(b, resoldAt, "ok")
			}, boxoffice.EHOLDLOST},
			{"WithTwoTicketsIsInvalid", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				c := f.confirmation(b, resoldAt, "ok")
				extra := c.Tickets[0]
				extra.ID, extra.Code, extra.SeatID = f.idFor(b.EventID), "extra", "A-A-2"
				c.Tickets = append(c.Tickets, extra)
				return c
			}, boxoffice.EINVALID},
			{"WithATakenIdempotencyKeyIsInFlight", func(f *fixture, l *boxoffice.Listing, b *boxoffice.Booking) boxoffice.ConfirmBooking {
				if err := f.store.PutIdempotency(f.ctx, f.idem("bob", "pay")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				c := f.confirmation(b, resoldAt, "ok")
				c.Idempotency = f.idem("bob", "pay")
				c.Idempotency.RequestHash = "the payment"
				return c
			}, boxoffice.EIDEMINFLIGHT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				sale := f.sell(e, "alice", "A-A-1")
				l := f.list(sale.Tickets[0], 9000)
				b := f.purchase(l, "bob")
				c := tc.arrange(f, l, b)
				f.publishAll()
				before := f.resaleState(e.ID, b.ID, sale.ID, l.ID)
				_, err := f.store.ConfirmBooking(f.ctx, c)
				wantCode(t, "ConfirmBooking", err, tc.want)
				if diff := cmp.Diff(before, f.resaleState(e.ID, b.ID, sale.ID, l.ID), opts, sortedStrings); diff != "" {
					t.Errorf("a failed resale confirm wrote something (-before +after):\n%s", diff)
				}
				f.wantPending()
				if tc.want != boxoffice.EIDEMINFLIGHT {
					f.wantNoIdempotency("bob", "pay")
				}
			})
		}
	})

	s.test(t, "ConcurrentConfirmsOfSuccessivePurchasesOfOneListingSellItOnce", func(t *testing.T, f *fixture) {
		// Each buyer held the listing after the one before ran out of
		// time, and every confirm runs at once, each at a time inside its
		// own hold; the lock layer lost its fences, so they are all equal
		// and only the database stands between the listing and a second
		// sale.
		e := f.createEvent()
		sale := f.sell(e, "alice", "A-A-1")
		l := f.list(sale.Tickets[0], 9000)
		fence := f.nextFence()
		bookings := make([]*boxoffice.Booking, racers)
		for i := range bookings {
			b := f.newPurchase(l, fmt.Sprint("buyer-", i))
			b.CreatedAt = purchaseAt.Add(time.Duration(i) * hold)
			b.UpdatedAt, b.HeldUntil, b.Fence = b.CreatedAt, b.CreatedAt.Add(hold), fence
			f.createBooking(b)
			bookings[i] = b
		}
		results := f.confirmAll(bookings, func(i int) boxoffice.ConfirmBooking {
			return f.confirmation(bookings[i], bookings[i].CreatedAt.Add(time.Minute), "race")
		})
		var winner *boxoffice.Booking
		for i, r := range results {
			switch boxoffice.ErrorCode(r.err) {
			case "":
				if winner != nil {
					t.Errorf("purchases %d and %d were both confirmed", winner.ID, bookings[i].ID)
				}
				winner = r.booking
			case boxoffice.ECONFLICT:
				if b := f.booking(bookings[i].ID); b.Status != boxoffice.BookingPending || len(b.Tickets) != 0 {
					t.Errorf("loser %d is %s with %d tickets, want pending with none", i, b.Status, len(b.Tickets))
				}
			default:
				t.Errorf("confirm %d: %v, want success or %s", i, r.err, boxoffice.ECONFLICT)
			}
		}
		if winner == nil {
			t.Fatal("no purchase was confirmed")
		}
		if got := f.listing(l.ID); got.Status != boxoffice.ListingSold || got.BuyerBookingID != winner.ID {
			t.Errorf("listing is %s to %d, want sold to %d", got.Status, got.BuyerBookingID, winner.ID)
		}
		var valid []boxoffice.Ticket
		for _, b := range append([]*boxoffice.Booking{sale}, bookings...) {
			for _, tk := range f.booking(b.ID).Tickets {
				if tk.Status == boxoffice.TicketValid {
					valid = append(valid, tk)
				}
			}
		}
		if len(valid) != 1 || valid[0].UserID != winner.UserID {
			t.Errorf("valid tickets %s, want exactly the winner's", ticketIDs(valid))
		}
		if got := f.payouts("alice"); len(got) != 1 {
			t.Errorf("%d payouts, want 1", len(got))
		}
	})
}

// resaleState is what a resale confirm can write, read back through the
// port.
type resaleState struct {
	Buyer, Seller *boxoffice.Booking
	Listing       *boxoffice.Listing
	Payouts       []boxoffice.Payout
	Sold          []string
	Payments      []boxoffice.Payment
}

func (f *fixture) resaleState(eventID, buyer, seller, listing boxoffice.ID) resaleState {
	f.t.Helper()
	l := f.listing(listing)
	return resaleState{
		Buyer: f.booking(buyer), Seller: f.booking(seller), Listing: l,
		Payouts: f.payouts(l.SellerID), Sold: f.soldSeats(eventID), Payments: f.payments(),
	}
}

// checkResold compares a ticket.resold event with the resale expected of
// it at at.
func (f *fixture) checkResold(ev boxoffice.OutboxEvent, want boxoffice.Resale, at time.Time) {
	f.t.Helper()
	id := boxoffice.TopicTicketResold + ":" + want.ListingID.String()
	key := want.EventID.String() + ":" + want.SeatID
	if ev.ID != id || ev.Topic != boxoffice.TopicTicketResold || ev.Key != key || !ev.CreatedAt.Equal(ms(at)) || ev.CreatedAt.Location() != time.UTC {
		f.t.Errorf("event = {ID %q, Topic %q, Key %q, CreatedAt %v}, want {%q, %q, %q, %v UTC}",
			ev.ID, ev.Topic, ev.Key, ev.CreatedAt, id, boxoffice.TopicTicketResold, key, ms(at))
	}
	var got boxoffice.TicketResoldEvent
	if err := json.Unmarshal(ev.Payload, &got); err != nil {
		f.t.Fatalf("event %s: payload %s: %v", ev.ID, ev.Payload, err)
	}
	wantPayload := boxoffice.TicketResoldEvent{ID: id, Type: boxoffice.TopicTicketResold, OccurredAt: ms(at), Resale: want}
	if diff := cmp.Diff(wantPayload, got, opts); diff != "" {
		f.t.Errorf("event %s payload mismatch (-want +got):\n%s", ev.ID, diff)
	}
}
