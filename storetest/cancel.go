package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// Promises of CancelBooking and the refund bookkeeping pinned here:
//   - CancelBooking sets UpdatedAt = c.Now; its booking.cancelled event
//     and seat return are at c.Now; the booking it returns has its tickets,
//     void with VoidCancelled;
//   - a booking cancelled before is returned as it is and nothing is
//     written: no event, no seat return, no idempotency record;
//   - the checks, in order: ENOTFOUND, already cancelled (nil), not
//     confirmed (ECONFLICT), a resale purchase, a ticket not valid, checked
//     in or listed (ECONFLICT), then the idempotency key (EIDEMINFLIGHT);
//   - RefundsDue is oldest payment first (Payment.CreatedAt, then booking
//     ID); MarkRefunded of a payment that is neither refund_pending nor
//     refunded is ECONFLICT, of a booking without a payment ENOTFOUND;
//   - MarkCaptured leaves a refund_pending or refunded payment as it is
//     (nil error): a capture that comes late must not undo a refund owed.

func (s suite) cancel(t *testing.T) {
	s.test(t, "CancelBookingVoidsTheTicketsOwesTheRefundAndReturnsTheSeats", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		sale := f.sell(e, "alice", "A-B-2", "A-A-1")
		f.sell(e, "bob", "A-A-3")
		f.publishAll()
		f.forgetReturns()
		now := cancelledAt.Add(345 * time.Microsecond)
		rec := f.idem("alice", "cancel")
		got, err := f.store.CancelBooking(f.ctx, boxoffice.CancelBooking{BookingID: sale.ID, Now: now, Idempotency: rec})
		if err != nil {
			t.Fatalf("CancelBooking: %v", err)
		}
		want := as(sale, boxoffice.BookingCancelled, now)
		for i := range want.Tickets {
			want.Tickets[i].Status, want.Tickets[i].VoidReason = boxoffice.TicketVoid, boxoffice.VoidCancelled
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("CancelBooking mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.booking(sale.ID), opts); diff != "" {
			t.Errorf("Booking mismatch (-want +got):\n%s", diff)
		}
		for _, tk := range want.Tickets {
			if diff := cmp.Diff(&tk, f.ticket(tk.ID), opts); diff != "" {
				t.Errorf("Ticket(%d) mismatch (-want +got):\n%s", tk.ID, diff)
			}
		}
		wantPayment := boxoffice.Payment{EventID: sale.EventID, BookingID: sale.ID, AuthID: sale.PaymentAuthID, AmountCents: sale.AmountCents,
			Status: boxoffice.PaymentRefundPending, CreatedAt: ms(t0.Add(time.Minute))}
		if diff := cmp.Diff(&wantPayment, f.payment(sale.ID), opts); diff != "" {
			t.Errorf("Payment mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]boxoffice.Payment{wantPayment}, f.refundsDue(), opts); diff != "" {
			t.Errorf("RefundsDue mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"A-A-3"}, f.soldSeats(e.ID)); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
		if got := f.userTickets("alice"); len(got) != 0 {
			t.Errorf("UserTickets(alice) = %v, want none", got)
		}
		f.wantPending(wantEvent{boxoffice.TopicBookingCancelled, want, now})
		f.wantReturns(returnOf(sale, now))
		f.wantIdempotency(rec)
		// The seats are for sale again.
		f.sell(e, "carol", "A-A-1", "A-B-2")
	})

	s.test(t, "CancelBookingAlreadyCancelledReturnsItAndWritesNothing", func(t *testing.T, f *fixture) {
		sale := f.sell(f.createEvent(), "alice", "A-A-1")
		first := f.cancel(sale)
		f.publishAll()
		f.forgetReturns()
		got, err := f.store.CancelBooking(f.ctx, boxoffice.CancelBooking{
			BookingID: sale.ID, Now: cancelledAt.Add(time.Hour), Idempotency: f.idem("alice", "cancel-again"),
		})
		if err != nil {
			t.Fatalf("CancelBooking(again): %v", err)
		}
		if diff := cmp.Diff(first, got, opts); diff != "" {
			t.Errorf("CancelBooking(again) mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(first, f.booking(sale.ID), opts); diff != "" {
			t.Errorf("Booking mismatch (-want +got):\n%s", diff)
		}
		f.wantPending()
		f.wantReturns()
		f.wantNoIdempotency("alice", "cancel-again")
	})

	t.Run("CancelBookingRefuses", func(t *testing.T) {
		// Each case returns the booking to cancel; a refused cancellation
		// writes nothing.
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) boxoffice.ID
			want    string
		}{
			{"APendingBookingIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				return f.book(e, "alice", "A-A-1").ID
			}, boxoffice.ECONFLICT},
			{"AReleasedBookingIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				b := f.book(e, "alice", "A-A-1")
				f.release(b, boxoffice.BookingReleased)
				return b.ID
			}, boxoffice.ECONFLICT},
			{"AnExpiredBookingIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				b := f.book(e, "alice", "A-A-1")
				f.release(b, boxoffice.BookingExpired)
				return b.ID
			}, boxoffice.ECONFLICT},
			{"AnUnknownBookingIsNotFound", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				return 424242
			}, boxoffice.ENOTFOUND},
			{"AResalePurchaseIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				return f.resell(f.list(f.sell(e, "bob", "A-A-1").Tickets[0], 9000), "alice").ID
			}, boxoffice.ECONFLICT},
			{"ABookingWithAListedTicketIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				b := f.sell(e, "alice", "A-A-1", "A-A-2")
				f.list(b.Tickets[1], 9000)
				return b.ID
			}, boxoffice.ECONFLICT},
			{"ABookingWithACheckedInTicketIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				b := f.sell(e, "alice", "A-A-1", "A-A-2")
				f.checkIn(b.Tickets[0], listedAt)
				return b.ID
			}, boxoffice.ECONFLICT},
			{"ABookingWithAResoldTicketIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				b := f.sell(e, "alice", "A-A-1", "A-A-2")
				f.resell(f.list(b.Tickets[0], 9000), "bob")
				return b.ID
			}, boxoffice.ECONFLICT},
			{"ATakenIdempotencyKeyIsInFlight", func(f *fixture, e *boxoffice.Event) boxoffice.ID {
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "cancel")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				return f.sell(e, "alice", "A-A-1").ID
			}, boxoffice.EIDEMINFLIGHT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				id := tc.arrange(f, e)
				f.publishAll()
				before := f.cancelState(e.ID, id)
				rec := f.idem("alice", "cancel")
				rec.RequestHash = "the cancellation"
				_, err := f.store.CancelBooking(f.ctx, boxoffice.CancelBooking{BookingID: id, Now: cancelledAt, Idempotency: rec})
				wantCode(t, "CancelBooking", err, tc.want)
				if diff := cmp.Diff(before, f.cancelState(e.ID, id), opts, sortedStrings); diff != "" {
					t.Errorf("a refused cancellation wrote something (-before +after):\n%s", diff)
				}
				f.wantPending()
				if tc.want == boxoffice.EIDEMINFLIGHT {
					f.wantIdempotency(f.idem("alice", "cancel"))
				} else {
					f.wantNoIdempotency("alice", "cancel")
				}
			})
		}
	})

	s.test(t, "ConcurrentCancelAndResaleConfirmOfOneTicketNeverBothSucceed", func(t *testing.T, f *fixture) {
		// Each round: alice listed her ticket and bob holds it; alice
		// cancels her booking while bob pays. A listed ticket cannot be
		// cancelled and a resold one neither: bob gets the ticket, alice
		// keeps her booking, whichever runs first.
		const rounds = racers / 2
		e := f.createEvent()
		seats := e.Seats()
		sales := make([]*boxoffice.Booking, rounds)
		purchases := make([]*boxoffice.Booking, rounds)
		for i := range rounds {
			sales[i] = f.sell(e, "alice", seats[i].ID)
			purchases[i] = f.purchase(f.list(sales[i].Tickets[0], 9000), "bob")
		}
		cancelErrs, confirmErrs := make([]error, rounds), make([]error, rounds)
		confirmations := make([]boxoffice.ConfirmBooking, rounds)
		for i := range rounds {
			confirmations[i] = f.confirmation(purchases[i], resoldAt, "race")
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range rounds {
			wg.Go(func() {
				<-start
				_, cancelErrs[i] = f.store.CancelBooking(f.ctx, boxoffice.CancelBooking{BookingID: sales[i].ID, Now: resoldAt})
			})
			wg.Go(func() {
				<-start
				_, confirmErrs[i] = f.store.ConfirmBooking(f.ctx, confirmations[i])
			})
		}
		close(start)
		wg.Wait()
		for i := range rounds {
			if cancelErrs[i] == nil && confirmErrs[i] == nil {
				t.Errorf("round %d: the cancellation and the resale both succeeded", i)
			}
			wantCode(t, "CancelBooking", cancelErrs[i], boxoffice.ECONFLICT)
			wantCode(t, "ConfirmBooking(resale)", confirmErrs[i], "")
			if got := f.booking(sales[i].ID); got.Status != boxoffice.BookingConfirmed {
				t.Errorf("round %d: alice's booking is %s, want confirmed", i, got.Status)
			}
			if got := f.payment(sales[i].ID); got.Status != boxoffice.PaymentAuthorized {
				t.Errorf("round %d: alice's payment is %s, want authorized", i, got.Status)
			}
			if got := f.booking(purchases[i].ID); got.Status != boxoffice.BookingConfirmed || len(got.Tickets) != 1 || got.Tickets[0].Status != boxoffice.TicketValid {
				t.Errorf("round %d: bob's purchase is %s with tickets %+v, want confirmed with one valid", i, got.Status, got.Tickets)
			}
		}
		if got := f.soldSeats(e.ID); len(got) != rounds {
			t.Errorf("SoldSeats = %v, want %d seats", got, rounds)
		}
		f.wantReturns()
	})
}

