package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func (s suite) release(t *testing.T) {
	t.Run("ReleaseBookingMovesPendingTo", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			to     boxoffice.BookingStatus
			lapsed bool // the hold already ran out (the expiry path)
		}{
			{"Released", boxoffice.BookingReleased, false},
			{"Expired", boxoffice.BookingExpired, false},
			{"ExpiredAfterTheHoldRanOut", boxoffice.BookingExpired, true},
			{"ReleasedAfterTheHoldRanOut", boxoffice.BookingReleased, true},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				now := t0.Add(2 * time.Minute)
				if tc.lapsed {
					now = b.HeldUntil.Add(time.Minute)
				}
				got, err := f.store.ReleaseBooking(f.ctx, b.ID, tc.to, now)
				if err != nil {
					t.Fatalf("ReleaseBooking: %v", err)
				}
				want := stored(b)
				want.Status, want.UpdatedAt = tc.to, now
				if diff := cmp.Diff(want, got, opts); diff != "" {
					t.Errorf("ReleaseBooking mismatch (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(want, f.booking(b.ID), opts); diff != "" {
					t.Errorf("Booking mismatch (-want +got):\n%s", diff)
				}
				// The seats are free for someone else to buy.
				f.confirm(f.book(e, "bob", "A-A-1", "A-A-2"))
			})
		}
	})

	t.Run("ReleaseBookingNotPendingIsConflict", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			state func(f *fixture, b *boxoffice.Booking)
		}{
			{"Released", func(f *fixture, b *boxoffice.Booking) { f.release(b, boxoffice.BookingReleased) }},
			{"Expired", func(f *fixture, b *boxoffice.Booking) { f.release(b, boxoffice.BookingExpired) }},
			{"Confirmed", func(f *fixture, b *boxoffice.Booking) { f.confirm(b) }},
		} {
			for _, to := range []struct {
				name   string
				status boxoffice.BookingStatus
			}{{"Released", boxoffice.BookingReleased}, {"Expired", boxoffice.BookingExpired}} {
				s.test(t, tc.name+"To"+to.name, func(t *testing.T, f *fixture) {
					b := f.book(f.createEvent(), "alice", "A-A-1")
					tc.state(f, b)
					before := f.booking(b.ID)
					_, err := f.store.ReleaseBooking(f.ctx, b.ID, to.status, t0.Add(5*time.Minute))
					wantCode(t, "ReleaseBooking", err, boxoffice.ECONFLICT)
					if diff := cmp.Diff(before, f.booking(b.ID), opts); diff != "" {
						t.Errorf("a refused release changed the booking (-before +after):\n%s", diff)
					}
				})
			}
		}
	})

	s.test(t, "ReleaseBookingUnknownIsNotFound", func(t *testing.T, f *fixture) {
		_, err := f.store.ReleaseBooking(f.ctx, 424242, boxoffice.BookingReleased, t0)
		wantCode(t, "ReleaseBooking(unknown)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "ReleaseBookingToAnotherStatusIsInvalid", func(t *testing.T, f *fixture) {
		b := f.book(f.createEvent(), "alice", "A-A-1")
		for _, to := range []boxoffice.BookingStatus{boxoffice.BookingPending, boxoffice.BookingConfirmed, "failed", "gone"} {
			_, err := f.store.ReleaseBooking(f.ctx, b.ID, to, t0.Add(time.Minute))
			wantCode(t, fmt.Sprintf("ReleaseBooking(to %q)", to), err, boxoffice.EINVALID)
		}
		if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
			t.Errorf("the booking changed (-want +got):\n%s", diff)
		}
	})
}

func (s suite) expire(t *testing.T) {
	s.test(t, "ExpireBookingsExpiresPendingHoldsThatRanOutByTheCutoff", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		cutoff := t0.Add(time.Hour)
		heldUntil := func(b *boxoffice.Booking, until time.Time) *boxoffice.Booking {
			b.HeldUntil = until
			f.createBooking(b)
			return b
		}
		ranOut := heldUntil(f.newBooking(e, "alice", "A-A-1", "A-A-2"), cutoff.Add(-time.Minute))
		// A hold is not live at its HeldUntil (Booking.Live), so one ending
		// exactly at the cutoff has run out.
		endsAtCutoff := heldUntil(f.newBooking(e, "bob", "A-A-3"), cutoff)
		live := heldUntil(f.newBooking(e, "carol", "A-A-4"), cutoff.Add(time.Millisecond))
		confirmed := f.book(e, "dave", "A-A-5")
		f.confirm(confirmed)
		released := f.book(e, "erin", "A-A-6")
		f.release(released, boxoffice.BookingReleased)

		got, err := f.store.ExpireBookings(f.ctx, cutoff, 10)
		if err != nil {
			t.Fatalf("ExpireBookings: %v", err)
		}
		var want []*boxoffice.Booking
		for _, b := range []*boxoffice.Booking{ranOut, endsAtCutoff} {
			w := stored(b)
			w.Status = boxoffice.BookingExpired
			want = append(want, w)
		}
		// The port says nothing of the order or of UpdatedAt here.
		byID := cmpopts.SortSlices(func(a, b *boxoffice.Booking) bool { return a.ID < b.ID })
		noUpdatedAt := cmpopts.IgnoreFields(boxoffice.Booking{}, "UpdatedAt")
		if diff := cmp.Diff(want, got, opts, byID, noUpdatedAt); diff != "" {
			t.Errorf("ExpireBookings mismatch (-want +got):\n%s", diff)
		}
		for _, w := range want {
			if diff := cmp.Diff(w, f.booking(w.ID), opts, noUpdatedAt); diff != "" {
				t.Errorf("Booking(%d) mismatch (-want +got):\n%s", w.ID, diff)
			}
		}
		for _, b := range []struct {
			booking *boxoffice.Booking
			want    boxoffice.BookingStatus
		}{{live, boxoffice.BookingPending}, {confirmed, boxoffice.BookingConfirmed}, {released, boxoffice.BookingReleased}} {
			if got := f.booking(b.booking.ID).Status; got != b.want {
				t.Errorf("booking %d is %s, want %s still", b.booking.ID, got, b.want)
			}
		}
		again, err := f.store.ExpireBookings(f.ctx, cutoff, 10)
		if err != nil {
			t.Fatalf("ExpireBookings(again): %v", err)
		}
		if len(again) != 0 {
			t.Errorf("ExpireBookings(again) expired %d bookings, want none", len(again))
		}
	})

	s.test(t, "ExpireBookingsStopsAtTheLimit", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		want := map[boxoffice.ID]bool{}
		for i := range 5 {
			b := f.newBooking(e, fmt.Sprint("user-", i), e.Seats()[i].ID)
			b.HeldUntil = t0.Add(time.Duration(i) * time.Second)
			f.createBooking(b)
			want[b.ID] = true
		}
		cutoff := t0.Add(time.Hour)
		got := map[boxoffice.ID]bool{}
		for _, n := range []int{2, 2, 1, 0} {
			expired, err := f.store.ExpireBookings(f.ctx, cutoff, 2)
			if err != nil {
				t.Fatalf("ExpireBookings: %v", err)
			}
			if len(expired) != n {
				t.Fatalf("ExpireBookings(limit 2) expired %d, want %d", len(expired), n)
			}
			for _, b := range expired {
				if got[b.ID] {
					t.Errorf("booking %d expired twice", b.ID)
				}
				got[b.ID] = true
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("expired bookings (-want +got):\n%s", diff)
		}
	})
}
