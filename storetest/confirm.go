package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

func (s suite) confirm(t *testing.T) {
	s.test(t, "ConfirmIssuesTicketsAndRecordsTheAuthorizedPayment", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.book(e, "alice", "A-B-2", "A-B-1")
		now := t0.Add(3*time.Minute + 456_789*time.Nanosecond)
		c := f.confirmation(b, now, "ok")
		c.Idempotency = f.idem("alice", "confirm-1")
		want := stored(b)
		want.Status = boxoffice.BookingConfirmed
		want.ConfirmationCode = c.Code
		want.PaymentAuthID = c.Payment.AuthID
		want.UpdatedAt = ms(now)
		want.Tickets = stored(&boxoffice.Booking{Tickets: c.Tickets}).Tickets
		// The tickets come back in the booking's seat order, whatever
		// order the confirm named them in.
		c.Tickets = slices.Clone(c.Tickets)
		slices.Reverse(c.Tickets)
		got, err := f.store.ConfirmBooking(f.ctx, c)
		if err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("ConfirmBooking mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking after confirm mismatch (-want +got):\n%s", diff)
		}
		wantPayments := []boxoffice.Payment{{
			EventID: e.ID, BookingID: b.ID, AuthID: c.Payment.AuthID, AmountCents: b.AmountCents,
			Status: boxoffice.PaymentAuthorized, CreatedAt: ms(now),
		}}
		if diff := cmp.Diff(wantPayments, f.payments(), opts); diff != "" {
			t.Errorf("UncapturedPayments mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(b.SeatIDs, f.soldSeats(e.ID), sortedStrings); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
		f.wantIdempotency(c.Idempotency)
	})

	s.test(t, "ConfirmUnknownBookingIsNotFound", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.newBooking(e, "alice", "A-A-1") // never saved
		_, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, t0.Add(time.Minute), "x"))
		wantCode(t, "ConfirmBooking(unknown)", err, boxoffice.ENOTFOUND)
		if got := f.payments(); len(got) != 0 {
			t.Errorf("payments written: %v", got)
		}
	})

	s.test(t, "ConfirmAlreadyConfirmedReturnsItUnchanged", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.book(e, "alice", "A-A-1", "A-A-2")
		first := f.confirm(b)
		// A retry, or a second payment the caller must void: after the hold
		// ran out, with another authorization, other tickets, a record.
		again := f.confirmation(b, b.HeldUntil.Add(time.Minute), "again")
		again.Idempotency = f.idem("alice", "confirm-again")
		got, err := f.store.ConfirmBooking(f.ctx, again)
		if err != nil {
			t.Fatalf("ConfirmBooking(again): %v, want the confirmed booking", err)
		}
		if diff := cmp.Diff(first, got, opts); diff != "" {
			t.Errorf("ConfirmBooking(again) mismatch (-want +got):\n%s", diff)
		}
		if got.PaymentAuthID == again.Payment.AuthID {
			t.Errorf("PaymentAuthID = the second authorization %q, want the first", got.PaymentAuthID)
		}
		if diff := cmp.Diff(first, f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking changed (-want +got):\n%s", diff)
		}
		if ps := f.payments(); len(ps) != 1 || ps[0].AuthID != first.PaymentAuthID {
			t.Errorf("payments = %+v, want only %q", ps, first.PaymentAuthID)
		}
		f.wantNoIdempotency("alice", "confirm-again")
	})

	t.Run("ConfirmFailsAndWritesNothing", func(t *testing.T) {
		// Each case books what it needs and returns the confirmation to
		// try. Whatever the reason, a failed confirm leaves the booking
		// pending and as it was, issues no ticket, records no payment and
		// writes no idempotency record.
		type failure struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking
			want    string
		}
		tests := []failure{
			{"AfterReleaseIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				f.release(b, boxoffice.BookingReleased)
				return f.confirmation(b, t0.Add(2*time.Minute), "late")
			}, boxoffice.ECONFLICT},
			{"AfterExpiryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				f.release(b, boxoffice.BookingExpired)
				return f.confirmation(b, t0.Add(2*time.Minute), "late")
			}, boxoffice.ECONFLICT},
			{"AfterTheExpirySweepIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				if _, err := f.store.ExpireBookings(f.ctx, b.HeldUntil.Add(time.Second), 10); err != nil {
					f.t.Fatalf("ExpireBookings: %v", err)
				}
				return f.confirmation(b, t0.Add(2*time.Minute), "late")
			}, boxoffice.ECONFLICT},
			{"AfterHoldExpiredIsHoldLost", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				return f.confirmation(b, b.HeldUntil.Add(time.Second), "late")
			}, boxoffice.EHOLDLOST},
			{"AtTheEndOfTheHoldIsHoldLost", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				return f.confirmation(b, b.HeldUntil, "late")
			}, boxoffice.EHOLDLOST},
			{"WithAnOlderFenceIsHoldLost", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				c := f.confirmation(b, t0.Add(2*time.Minute), "stale")
				c.Fence = b.Fence - 1
				return c
			}, boxoffice.EHOLDLOST},
			{"WithANewerFenceIsHoldLost", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				c := f.confirmation(b, t0.Add(2*time.Minute), "forged")
				c.Fence = b.Fence + 1
				return c
			}, boxoffice.EHOLDLOST},
			{"WhenANewerLiveHoldClaimsASeatIsHoldLost", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				// alice's hold on A-A-2 was lost in the lock layer and
				// granted again to bob, with a larger fence.
				f.book(e, "bob", "A-A-2", "A-A-3")
				return f.confirmation(b, t0.Add(2*time.Minute), "ok")
			}, boxoffice.EHOLDLOST},
			{"WhenANewerLiveHoldOfTheSameUserClaimsASeatIsHoldLost", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				f.book(e, "alice", "A-A-1")
				return f.confirmation(b, t0.Add(2*time.Minute), "ok")
			}, boxoffice.EHOLDLOST},
			{"WhenASeatHasAValidTicketIsSeatTaken", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				// The lock layer let bob hold A-A-2 too, and he paid first.
				f.confirm(f.book(e, "bob", "A-A-2"))
				return f.confirmation(b, t0.Add(2*time.Minute), "ok")
			}, boxoffice.ESEATTAKEN},
			{"WithUsedIdempotencyKeyIsInFlight", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "confirm")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				c := f.confirmation(b, t0.Add(2*time.Minute), "ok")
				c.Idempotency = f.idem("alice", "confirm")
				c.Idempotency.RequestHash, c.Idempotency.Outcome = "the confirm", boxoffice.OutcomeConfirmed
				return c
			}, boxoffice.EIDEMINFLIGHT},
			{"WithATicketMissingIsInvalid", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				c := f.confirmation(b, t0.Add(2*time.Minute), "ok")
				c.Tickets = c.Tickets[:1]
				return c
			}, boxoffice.EINVALID},
			{"WithATicketForASeatNotHeldIsInvalid", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				c := f.confirmation(b, t0.Add(2*time.Minute), "ok")
				c.Tickets[1].SeatID = "A-A-3"
				return c
			}, boxoffice.EINVALID},
			{"WithTwoTicketsForOneSeatIsInvalid", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				c := f.confirmation(b, t0.Add(2*time.Minute), "ok")
				c.Tickets[1].SeatID = "A-A-1"
				return c
			}, boxoffice.EINVALID},
		}
		tests = append(tests, failure{"OfAnotherEventIsNotFound", func(f *fixture, e *boxoffice.Event) boxoffice.ConfirmBooking {
			b := f.book(e, "alice", "A-A-1", "A-A-2")
			c := f.confirmation(b, t0.Add(2*time.Minute), "ok")
			c.EventID = f.createEvent().ID
			return c
		}, boxoffice.ENOTFOUND})
		// Each case twice: with the booking's event named, as the service
		// confirms, and by the booking's id alone.
		for _, byID := range []bool{false, true} {
			for _, tc := range tests {
				name := tc.name
				if byID {
					if tc.want == boxoffice.ENOTFOUND {
						continue
					}
					name = "ByIDAlone" + name
				}
				s.test(t, name, func(t *testing.T, f *fixture) {
					e := f.createEvent()
					c := tc.arrange(f, e)
					if byID {
						c.EventID = 0
					}
					if c.Idempotency == nil {
						c.Idempotency = f.idem("alice", "confirm")
					}
					before := f.snapshot(e.ID, c)
					_, err := f.store.ConfirmBooking(f.ctx, c)
					wantCode(t, "ConfirmBooking", err, tc.want)
					if diff := cmp.Diff(before, f.snapshot(e.ID, c), opts, sortedStrings); diff != "" {
						t.Errorf("a failed confirm wrote something (-before +after):\n%s", diff)
					}
				})
			}
		}
	})

	t.Run("ConfirmIsNotRefusedBy", func(t *testing.T) {
		// The fencing check refuses only a live pending booking with a
		// larger fence on one of the seats: none of these.
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) (alice *boxoffice.Booking)
		}{
			{"AnOlderLiveHoldOnTheSeat", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				f.book(e, "bob", "A-A-2")
				return f.book(e, "alice", "A-A-1", "A-A-2")
			}},
			{"ANewerHoldThatRanOut", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				alice := f.book(e, "alice", "A-A-1", "A-A-2")
				bob := f.newBooking(e, "bob", "A-A-2")
				bob.HeldUntil = t0.Add(time.Minute)
				f.createBooking(bob)
				return alice
			}},
			{"ANewerHoldEndingAtTheConfirm", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				alice := f.book(e, "alice", "A-A-1", "A-A-2")
				bob := f.newBooking(e, "bob", "A-A-2")
				bob.HeldUntil = t0.Add(2 * time.Minute) // the confirm's Now
				f.createBooking(bob)
				return alice
			}},
			{"ANewerHoldReleased", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				alice := f.book(e, "alice", "A-A-1", "A-A-2")
				f.release(f.book(e, "bob", "A-A-2"), boxoffice.BookingReleased)
				return alice
			}},
			{"ANewerHoldExpired", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				alice := f.book(e, "alice", "A-A-1", "A-A-2")
				f.release(f.book(e, "bob", "A-A-2"), boxoffice.BookingExpired)
				return alice
			}},
			{"ANewerHoldOnOtherSeats", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				alice := f.book(e, "alice", "A-A-1", "A-A-2")
				f.book(e, "bob", "A-A-3", "B-A-1")
				return alice
			}},
			{"ANewerHoldOnTheSameSeatOfAnotherEvent", func(f *fixture, e *boxoffice.Event) *boxoffice.Booking {
				alice := f.book(e, "alice", "A-A-1", "A-A-2")
				f.book(f.createEvent(), "bob", "A-A-1", "A-A-2")
				return alice
			}},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				alice := tc.arrange(f, e)
				got, err := f.store.ConfirmBooking(f.ctx, f.confirmation(alice, t0.Add(2*time.Minute), "ok"))
				if err != nil {
					t.Fatalf("ConfirmBooking: %v", err)
				}
				if got.Status != boxoffice.BookingConfirmed || len(got.Tickets) != len(alice.SeatIDs) {
					t.Errorf("ConfirmBooking = %s with %d tickets, want confirmed with %d", got.Status, len(got.Tickets), len(alice.SeatIDs))
				}
				if diff := cmp.Diff(alice.SeatIDs, f.soldSeats(e.ID), sortedStrings); diff != "" {
					t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})
}

// confirmState is what a confirm can write, read back through the port.
type confirmState struct {
	Booking     *boxoffice.Booking
	Sold        []string
	Payments    []boxoffice.Payment
	Idempotency *boxoffice.IdempotencyRecord // nil when absent
}

// snapshot reads everything ConfirmBooking(c) could write on event eventID.
func (f *fixture) snapshot(eventID boxoffice.ID, c boxoffice.ConfirmBooking) confirmState {
	f.t.Helper()
	st := confirmState{Booking: f.booking(c.BookingID), Sold: f.soldSeats(eventID), Payments: f.payments()}
	if c.Idempotency != nil {
		r, err := f.store.Idempotency(f.ctx, c.Idempotency.UserID, c.Idempotency.Key)
		switch boxoffice.ErrorCode(err) {
		case "":
			st.Idempotency = r
		case boxoffice.ENOTFOUND:
		default:
			f.t.Fatalf("Idempotency: %v", err)
		}
	}
	return st
}
