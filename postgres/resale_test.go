package postgres_test

// Races between resale, check-in and cancellation, each side through a
// pool of its own (two processes, as far as the database can tell). They
// pin the package's lock order (booking, ticket, listing): whichever side
// commits first, the other sees it, and the state stays whole.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/postgres"
)

const raceRounds = 20

// race runs a and b at the same moment and returns their errors.
func race(a, b func() error) (errA, errB error) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { <-start; errA = a() })
	wg.Go(func() { <-start; errB = b() })
	close(start)
	wg.Wait()
	return errA, errB
}

// sell books seat for user and confirms it; it returns the booking with
// its ticket.
func sell(tb testing.TB, s *postgres.Store, e *boxoffice.Event, user string, fence int64, seat string) *boxoffice.Booking {
	tb.Helper()
	b, err := s.ConfirmBooking(context.Background(), confirmation(createBooking(tb, s, e, user, fence, seat)))
	if err != nil {
		tb.Fatalf("ConfirmBooking: %v", err)
	}
	return b
}

// list lists t by its holder at t0 plus two minutes.
func list(tb testing.TB, s *postgres.Store, t boxoffice.Ticket) *boxoffice.Listing {
	tb.Helper()
	at := t0.Add(2 * time.Minute)
	l := &boxoffice.Listing{ID: newID(), TicketID: t.ID, SellerID: t.UserID, PriceCents: 9000, CreatedAt: at, UpdatedAt: at}
	if err := s.CreateListing(context.Background(), l, nil); err != nil {
		tb.Fatalf("CreateListing: %v", err)
	}
	return l
}

func TestCheckInRacesResaleConfirm(t *testing.T) {
	u := freshSchema(t)
	s1, s2 := openStore(t, u), openStore(t, u)
	ctx := context.Background()
	e := createEvent(t, s1, 1, raceRounds, raceRounds)
	for i := range raceRounds {
		sale := sell(t, s1, e, "alice", int64(2*i+1), seat(i+1))
		l := list(t, s1, sale.Tickets[0])
		buy := booking(e, "bob", int64(2*i+2), seat(i+1))
		buy.ListingID, buy.AmountCents = l.ID, l.PriceCents
		if err := s1.CreateBooking(ctx, boxoffice.NewBooking{Booking: buy, TicketLimit: raceRounds}); err != nil {
			t.Fatalf("CreateBooking(purchase): %v", err)
		}
		c := confirmation(buy)
		code := sale.Tickets[0].Code
		confirmErr, checkInErr := race(
			func() error { _, err := s1.ConfirmBooking(ctx, c); return err },
			func() error { _, err := s2.CheckIn(ctx, 0, code, t0.Add(3*time.Minute)); return err },
		)

		seller, err := s1.Ticket(ctx, sale.Tickets[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s1.Listing(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case confirmErr == nil && boxoffice.ErrorCode(checkInErr) == boxoffice.ETICKETVOID:
			if seller.Status != boxoffice.TicketVoid || got.Status != boxoffice.ListingSold {
				t.Errorf("round %d: the resale won, but the seller's ticket is %s and the listing %s", i, seller.Status, got.Status)
			}
		case checkInErr == nil && boxoffice.ErrorCode(confirmErr) == boxoffice.ECONFLICT:
			if seller.Status != boxoffice.TicketValid || seller.CheckedInAt.IsZero() || got.Status != boxoffice.ListingVoid {
				t.Errorf("round %d: the check-in won, but the seller's ticket is %s (checked in %v) and the listing %s",
					i, seller.Status, seller.CheckedInAt, got.Status)
			}
		default:
			t.Errorf("round %d: confirm = %v, check-in = %v; want exactly one to succeed", i, confirmErr, checkInErr)
		}
	}
	sold, err := s1.SoldSeats(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sold) != raceRounds {
		t.Errorf("%d seats sold, want %d: one valid ticket each", len(sold), raceRounds)
	}
}

// TestCancelRacesCreateListing: a listing created while a cancellation
// waits for the ticket's lock is seen by the cancellation (it reads the
// listings after the lock), so a cancelled booking never leaves an active
// listing of a void ticket behind.
func TestCancelRacesCreateListing(t *testing.T) {
	u := freshSchema(t)
	s1, s2 := openStore(t, u), openStore(t, u)
	ctx := context.Background()
	e := createEvent(t, s1, 1, raceRounds, raceRounds)
	for i := range raceRounds {
		sale := sell(t, s1, e, "alice", int64(i+1), seat(i+1))
		tk := sale.Tickets[0]
		l := &boxoffice.Listing{ID: newID(), TicketID: tk.ID, SellerID: tk.UserID, PriceCents: 9000, CreatedAt: t0, UpdatedAt: t0}
		cancelErr, listErr := race(
			func() error {
				_, err := s1.CancelBooking(ctx, boxoffice.CancelBooking{BookingID: sale.ID, Now: t0.Add(2 * time.Minute)})
				return err
			},
			func() error { return s2.CreateListing(ctx, l, nil) },
		)
		switch {
		case cancelErr == nil && boxoffice.ErrorCode(listErr) == boxoffice.ENOTFOUND:
		case listErr == nil && boxoffice.ErrorCode(cancelErr) == boxoffice.ECONFLICT:
		default:
			t.Errorf("round %d: cancel = %v, listing = %v; want exactly one to succeed", i, cancelErr, listErr)
		}
		ls, err := s1.EventListings(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if got, err := s1.Ticket(ctx, l.TicketID); err != nil || got.Status != boxoffice.TicketValid {
				t.Errorf("round %d: active listing %d of ticket %+v (%v)", i, l.ID, got, err)
			}
		}
	}
}

// TestWithdrawRacesPurchase: a purchase and a withdrawal of one listing,
// at once: the listing row's lock lets exactly one through.
func TestWithdrawRacesPurchase(t *testing.T) {
	u := freshSchema(t)
	s1, s2 := openStore(t, u), openStore(t, u)
	ctx := context.Background()
	e := createEvent(t, s1, 1, raceRounds, raceRounds)
	for i := range raceRounds {
		sale := sell(t, s1, e, "alice", int64(2*i+1), seat(i+1))
		l := list(t, s1, sale.Tickets[0])
		buy := booking(e, fmt.Sprint("bob-", i), int64(2*i+2), seat(i+1))
		buy.ListingID, buy.AmountCents = l.ID, l.PriceCents
		buyErr, withdrawErr := race(
			func() error { return s1.CreateBooking(ctx, boxoffice.NewBooking{Booking: buy, TicketLimit: 8}) },
			func() error { _, err := s2.WithdrawListing(ctx, l.ID, "alice", t0); return err },
		)
		switch {
		case buyErr == nil && boxoffice.ErrorCode(withdrawErr) == boxoffice.ECONFLICT:
		case withdrawErr == nil && boxoffice.ErrorCode(buyErr) == boxoffice.ECONFLICT:
		default:
			t.Errorf("round %d: purchase = %v, withdrawal = %v; want exactly one to succeed", i, buyErr, withdrawErr)
		}
	}
}
