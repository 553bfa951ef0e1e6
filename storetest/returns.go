package storetest

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// Promises of the seat returns pinned here:
//   - a return's CreatedAt is the time of the change that wrote it
//     (ReleaseBooking's now, ExpireBookings' cutoff, CancelBooking's
//     c.Now), its SeatIDs the booking's, in the booking's order;
//   - ExpireBookings writes its returns in the sweep's order (oldest hold
//     first, then booking ID);
//   - PendingReturns is by ID, which rises with every return written.

func (s suite) seatReturns(t *testing.T) {
	t.Run("ReleaseBookingWritesASeatReturn", func(t *testing.T) {
		for _, to := range []boxoffice.BookingStatus{boxoffice.BookingReleased, boxoffice.BookingExpired} {
			s.test(t, string(to), func(t *testing.T, f *fixture) {
				e := f.createEvent()
				b := f.book(e, "alice", "A-B-3", "A-A-1")
				now := t0.Add(2*time.Minute + 555_555)
				if _, err := f.store.ReleaseBooking(f.ctx, b.ID, to, now); err != nil {
					t.Fatalf("ReleaseBooking: %v", err)
				}
				f.wantReturns(returnOf(b, now))
			})
		}
	})

	s.test(t, "ExpireBookingsWritesASeatReturnForEachInTheSweepsOrder", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		late := f.book(e, "alice", "A-A-2", "A-A-1")
		early := f.newBooking(e, "bob", "A-A-3")
		early.HeldUntil = t0.Add(time.Minute)
		f.createBooking(early)
		twin := f.book(e, "carol", "A-A-4") // the same hold as late's, a larger id
		live := f.newBooking(e, "dave", "A-A-5")
		live.HeldUntil = t0.Add(2 * hold)
		f.createBooking(live)
		cutoff := t0.Add(hold)
		if _, err := f.store.ExpireBookings(f.ctx, cutoff, 10); err != nil {
			t.Fatalf("ExpireBookings: %v", err)
		}
		f.wantReturnsOf(cutoff, early, late, twin)
	})

	t.Run("AResalePurchaseThatFellThroughReturnsItsListing", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			topic string
			end   func(f *fixture, b *boxoffice.Booking) time.Time
		}{
			{"Released", boxoffice.TopicBookingReleased, func(f *fixture, b *boxoffice.Booking) time.Time {
				f.release(b, boxoffice.BookingReleased)
				return t0.Add(time.Minute)
			}},
			{"Expired", boxoffice.TopicBookingExpired, func(f *fixture, b *boxoffice.Booking) time.Time {
				if _, err := f.store.ExpireBookings(f.ctx, b.HeldUntil, 10); err != nil {
					f.t.Fatalf("ExpireBookings: %v", err)
				}
				return b.HeldUntil
			}},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				l := f.list(f.sell(e, "alice", "A-A-1").Tickets[0], 9000)
				b := f.purchase(l, "bob")
				f.publishAll()
				at := tc.end(f, b)
				// Its event names the listing too.
				status := boxoffice.BookingReleased
				if tc.topic == boxoffice.TopicBookingExpired {
					status = boxoffice.BookingExpired
				}
				f.wantPending(wantEvent{tc.topic, as(b, status, at), at})
				f.wantReturns(boxoffice.SeatReturn{EventID: e.ID, BookingID: b.ID, SeatIDs: []string{"A-A-1"}, ListingID: l.ID, CreatedAt: ms(at)})
				// The listing is still on the market, the seat still sold.
				if diff := cmp.Diff(storedListing(l), f.listing(l.ID), opts); diff != "" {
					t.Errorf("Listing mismatch (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"A-A-1"}, f.soldSeats(e.ID)); diff != "" {
					t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "CreatingAndConfirmingWriteNoSeatReturn", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		f.sell(e, "alice", "A-A-1")
		f.book(e, "bob", "A-A-2")
		f.resell(f.list(f.sell(e, "carol", "A-A-3").Tickets[0], 100), "dave")
		f.offer(f.join(e, "erin"), e, "A-A-4")
		f.wantReturns()
	})

	s.test(t, "ARefusedChangeWritesNoSeatReturn", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.sell(e, "alice", "A-A-1", "A-A-2")
		if _, err := f.store.ReleaseBooking(f.ctx, b.ID, boxoffice.BookingReleased, t0.Add(time.Hour)); err == nil {
			t.Fatal("ReleaseBooking of a confirmed booking succeeded")
		}
		f.list(b.Tickets[0], 100)
		if _, err := f.store.CancelBooking(f.ctx, boxoffice.CancelBooking{BookingID: b.ID, Now: cancelledAt}); err == nil {
			t.Fatal("CancelBooking of a booking with a listed ticket succeeded")
		}
		f.wantReturns()
	})

	s.test(t, "PendingReturnsIsOldestFirstUpToTheLimit", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		var bs []*boxoffice.Booking
		for i, seat := range []string{"A-A-3", "A-A-1", "A-A-2"} {
			b := f.book(e, "alice", seat)
			// Written in this order, whatever their times say.
			if _, err := f.store.ReleaseBooking(f.ctx, b.ID, boxoffice.BookingReleased, t0.Add(time.Duration(3-i)*time.Minute)); err != nil {
				t.Fatalf("ReleaseBooking: %v", err)
			}
			bs = append(bs, b)
		}
		all := f.returns()
		if len(all) != 3 {
			t.Fatalf("%d returns, want 3", len(all))
		}
		for i, b := range bs {
			if all[i].BookingID != b.ID {
				t.Errorf("return %d is of booking %d, want %d", i, all[i].BookingID, b.ID)
			}
		}
		for _, tc := range []struct {
			limit int
			want  []boxoffice.SeatReturn
		}{{2, all[:2]}, {3, all}, {0, nil}, {-1, nil}} {
			got, err := f.store.PendingReturns(f.ctx, tc.limit)
			if err != nil {
				t.Fatalf("PendingReturns(%d): %v", tc.limit, err)
			}
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("PendingReturns(%d) mismatch (-want +got):\n%s", tc.limit, diff)
			}
		}
	})

	s.test(t, "DeleteReturnForgetsOneReturn", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		for _, seat := range []string{"A-A-1", "A-A-2", "A-A-3"} {
			f.release(f.book(e, "alice", seat), boxoffice.BookingReleased)
		}
		all := f.returns()
		if err := f.store.DeleteReturn(f.ctx, all[1].ID); err != nil {
			t.Fatalf("DeleteReturn: %v", err)
		}
		if diff := cmp.Diff([]boxoffice.SeatReturn{all[0], all[2]}, f.returns(), opts); diff != "" {
			t.Errorf("PendingReturns mismatch (-want +got):\n%s", diff)
		}
		// Deleting it again, or an id never handed out, is not an error.
		for _, id := range []int64{all[1].ID, all[2].ID + 1000} {
			if err := f.store.DeleteReturn(f.ctx, id); err != nil {
				t.Errorf("DeleteReturn(%d): %v, want nil", id, err)
			}
		}
		// IDs are not handed out again once the newest is deleted.
		if err := f.store.DeleteReturn(f.ctx, all[2].ID); err != nil {
			t.Fatalf("DeleteReturn: %v", err)
		}
		f.release(f.book(e, "alice", "A-A-4"), boxoffice.BookingReleased)
		got := f.returns()
		if len(got) != 2 || got[1].ID <= all[2].ID {
			t.Errorf("returns %+v, want a new one with an ID above %d", got, all[2].ID)
		}
	})
}

// wantReturnsOf fails unless the pending returns are those of bookings,
// in this order, all written at at.
func (f *fixture) wantReturnsOf(at time.Time, bookings ...*boxoffice.Booking) {
	f.t.Helper()
	var want []boxoffice.SeatReturn
	for _, b := range bookings {
		want = append(want, returnOf(b, at))
	}
	f.wantReturns(want...)
}
