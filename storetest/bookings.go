package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

func (s suite) bookings(t *testing.T) {
	s.test(t, "CreateBookingThenBookingReturnsItPending", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		lisbon := time.FixedZone("WEST", 3600)
		// Seats out of layout order: the store keeps the user's order.
		b := f.newBooking(e, "alice", "B-A-3", "A-A-1", "A-C-7")
		b.CreatedAt = time.Date(2030, 6, 1, 19, 0, 0, 250_999_999, lisbon)
		b.UpdatedAt = b.CreatedAt
		b.HeldUntil = b.CreatedAt.Add(hold)
		f.createBooking(b)
		if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "BookingUnknownIsNotFound", func(t *testing.T, f *fixture) {
		f.book(f.createEvent(), "alice", "A-A-1")
		_, err := f.store.Booking(f.ctx, 424242)
		wantCode(t, "Booking(unknown)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "CreateBookingForUnknownEventIsNotFound", func(t *testing.T, f *fixture) {
		e := f.newEvent() // never saved
		b := f.newBooking(e, "alice", "A-A-1")
		err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: f.idem("alice", "k1")})
		wantCode(t, "CreateBooking", err, boxoffice.ENOTFOUND)
		f.wantNoBooking(b.ID)
		f.wantNoIdempotency("alice", "k1")
	})

	s.test(t, "CreateBookingOfSeatNotInLayoutIsInvalid", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.newBooking(e, "alice", "A-A-1", "A-A-2")
		b.SeatIDs = []string{"A-A-1", "Q-Z-99"}
		err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: f.idem("alice", "k1")})
		wantCode(t, "CreateBooking", err, boxoffice.EINVALID)
		f.wantNoBooking(b.ID)
		f.wantNoIdempotency("alice", "k1")
		// Nothing of the refused booking counts against the limit.
		f.book(e, "alice", "A-A-1")
	})

	s.test(t, "CreateBookingOfASoldSeatIsSeatTakenNamingIt", func(t *testing.T, f *fixture) {
		// The lock layer forgets a sold seat once its hold runs out; the
		// store remembers.
		e := f.createEvent()
		f.confirm(f.book(e, "bob", "A-A-3", "A-A-1"))
		f.release(f.book(e, "carol", "A-A-2"), boxoffice.BookingReleased) // held once, never sold
		b := f.newBooking(e, "alice", "A-A-1", "A-A-2", "A-A-3")
		err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: f.idem("alice", "k1")})
		wantCode(t, "CreateBooking", err, boxoffice.ESEATTAKEN)
		if diff := cmp.Diff([]string{"A-A-1", "A-A-3"}, boxoffice.ErrorSeats(err), sortedStrings); diff != "" {
			t.Errorf("ErrorSeats mismatch (-want +got):\n%s", diff)
		}
		f.wantNoBooking(b.ID)
		f.wantNoIdempotency("alice", "k1")
		f.book(e, "alice", "A-A-2") // the seat never sold is free
	})

	s.test(t, "CreateBookingWithTakenIDIsConflict", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		first := f.book(e, "alice", "A-A-1")
		again := f.newBooking(e, "bob", "A-A-2")
		again.ID = first.ID
		err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: again, TicketLimit: 8})
		wantCode(t, "CreateBooking(same id)", err, boxoffice.ECONFLICT)
		if diff := cmp.Diff(stored(first), f.booking(first.ID), opts); diff != "" {
			t.Errorf("the first booking changed (-want +got):\n%s", diff)
		}
	})

	s.test(t, "CreateBookingWritesItsIdempotencyRecord", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.newBooking(e, "alice", "A-A-1")
		rec := f.idem("alice", "reserve-1")
		rec.Body = []byte(`{"booking_id":"` + b.ID.String() + `"}`)
		if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: rec}); err != nil {
			t.Fatalf("CreateBooking: %v", err)
		}
		f.wantIdempotency(rec)
		f.booking(b.ID)
	})

	s.test(t, "CreateBookingWithUsedIdempotencyKeyIsInFlightAndWritesNothing", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		first := f.newBooking(e, "alice", "A-A-1")
		rec := f.idem("alice", "reserve-1")
		if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: first, TicketLimit: 8, Idempotency: rec}); err != nil {
			t.Fatalf("CreateBooking: %v", err)
		}
		second := f.newBooking(e, "alice", "A-A-2")
		retry := f.idem("alice", "reserve-1")
		retry.RequestHash, retry.Body = "another-request", []byte("other")
		err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: second, TicketLimit: 8, Idempotency: retry})
		wantCode(t, "CreateBooking(same key)", err, boxoffice.EIDEMINFLIGHT)
		f.wantNoBooking(second.ID)
		f.wantIdempotency(rec)
		if diff := cmp.Diff(stored(first), f.booking(first.ID), opts); diff != "" {
			t.Errorf("the first booking changed (-want +got):\n%s", diff)
		}
	})

	s.test(t, "CreateBookingIdempotencyKeysAreScopedToTheUser", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		for _, u := range []struct{ user, seat string }{{"alice", "A-A-1"}, {"bob", "A-A-2"}} {
			b := f.newBooking(e, u.user, u.seat)
			rec := f.idem(u.user, "same-key")
			if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: rec}); err != nil {
				t.Fatalf("CreateBooking(%s): %v", u.user, err)
			}
			f.wantIdempotency(rec)
		}
	})
}

