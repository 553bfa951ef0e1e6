package storetest

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func (s suite) payments(t *testing.T) {
	// paid confirms three bookings, paid a minute apart from t0+1m, and
	// returns their payments, oldest first.
	paid := func(f *fixture) []boxoffice.Payment {
		e := f.createEvent()
		var ps []boxoffice.Payment
		for i, seat := range []string{"A-A-1", "A-A-2", "A-A-3"} {
			b := f.book(e, "alice", seat)
			c := f.confirmation(b, t0.Add(time.Duration(i+1)*time.Minute), "ok")
			if _, err := f.store.ConfirmBooking(f.ctx, c); err != nil {
				f.t.Fatalf("ConfirmBooking: %v", err)
			}
			ps = append(ps, c.Payment)
		}
		return ps
	}
	byBooking := cmpopts.SortSlices(func(a, b boxoffice.Payment) bool { return a.BookingID < b.BookingID })

	t.Run("UncapturedPaymentsListsAuthorizedPaymentsRecordedBeforeTheCutoff", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			cutoff time.Time
			want   []int // indexes into the payments
		}{
			{"BeforeAll", t0.Add(time.Minute), nil}, // recorded at the cutoff is not before it
			{"BetweenTheFirstAndSecond", t0.Add(time.Minute + time.Millisecond), []int{0}},
			{"AfterTwo", t0.Add(3 * time.Minute), []int{0, 1}},
			{"AfterAll", t0.Add(time.Hour), []int{0, 1, 2}},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				ps := paid(f)
				got, err := f.store.UncapturedPayments(f.ctx, tc.cutoff, 10)
				if err != nil {
					t.Fatalf("UncapturedPayments: %v", err)
				}
				var want []boxoffice.Payment
				for _, i := range tc.want {
					want = append(want, ps[i])
				}
				if diff := cmp.Diff(want, got, opts, byBooking); diff != "" {
					t.Errorf("UncapturedPayments mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "UncapturedPaymentsStopsAtTheLimit", func(t *testing.T, f *fixture) {
		ps := paid(f)
		got, err := f.store.UncapturedPayments(f.ctx, t0.Add(time.Hour), 2)
		if err != nil {
			t.Fatalf("UncapturedPayments: %v", err)
		}
		if len(got) != 2 {
			t.Fatalf("UncapturedPayments(limit 2) = %d payments, want 2", len(got))
		}
		for _, p := range got {
			if !cmp.Equal(p, ps[0], opts) && !cmp.Equal(p, ps[1], opts) && !cmp.Equal(p, ps[2], opts) {
				t.Errorf("UncapturedPayments returned an unknown payment %+v", p)
			}
		}
	})

	s.test(t, "MarkCapturedTakesThePaymentOffTheUncapturedList", func(t *testing.T, f *fixture) {
		ps := paid(f)
		if err := f.store.MarkCaptured(f.ctx, ps[1].EventID, ps[1].BookingID); err != nil {
			t.Fatalf("MarkCaptured: %v", err)
		}
		if diff := cmp.Diff([]boxoffice.Payment{ps[0], ps[2]}, f.payments(), opts, byBooking); diff != "" {
			t.Errorf("UncapturedPayments mismatch (-want +got):\n%s", diff)
		}
		if err := f.store.MarkCaptured(f.ctx, ps[1].EventID, ps[1].BookingID); err != nil {
			t.Errorf("MarkCaptured(again): %v, want nil (capturing twice is harmless)", err)
		}
		// The booking itself is untouched.
		if b := f.booking(ps[1].BookingID); b.Status != boxoffice.BookingConfirmed || b.PaymentAuthID != ps[1].AuthID {
			t.Errorf("booking is %s paid by %q, want confirmed paid by %q", b.Status, b.PaymentAuthID, ps[1].AuthID)
		}
	})

	s.test(t, "MarkCapturedWithoutAPaymentIsNotFound", func(t *testing.T, f *fixture) {
		pending := f.book(f.createEvent(), "alice", "A-A-1")
		wantCode(t, "MarkCaptured(pending booking)", f.store.MarkCaptured(f.ctx, pending.EventID, pending.ID), boxoffice.ENOTFOUND)
		wantCode(t, "MarkCaptured(unknown booking)", f.store.MarkCaptured(f.ctx, pending.EventID, 424242), boxoffice.ENOTFOUND)
		// A paid booking named under another event is not found, and
		// stays uncaptured.
		ps := paid(f)
		wantCode(t, "MarkCaptured(another event)", f.store.MarkCaptured(f.ctx, pending.EventID, ps[0].BookingID), boxoffice.ENOTFOUND)
		if p := f.payment(ps[0].BookingID); p.Status != boxoffice.PaymentAuthorized {
			t.Errorf("payment %s after a capture under another event, want authorized", p.Status)
		}
	})
}
