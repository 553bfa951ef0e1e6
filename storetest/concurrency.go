package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// racers is how many goroutines the concurrency tests start at once.
const racers = 16

func (s suite) confirmConcurrency(t *testing.T) {
	s.test(t, "ConcurrentConfirmsOfRivalBookingsSellASeatOnce", func(t *testing.T, f *fixture) {
		// The lock layer was bypassed (a failover, a fence counter reset):
		// 16 users each hold the same seat under the same fence, plus a
		// seat of their own. The database alone must let exactly one of
		// them buy it, and a loser must not get its own seat either.
		e := f.newEvent()
		e.Sections = []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: 5, SeatsPerRow: 20}}
		if err := f.store.CreateEvent(f.ctx, e); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		seats := e.Seats()
		const rounds = 5
		var sold []string
		for round := range rounds {
			base := round * (racers + 1)
			contested := seats[base].ID
			fence := f.nextFence()
			bookings := make([]*boxoffice.Booking, racers)
			for i := range bookings {
				b := f.newBooking(e, fmt.Sprintf("user-%d", i), contested, seats[base+1+i].ID)
				b.Fence = fence
				f.createBooking(b)
				bookings[i] = b
			}
			results := f.confirmAll(bookings, func(i int) boxoffice.ConfirmBooking {
				return f.confirmation(bookings[i], t0.Add(time.Minute), "race")
			})

			winners := 0
			for i, r := range results {
				switch boxoffice.ErrorCode(r.err) {
				case "":
					winners++
					sold = append(sold, bookings[i].SeatIDs...)
				case boxoffice.ESEATTAKEN:
					if b := f.booking(bookings[i].ID); b.Status != boxoffice.BookingPending || len(b.Tickets) != 0 {
						t.Errorf("round %d: loser %d is %s with %d tickets, want pending with none", round, i, b.Status, len(b.Tickets))
					}
				default:
					t.Errorf("round %d: confirm %d: %v, want success or %s", round, i, r.err, boxoffice.ESEATTAKEN)
				}
			}
			if winners != 1 {
				t.Fatalf("round %d: %d confirms succeeded, want exactly 1", round, winners)
			}
		}
		if diff := cmp.Diff(sold, f.soldSeats(e.ID), sortedStrings); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
		if ps := f.payments(); len(ps) != rounds {
			t.Errorf("%d payments recorded, want %d (one a round)", len(ps), rounds)
		}
	})

	s.test(t, "ConcurrentConfirmsWithRisingFencesSellASeatOnceToTheNewestHold", func(t *testing.T, f *fixture) {
		// Each hold on the seat was granted after the previous one lost
		// it, so each has a larger fence. Only the newest may buy it,
		// whichever confirm runs first.
		e := f.createEvent()
		bookings := make([]*boxoffice.Booking, racers)
		for i := range bookings {
			bookings[i] = f.book(e, fmt.Sprintf("user-%d", i), "A-B-5")
		}
		newest := bookings[racers-1]
		results := f.confirmAll(bookings, func(i int) boxoffice.ConfirmBooking {
			return f.confirmation(bookings[i], t0.Add(time.Minute), "race")
		})
		for i, r := range results {
			code := boxoffice.ErrorCode(r.err)
			switch {
			case bookings[i] == newest && code != "":
				t.Errorf("the newest hold's confirm: %v, want success", r.err)
			case bookings[i] != newest && code != boxoffice.EHOLDLOST && code != boxoffice.ESEATTAKEN:
				t.Errorf("confirm %d (an older hold): %v, want %s or %s", i, r.err, boxoffice.EHOLDLOST, boxoffice.ESEATTAKEN)
			}
		}
		if diff := cmp.Diff([]string{"A-B-5"}, f.soldSeats(e.ID)); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
		if got := f.booking(newest.ID); got.Status != boxoffice.BookingConfirmed {
			t.Errorf("newest booking is %s, want confirmed", got.Status)
		}
	})

	s.test(t, "ConcurrentConfirmsOfOneBookingConfirmItOnce", func(t *testing.T, f *fixture) {
		// Retries of one confirm racing each other, each with its own
		// authorization: one wins, the rest are told the booking is
		// confirmed and can see it was not their payment.
		e := f.createEvent()
		b := f.book(e, "alice", "A-A-1", "A-A-2", "A-A-3")
		attempts := make([]*boxoffice.Booking, racers)
		for i := range attempts {
			attempts[i] = b
		}
		confirmations := make([]boxoffice.ConfirmBooking, racers)
		for i := range confirmations {
			confirmations[i] = f.confirmation(b, t0.Add(time.Minute), fmt.Sprint("try-", i))
		}
		results := f.confirmAll(attempts, func(i int) boxoffice.ConfirmBooking { return confirmations[i] })

		final := f.booking(b.ID)
		if final.Status != boxoffice.BookingConfirmed || len(final.Tickets) != len(b.SeatIDs) {
			t.Fatalf("booking is %s with %d tickets, want confirmed with %d", final.Status, len(final.Tickets), len(b.SeatIDs))
		}
		won := 0
		for i, r := range results {
			if r.err != nil {
				t.Errorf("confirm %d: %v, want the confirmed booking", i, r.err)
				continue
			}
			if diff := cmp.Diff(final, r.booking, opts); diff != "" {
				t.Errorf("confirm %d returned (-stored +returned):\n%s", i, diff)
			}
			if r.booking.PaymentAuthID == confirmations[i].Payment.AuthID {
				won++
			}
		}
		if won != 1 {
			t.Errorf("%d confirms see their own authorization recorded, want exactly 1", won)
		}
		if ps := f.payments(); len(ps) != 1 || ps[0].AuthID != final.PaymentAuthID {
			t.Errorf("payments = %+v, want only %q", ps, final.PaymentAuthID)
		}
	})
}

type confirmResult struct {
	booking *boxoffice.Booking
	err     error
}

// confirmAll confirms bookings[i] with confirmation(i), all at once from
// one goroutine each, and returns the results in bookings' order. The
// confirmations are built before the goroutines start.
func (f *fixture) confirmAll(bookings []*boxoffice.Booking, confirmation func(i int) boxoffice.ConfirmBooking) []confirmResult {
	cs := make([]boxoffice.ConfirmBooking, len(bookings))
	for i := range cs {
		cs[i] = confirmation(i)
	}
	results := make([]confirmResult, len(bookings))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range bookings {
		wg.Go(func() {
			<-start
			b, err := f.store.ConfirmBooking(f.ctx, cs[i])
			results[i] = confirmResult{b, err}
		})
	}
	close(start)
	wg.Wait()
	return results
}