// cancelState is what a cancellation can write, read back through the
// port.
type cancelState struct {
	Booking *boxoffice.Booking // nil when unknown
	Payment *boxoffice.Payment // nil when none
	Sold    []string
	Returns []boxoffice.SeatReturn
}

func (f *fixture) cancelState(eventID, bookingID boxoffice.ID) cancelState {
	f.t.Helper()
	st := cancelState{Sold: f.soldSeats(eventID), Returns: f.returns()}
	if b, err := f.store.Booking(f.ctx, bookingID); err == nil {
		st.Booking = b
	}
	if p, err := f.store.Payment(f.ctx, bookingID); err == nil {
		st.Payment = p
	}
	return st
}

// refundsDue reads every payment owed a refund.
func (f *fixture) refundsDue() []boxoffice.Payment {
	f.t.Helper()
	ps, err := f.store.RefundsDue(f.ctx, 10_000)
	if err != nil {
		f.t.Fatalf("RefundsDue: %v", err)
	}
	return ps
}

func (s suite) refunds(t *testing.T) {
	s.test(t, "PaymentReturnsTheBookingsPayment", func(t *testing.T, f *fixture) {
		b := f.book(f.createEvent(), "alice", "A-A-1")
		c := f.confirmation(b, t0.Add(time.Minute+999_999), "ok")
		if _, err := f.store.ConfirmBooking(f.ctx, c); err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		want := c.Payment
		want.CreatedAt = ms(want.CreatedAt)
		if diff := cmp.Diff(&want, f.payment(b.ID), opts); diff != "" {
			t.Errorf("Payment mismatch (-want +got):\n%s", diff)
		}
		if err := f.store.MarkCaptured(f.ctx, b.EventID, b.ID); err != nil {
			t.Fatalf("MarkCaptured: %v", err)
		}
		want.Status = boxoffice.PaymentCaptured
		if diff := cmp.Diff(&want, f.payment(b.ID), opts); diff != "" {
			t.Errorf("Payment after MarkCaptured mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "MarkCapturedAtOnceAnswersEachCall", func(t *testing.T, f *fixture) {
		// Concurrent captures (a store may write them together): each
		// call gets its own answer, an unknown booking ENOTFOUND.
		e := f.createEvent()
		ids := []boxoffice.ID{424242}
		for _, seat := range []string{"A-A-1", "A-A-2", "A-A-3", "A-A-4"} {
			ids = append(ids, f.sell(e, "alice", seat).ID)
		}
		pending := f.book(e, "alice", "A-A-5").ID // no payment yet
		ids = append(ids, pending)
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() { errs[i] = f.store.MarkCaptured(f.ctx, e.ID, id) })
		}
		wg.Wait()
		for i, id := range ids {
			if id == 424242 || id == pending {
				wantCode(t, "MarkCaptured", errs[i], boxoffice.ENOTFOUND)
				continue
			}
			if errs[i] != nil {
				t.Errorf("MarkCaptured(%s): %v", id, errs[i])
			}
			if p := f.payment(id); p.Status != boxoffice.PaymentCaptured {
				t.Errorf("payment of %s is %s after MarkCaptured, want captured", id, p.Status)
			}
		}
	})

	s.test(t, "PaymentOfABookingWithoutOneIsNotFound", func(t *testing.T, f *fixture) {
		pending := f.book(f.createEvent(), "alice", "A-A-1")
		for _, id := range []boxoffice.ID{pending.ID, 424242} {
			_, err := f.store.Payment(f.ctx, id)
			wantCode(t, "Payment", err, boxoffice.ENOTFOUND)
		}
	})

	// owed sells three bookings paid a minute apart from t0+1m and cancels
	// them newest first; it returns their payments as owed, oldest first.
	owed := func(f *fixture) []boxoffice.Payment {
		e := f.createEvent()
		var bookings []*boxoffice.Booking
		for i, seat := range []string{"A-A-1", "A-A-2", "A-A-3"} {
			b := f.book(e, "alice", seat)
			got, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, t0.Add(time.Duration(i+1)*time.Minute), "ok"))
			if err != nil {
				f.t.Fatalf("ConfirmBooking: %v", err)
			}
			bookings = append(bookings, got)
		}
		f.sell(e, "bob", "A-A-4") // paid, not owed anything
		var ps []boxoffice.Payment
		for i := len(bookings) - 1; i >= 0; i-- {
			f.cancel(bookings[i])
		}
		for _, b := range bookings {
			ps = append(ps, *f.payment(b.ID))
		}
		return ps
	}

	s.test(t, "RefundsDueListsRefundPendingPaymentsOldestFirstUpToTheLimit", func(t *testing.T, f *fixture) {
		ps := owed(f)
		for _, p := range ps {
			if p.Status != boxoffice.PaymentRefundPending {
				t.Fatalf("payment of %d is %s, want %s", p.BookingID, p.Status, boxoffice.PaymentRefundPending)
			}
		}
		for _, tc := range []struct {
			limit int
			want  []boxoffice.Payment
		}{{10, ps}, {2, ps[:2]}, {0, nil}, {-1, nil}} {
			got, err := f.store.RefundsDue(f.ctx, tc.limit)
			if err != nil {
				t.Fatalf("RefundsDue(%d): %v", tc.limit, err)
			}
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("RefundsDue(%d) mismatch (-want +got):\n%s", tc.limit, diff)
			}
		}
		// A refund is not a capture to finish.
		for _, p := range f.payments() {
			if p.BookingID == ps[0].BookingID || p.BookingID == ps[1].BookingID || p.BookingID == ps[2].BookingID {
				t.Errorf("UncapturedPayments lists the cancelled booking %d", p.BookingID)
			}
		}
	})

	s.test(t, "MarkRefundedTakesThePaymentOffRefundsDue", func(t *testing.T, f *fixture) {
		ps := owed(f)
		if err := f.store.MarkRefunded(f.ctx, ps[1].BookingID, cancelledAt.Add(time.Minute)); err != nil {
			t.Fatalf("MarkRefunded: %v", err)
		}
		if diff := cmp.Diff([]boxoffice.Payment{ps[0], ps[2]}, f.refundsDue(), opts); diff != "" {
			t.Errorf("RefundsDue mismatch (-want +got):\n%s", diff)
		}
		want := ps[1]
		want.Status = boxoffice.PaymentRefunded
		if diff := cmp.Diff(&want, f.payment(want.BookingID), opts); diff != "" {
			t.Errorf("Payment mismatch (-want +got):\n%s", diff)
		}
		if err := f.store.MarkRefunded(f.ctx, ps[1].BookingID, cancelledAt.Add(time.Hour)); err != nil {
			t.Errorf("MarkRefunded(again): %v, want nil", err)
		}
		if diff := cmp.Diff(&want, f.payment(want.BookingID), opts); diff != "" {
			t.Errorf("Payment after MarkRefunded(again) mismatch (-want +got):\n%s", diff)
		}
		// A late capture does not undo the refund either.
		if err := f.store.MarkCaptured(f.ctx, ps[1].EventID, ps[1].BookingID); err != nil {
			t.Errorf("MarkCaptured(refunded): %v, want nil", err)
		}
		if diff := cmp.Diff(&want, f.payment(want.BookingID), opts); diff != "" {
			t.Errorf("Payment after a late MarkCaptured mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "MarkCapturedLeavesARefundOwed", func(t *testing.T, f *fixture) {
		// Confirm committed, the capture came after a cancellation.
		ps := owed(f)
		if err := f.store.MarkCaptured(f.ctx, ps[0].EventID, ps[0].BookingID); err != nil {
			t.Fatalf("MarkCaptured: %v", err)
		}
		if diff := cmp.Diff(&ps[0], f.payment(ps[0].BookingID), opts); diff != "" {
			t.Errorf("Payment mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(ps, f.refundsDue(), opts); diff != "" {
			t.Errorf("RefundsDue mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "MarkRefundedOfAPaymentNotOwedIsConflict", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		authorized := f.sell(e, "alice", "A-A-1")
		captured := f.sell(e, "alice", "A-A-2")
		if err := f.store.MarkCaptured(f.ctx, captured.EventID, captured.ID); err != nil {
			t.Fatalf("MarkCaptured: %v", err)
		}
		for _, b := range []*boxoffice.Booking{authorized, captured} {
			before := f.payment(b.ID)
			wantCode(t, "MarkRefunded("+string(before.Status)+")", f.store.MarkRefunded(f.ctx, b.ID, cancelledAt), boxoffice.ECONFLICT)
			if diff := cmp.Diff(before, f.payment(b.ID), opts); diff != "" {
				t.Errorf("a refused MarkRefunded changed the payment (-before +after):\n%s", diff)
			}
		}
	})

	s.test(t, "MarkRefundedWithoutAPaymentIsNotFound", func(t *testing.T, f *fixture) {
		pending := f.book(f.createEvent(), "alice", "A-A-1")
		wantCode(t, "MarkRefunded(pending)", f.store.MarkRefunded(f.ctx, pending.ID, cancelledAt), boxoffice.ENOTFOUND)
		wantCode(t, "MarkRefunded(unknown)", f.store.MarkRefunded(f.ctx, 424242, cancelledAt), boxoffice.ENOTFOUND)
	})
}