// priorBooking is a booking made before the one under test, in a state.
type priorBooking struct {
	user       string
	seats      int
	state      string // live, confirmed, lapsed, endsNow, released, expired, cancelled, listed, resold, bought, buying
	otherEvent bool
}

func (s suite) ticketLimit(t *testing.T) {
	t.Run("CreateBookingTicketLimit", func(t *testing.T) {
		// alice asks for seats seats with the given limit, after the prior
		// bookings. Her valid tickets for the event (listed or not, bought
		// from the box office or on resale) and the seats of her live
		// pending bookings (resale purchases too) count; a hold that ran
		// out (even one not yet marked expired), released, expired and
		// cancelled bookings, tickets she resold, other users and other
		// events don't.
		tests := []struct {
			name  string
			prior []priorBooking
			seats int
			limit int
			want  string
		}{
			{"UpToTheLimit", nil, 4, 4, ""},
			{"OverTheLimit", nil, 5, 4, boxoffice.ELIMIT},
			{"LivePendingCounts", []priorBooking{{"alice", 3, "live", false}}, 2, 4, boxoffice.ELIMIT},
			{"ConfirmedCounts", []priorBooking{{"alice", 3, "confirmed", false}}, 2, 4, boxoffice.ELIMIT},
			{"LiveAndConfirmedAddUp", []priorBooking{{"alice", 2, "live", false}, {"alice", 1, "confirmed", false}}, 2, 4, boxoffice.ELIMIT},
			{"LiveAndConfirmedReachingTheLimit", []priorBooking{{"alice", 2, "live", false}, {"alice", 1, "confirmed", false}}, 1, 4, ""},
			{"LapsedHoldDoesNotCount", []priorBooking{{"alice", 3, "lapsed", false}}, 4, 4, ""},
			{"HoldEndingNowDoesNotCount", []priorBooking{{"alice", 3, "endsNow", false}}, 4, 4, ""},
			{"ReleasedDoesNotCount", []priorBooking{{"alice", 3, "released", false}}, 4, 4, ""},
			{"ExpiredDoesNotCount", []priorBooking{{"alice", 3, "expired", false}}, 4, 4, ""},
			{"OtherUsersDoNotCount", []priorBooking{{"bob", 4, "confirmed", false}, {"bob", 4, "live", false}}, 4, 4, ""},
			{"OtherEventsDoNotCount", []priorBooking{{"alice", 4, "confirmed", true}, {"alice", 4, "live", true}}, 4, 4, ""},
			{"CancelledDoesNotCount", []priorBooking{{"alice", 3, "cancelled", false}}, 4, 4, ""},
			{"ListedTicketsCount", []priorBooking{{"alice", 3, "listed", false}}, 2, 4, boxoffice.ELIMIT},
			{"ResoldTicketsDoNotCount", []priorBooking{{"alice", 3, "resold", false}}, 4, 4, ""},
			{"TicketsBoughtOnResaleCount", []priorBooking{{"alice", 3, "bought", false}}, 2, 4, boxoffice.ELIMIT},
			{"TicketsBoughtOnResaleReachingTheLimit", []priorBooking{{"alice", 3, "bought", false}}, 1, 4, ""},
			{"ALiveResalePurchaseCounts", []priorBooking{{"alice", 1, "buying", false}}, 4, 4, boxoffice.ELIMIT},
			{"TicketsResoldByOthersToOthersDoNotCount", []priorBooking{{"bob", 3, "resold", false}}, 4, 4, ""},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e, other := f.createEvent(), f.createEvent()
				seats := e.Seats()
				next := 0
				take := func(n int) []string {
					var ids []string
					for range n {
						ids = append(ids, seats[next].ID)
						next++
					}
					return ids
				}
				for _, p := range tc.prior {
					ev := e
					if p.otherEvent {
						ev = other
					}
					owner := p.user
					if p.state == "bought" || p.state == "buying" {
						owner = "seller-" + p.user // p.user buys the tickets on resale
					}
					b := f.newBooking(ev, owner, take(p.seats)...)
					b.CreatedAt = t0.Add(-5 * time.Minute)
					switch p.state {
					case "lapsed":
						b.CreatedAt, b.HeldUntil = t0.Add(-15*time.Minute), t0.Add(-5*time.Minute)
					case "endsNow":
						b.CreatedAt, b.HeldUntil = t0.Add(-hold), t0
					}
					b.UpdatedAt = b.CreatedAt
					f.createBooking(b)
					switch p.state {
					case "released", "expired":
						f.release(b, boxoffice.BookingStatus(p.state))
					case "confirmed", "cancelled", "listed", "resold", "bought", "buying":
						sold, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, t0.Add(-time.Minute), "prior"))
						if err != nil {
							t.Fatalf("ConfirmBooking(prior): %v", err)
						}
						for _, tk := range sold.Tickets {
							switch p.state {
							case "listed":
								f.list(tk, 100)
							case "resold":
								f.resell(f.list(tk, 100), "zed")
							case "bought":
								f.resell(f.list(tk, 100), p.user)
							case "buying":
								pb := f.newPurchase(f.list(tk, 100), p.user)
								pb.CreatedAt, pb.UpdatedAt, pb.HeldUntil = b.CreatedAt, b.CreatedAt, t0.Add(time.Minute)
								f.createBooking(pb)
							}
						}
						if p.state == "cancelled" {
							f.cancel(sold)
						}
					}
				}

				b := f.newBooking(e, "alice", take(tc.seats)...)
				rec := f.idem("alice", "reserve")
				err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: tc.limit, Idempotency: rec})
				wantCode(t, "CreateBooking", err, tc.want)
				if tc.want != "" {
					f.wantNoBooking(b.ID)
					f.wantNoIdempotency("alice", "reserve")
					return
				}
				if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
					t.Errorf("Booking mismatch (-want +got):\n%s", diff)
				}
				f.wantIdempotency(rec)
			})
		}
	})

	t.Run("CreateBookingRacingPastTheLimit", func(t *testing.T) {
		// 16 parallel requests of one user, each for its own seats: the
		// limit is checked inside the transaction, so the seats booked
		// never add up to more than the limit, and every request refused is
		// refused for the limit.
		for _, seatsEach := range []int{1, 2, 3} {
			s.test(t, fmt.Sprintf("%dSeatsEach", seatsEach), func(t *testing.T, f *fixture) {
				const (
					requests = 16
					limit    = 5
				)
				e := f.createEvent()
				seats := e.Seats()
				bookings := make([]*boxoffice.Booking, requests)
				for i := range bookings {
					var ids []string
					for j := range seatsEach {
						ids = append(ids, seats[i*seatsEach+j].ID)
					}
					bookings[i] = f.newBooking(e, "alice", ids...)
				}
				errs := make([]error, requests)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i, b := range bookings {
					wg.Go(func() {
						<-start
						errs[i] = f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: limit})
					})
				}
				close(start)
				wg.Wait()

				booked := 0
				for i, err := range errs {
					switch boxoffice.ErrorCode(err) {
					case "":
						booked += len(f.booking(bookings[i].ID).SeatIDs)
					case boxoffice.ELIMIT:
						f.wantNoBooking(bookings[i].ID)
					default:
						t.Errorf("request %d: %v, want success or %s", i, err, boxoffice.ELIMIT)
					}
				}
				if want := limit / seatsEach * seatsEach; booked != want {
					t.Errorf("%d seats booked, want %d (limit %d, %d a request)", booked, want, limit, seatsEach)
				}
			})
		}
	})
}

