package postgres_test

import (
	"context"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// One batch of the confirms' group commit holds a confirm of every kind:
// each gets the answer it would get alone, and only the winners write.
func TestConfirmBookingsAnswerEachAsAlone(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	e := createEvent(t, s, 1, 20, 8)
	other := createEvent(t, s, 1, 20, 8)
	named := func(b *boxoffice.Booking) boxoffice.ConfirmBooking {
		c := confirmation(b)
		c.EventID = b.EventID
		return c
	}
	confirmAlone := func(b *boxoffice.Booking) {
		t.Helper()
		if _, err := s.ConfirmBooking(ctx, confirmation(b)); err != nil {
			t.Fatal(err)
		}
	}

	okAlice := createBooking(t, s, e, "alice", 1, seat(2), seat(1))
	okBob := createBooking(t, s, e, "bob", 1, seat(3))
	released := createBooking(t, s, e, "carol", 1, seat(4))
	if _, err := s.ReleaseBooking(ctx, released.ID, boxoffice.BookingReleased, t0); err != nil {
		t.Fatal(err)
	}
	forged := createBooking(t, s, e, "dave", 1, seat(5))
	superseded := createBooking(t, s, e, "erin", 1, seat(6))
	createBooking(t, s, e, "frank", 2, seat(6)) // the lock layer handed seat 6 on
	sold := createBooking(t, s, e, "gina", 1, seat(7))
	confirmAlone(createBooking(t, s, e, "hank", 2, seat(7))) // and seat 7 was paid for
	unknown := booking(e, "ivy", 1, seat(12))                // never written
	paid := createBooking(t, s, e, "ivan", 1, seat(8))
	confirmAlone(paid)
	judy1 := createBooking(t, s, e, "judy", 1, seat(9))
	judy2 := createBooking(t, s, e, "judy", 1, seat(10))
	twice := createBooking(t, s, e, "kim", 1, seat(11))
	keyUsed := createBooking(t, s, e, "lena", 1, seat(13))

	key := func(c boxoffice.ConfirmBooking, user, k string) boxoffice.ConfirmBooking {
		c.Idempotency = &boxoffice.IdempotencyRecord{UserID: user, Key: k, RequestHash: "h", Outcome: boxoffice.OutcomeConfirmed,
			Body: []byte(`{}`), CreatedAt: t0, ExpiresAt: t0.Add(24 * 60 * 60 * 1e9)}
		return c
	}
	cs := []boxoffice.ConfirmBooking{
		key(named(okAlice), "alice", "a"),
		named(okBob),
		named(released),
		func() boxoffice.ConfirmBooking { c := named(forged); c.Fence++; return c }(),
		named(superseded),
		named(sold),
		named(unknown),
		named(paid),
		key(named(judy1), "judy", "same"),
		key(named(judy2), "judy", "same"),
		named(twice),
		named(twice),
		func() boxoffice.ConfirmBooking { c := named(okBob); c.EventID = other.ID; return c }(),
		key(named(keyUsed), "lena", "used"),
	}
	if err := s.PutIdempotency(ctx, cs[len(cs)-1].Idempotency); err != nil {
		t.Fatal(err)
	}
	want := []string{"", "", boxoffice.ECONFLICT, boxoffice.EHOLDLOST, boxoffice.EHOLDLOST, boxoffice.ESEATTAKEN,
		boxoffice.ENOTFOUND, "", "", boxoffice.EIDEMINFLIGHT, "", "", boxoffice.ENOTFOUND, boxoffice.EIDEMINFLIGHT}
	got, errs, err := s.ConfirmBookings(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		if code := boxoffice.ErrorCode(errs[i]); errs[i] != nil && code != want[i] || errs[i] == nil && want[i] != "" {
			t.Errorf("confirm %d: %v, want %q", i, errs[i], want[i])
			continue
		}
		if want[i] != "" {
			continue
		}
		if got[i].Status != boxoffice.BookingConfirmed || len(got[i].Tickets) != len(got[i].SeatIDs) {
			t.Errorf("confirm %d: %+v, want confirmed with a ticket per seat", i, got[i])
			continue
		}
		for k, tk := range got[i].Tickets {
			if tk.SeatID != got[i].SeatIDs[k] {
				t.Errorf("confirm %d: tickets %v not in the booking's seat order %v", i, got[i].Tickets, got[i].SeatIDs)
			}
		}
	}
	if e, ok := errs[4].(*boxoffice.Error); !ok || len(e.Seats) != 1 || e.Seats[0] != seat(6) {
		t.Errorf("superseded: %v, want seat %s named", errs[4], seat(6))
	}
	if e, ok := errs[5].(*boxoffice.Error); !ok || len(e.Seats) != 1 || e.Seats[0] != seat(7) {
		t.Errorf("sold: %v, want seat %s named", errs[5], seat(7))
	}
	// The booking asked twice: the second call finds it confirmed by the
	// first and is answered with that confirmation.
	if got[10] != nil && got[11] != nil && got[11].PaymentAuthID != got[10].PaymentAuthID {
		t.Errorf("booking confirmed twice: auth %s, then %s", got[10].PaymentAuthID, got[11].PaymentAuthID)
	}
	if got[7] != nil && got[7].PaymentAuthID != confirmation(paid).Payment.AuthID {
		t.Errorf("an already confirmed booking came back with auth %s", got[7].PaymentAuthID)
	}

	// Only the winners wrote: tickets and payments of alice (2 seats), bob,
	// judy's first, kim, and the two paid alone before (hank, ivan).
	var tickets, payments, keys int
	if err := s.Pool().QueryRow(ctx, `SELECT
		(SELECT count(*) FROM tickets WHERE event_id = $1 AND status = 'valid'),
		(SELECT count(*) FROM payments WHERE event_id = $1),
		(SELECT count(*) FROM idempotency_keys WHERE user_id IN ('alice', 'judy'))`, int64(e.ID)).
		Scan(&tickets, &payments, &keys); err != nil {
		t.Fatal(err)
	}
	if tickets != 7 || payments != 6 || keys != 2 {
		t.Errorf("%d tickets, %d payments, %d idempotency records written; want 7, 6, 2", tickets, payments, keys)
	}
	for _, b := range []*boxoffice.Booking{released, forged, superseded, sold, judy2, keyUsed} {
		if got, err := s.Booking(ctx, b.ID); err != nil || got.Status == boxoffice.BookingConfirmed {
			t.Errorf("booking %s: %v, %v; want it left as it was", b.ID, got, err)
		}
	}
}