// idem returns an idempotency record of user for key, created at t0.
func (f *fixture) idem(user, key string) *boxoffice.IdempotencyRecord {
	return &boxoffice.IdempotencyRecord{
		UserID:      user,
		Key:         key,
		RequestHash: "sha256:" + user + ":" + key,
		Outcome:     boxoffice.OutcomeHeld,
		Body:        []byte(`{"ok":true}`),
		CreatedAt:   t0,
		ExpiresAt:   t0.Add(24 * time.Hour),
	}
}

// wantIdempotency fails unless the store holds exactly r.
func (f *fixture) wantIdempotency(r *boxoffice.IdempotencyRecord) {
	f.t.Helper()
	got, err := f.store.Idempotency(f.ctx, r.UserID, r.Key)
	if err != nil {
		f.t.Fatalf("Idempotency(%s, %s): %v", r.UserID, r.Key, err)
	}
	want := *r
	want.CreatedAt, want.ExpiresAt = ms(r.CreatedAt), ms(r.ExpiresAt)
	if diff := cmp.Diff(&want, got, opts); diff != "" {
		f.t.Errorf("Idempotency(%s, %s) mismatch (-want +got):\n%s", r.UserID, r.Key, diff)
	}
}

// wantNoIdempotency fails unless (user, key) has no record.
func (f *fixture) wantNoIdempotency(user, key string) {
	f.t.Helper()
	_, err := f.store.Idempotency(f.ctx, user, key)
	wantCode(f.t, "Idempotency("+user+", "+key+")", err, boxoffice.ENOTFOUND)
}

// wantNoBooking fails unless id names no booking.
func (f *fixture) wantNoBooking(id boxoffice.ID) {
	f.t.Helper()
	_, err := f.store.Booking(f.ctx, id)
	wantCode(f.t, fmt.Sprintf("Booking(%d)", id), err, boxoffice.ENOTFOUND)
}
