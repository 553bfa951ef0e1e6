package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// Promises of WaitlistStore and of waitlist offers pinned here:
//   - JoinWaitlist writes the entry waiting, with no offer and Offers 0,
//     and UpdatedAt = JoinedAt, whatever e says, and sets those fields on
//     e; a Quantity below 1 is EINVALID, a taken entry ID ECONFLICT; the
//     checks run in the order event (ENOTFOUND), idempotency key
//     (EIDEMINFLIGHT), live entry (ECONFLICT);
//   - UserWaitlist is newest first by entry ID, largest first, every
//     status; WaitlistAhead counts the event's waiting entries with a
//     smaller ID, whether or not entry id exists;
//   - LeaveWaitlist sets UpdatedAt = now, and ENOTFOUND for an unknown id;
//   - CreateBooking of an offer: an unknown entry is ENOTFOUND; the entry's
//     UpdatedAt becomes the booking's CreatedAt; the sold-seat check and
//     the ticket limit apply as to any booking;
//   - ConfirmBooking of an offer fulfils its entry (UpdatedAt = c.Now)
//     even if the user left meanwhile: they paid, the seats are theirs;
//     ReleaseBooking and ExpireBookings lapse it (UpdatedAt = now, the
//     cutoff) only if it is still offered.

func (s suite) waitlist(t *testing.T) {
	s.test(t, "JoinWaitlistWritesAWaitingEntry", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		w := f.newEntry(e, "alice", 3)
		w.Section, w.PriceTier = "A", "gold"
		w.JoinedAt = t0.Add(123_456_789).In(time.FixedZone("WEST", 3600))
		// The store's to set, whatever the caller says.
		w.Status, w.Offers, w.BookingID, w.UpdatedAt = boxoffice.WaitlistOffered, 5, 77, time.Time{}
		rec := f.idem("alice", "join")
		if err := f.store.JoinWaitlist(f.ctx, w, rec); err != nil {
			t.Fatalf("JoinWaitlist: %v", err)
		}
		want := &boxoffice.WaitlistEntry{
			ID: w.ID, EventID: e.ID, UserID: "alice", Section: "A", PriceTier: "gold", Quantity: 3,
			Status: boxoffice.WaitlistWaiting, JoinedAt: ms(w.JoinedAt), UpdatedAt: ms(w.JoinedAt),
		}
		if diff := cmp.Diff(want, storedEntry(w), opts); diff != "" {
			t.Errorf("the entry as JoinWaitlist left it (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.entry(w.ID), opts); diff != "" {
			t.Errorf("WaitlistEntry mismatch (-want +got):\n%s", diff)
		}
		f.wantIdempotency(rec)
	})

	t.Run("JoinWaitlistRefuses", func(t *testing.T) {
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry
			want    string
		}{
			{"AnUnknownEventIsNotFound", func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry {
				return f.newEntry(f.newEvent(), "alice", 2)
			}, boxoffice.ENOTFOUND},
			{"AWaitingEntryOfTheUserIsConflict", func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry {
				f.join(e, "alice")
				return f.newEntry(e, "alice", 1)
			}, boxoffice.ECONFLICT},
			{"AnOfferedEntryOfTheUserIsConflict", func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry {
				f.offer(f.join(e, "alice"), e, "A-A-1")
				return f.newEntry(e, "alice", 1)
			}, boxoffice.ECONFLICT},
			{"ATakenEntryIDIsConflict", func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry {
				first := f.join(e, "bob")
				w := f.newEntry(e, "alice", 2)
				w.ID = first.ID
				return w
			}, boxoffice.ECONFLICT},
			{"NoQuantityIsInvalid", func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry {
				return f.newEntry(e, "alice", 0)
			}, boxoffice.EINVALID},
			{"ATakenIdempotencyKeyIsInFlight", func(f *fixture, e *boxoffice.Event) *boxoffice.WaitlistEntry {
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "join")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				return f.newEntry(e, "alice", 2)
			}, boxoffice.EIDEMINFLIGHT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				w := tc.arrange(f, e)
				before := f.userWaitlist("alice")
				prior, priorErr := f.store.WaitlistEntry(f.ctx, w.ID)
				rec := f.idem("alice", "join")
				rec.RequestHash = "the join"
				err := f.store.JoinWaitlist(f.ctx, w, rec)
				wantCode(t, "JoinWaitlist", err, tc.want)
				if diff := cmp.Diff(before, f.userWaitlist("alice"), opts); diff != "" {
					t.Errorf("a refused join changed UserWaitlist (-before +after):\n%s", diff)
				}
				if priorErr == nil {
					if diff := cmp.Diff(prior, f.entry(w.ID), opts); diff != "" {
						t.Errorf("a refused join changed the entry with its ID (-before +after):\n%s", diff)
					}
				} else {
					_, err := f.store.WaitlistEntry(f.ctx, w.ID)
					wantCode(t, "WaitlistEntry(refused)", err, boxoffice.ENOTFOUND)
				}
				if tc.want == boxoffice.EIDEMINFLIGHT {
					f.wantIdempotency(f.idem("alice", "join"))
				} else {
					f.wantNoIdempotency("alice", "join")
				}
			})
		}
	})

	t.Run("JoinWaitlistAgainOnceTheEntryEnded", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			end  func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry)
		}{
			{"Left", func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry) { f.leave(w, t0.Add(time.Minute)) }},
			{"Lapsed", func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry) {
				f.release(f.offer(w, e, "A-A-1"), boxoffice.BookingExpired)
			}},
			{"Fulfilled", func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry) { f.confirm(f.offer(w, e, "A-A-1")) }},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				tc.end(f, e, f.join(e, "alice"))
				f.join(e, "alice")
			})
		}
	})

	s.test(t, "JoinWaitlistIsOneLiveEntryPerUserAndEvent", func(t *testing.T, f *fixture) {
		e, other := f.createEvent(), f.createEvent()
		f.join(e, "alice")
		f.join(other, "alice")
		f.join(e, "bob")
	})

	s.test(t, "WaitlistEntryUnknownIsNotFound", func(t *testing.T, f *fixture) {
		f.join(f.createEvent(), "alice")
		_, err := f.store.WaitlistEntry(f.ctx, 424242)
		wantCode(t, "WaitlistEntry(unknown)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "UserWaitlistListsTheUsersEntriesNewestFirst", func(t *testing.T, f *fixture) {
		e, other := f.createEvent(), f.createEvent()
		first := f.join(e, "alice")
		left := f.leave(first, t0.Add(time.Minute))
		f.join(e, "bob")
		second := f.join(other, "alice")
		third := f.join(e, "alice")
		want := []boxoffice.WaitlistEntry{*storedEntry(third), *storedEntry(second), *left}
		if diff := cmp.Diff(want, f.userWaitlist("alice"), opts); diff != "" {
			t.Errorf("UserWaitlist mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "LeaveWaitlistLeavesAWaitingEntry", func(t *testing.T, f *fixture) {
		w := f.join(f.createEvent(), "alice")
		now := t0.Add(time.Minute + 999_999)
		got, err := f.store.LeaveWaitlist(f.ctx, w.ID, now)
		if err != nil {
			t.Fatalf("LeaveWaitlist: %v", err)
		}
		want := storedEntry(w)
		want.Status, want.UpdatedAt = boxoffice.WaitlistLeft, ms(now)
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("LeaveWaitlist mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, f.entry(w.ID), opts); diff != "" {
			t.Errorf("WaitlistEntry mismatch (-want +got):\n%s", diff)
		}
		// Left before: returned as it is.
		again, err := f.store.LeaveWaitlist(f.ctx, w.ID, now.Add(time.Hour))
		if err != nil {
			t.Fatalf("LeaveWaitlist(again): %v", err)
		}
		if diff := cmp.Diff(want, again, opts); diff != "" {
			t.Errorf("LeaveWaitlist(again) mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "LeaveWaitlistLeavesAnOfferedEntryAndItsBookingToTheCaller", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		w := f.join(e, "alice")
		b := f.offer(w, e, "A-A-1", "A-A-2")
		got := f.leave(w, t0.Add(time.Minute))
		if got.Status != boxoffice.WaitlistLeft || got.BookingID != b.ID || got.Offers != 1 {
			t.Errorf("entry is %s with offer %d (%d offers), want left with offer %d (1)", got.Status, got.BookingID, got.Offers, b.ID)
		}
		if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
			t.Errorf("the offer's booking changed (-want +got):\n%s", diff)
		}
	})

	t.Run("LeaveWaitlistOfAnEndedEntryReturnsItAsItIs", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			end  func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry)
		}{
			{"Lapsed", func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry) {
				f.release(f.offer(w, e, "A-A-1"), boxoffice.BookingReleased)
			}},
			{"Fulfilled", func(f *fixture, e *boxoffice.Event, w *boxoffice.WaitlistEntry) { f.confirm(f.offer(w, e, "A-A-1")) }},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				w := f.join(e, "alice")
				tc.end(f, e, w)
				before := f.entry(w.ID)
				got, err := f.store.LeaveWaitlist(f.ctx, w.ID, t0.Add(time.Hour))
				if err != nil {
					t.Fatalf("LeaveWaitlist: %v", err)
				}
				if diff := cmp.Diff(before, got, opts); diff != "" {
					t.Errorf("LeaveWaitlist mismatch (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(before, f.entry(w.ID), opts); diff != "" {
					t.Errorf("WaitlistEntry changed (-before +after):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "LeaveWaitlistUnknownIsNotFound", func(t *testing.T, f *fixture) {
		_, err := f.store.LeaveWaitlist(f.ctx, 424242, t0)
		wantCode(t, "LeaveWaitlist(unknown)", err, boxoffice.ENOTFOUND)
	})

	// line makes seven entries on e, in join order: waiting but for
	// [2] (offered) and [4] (left), and one of another event between them.
	line := func(f *fixture, e *boxoffice.Event) []*boxoffice.WaitlistEntry {
		other := f.createEvent()
		var ws []*boxoffice.WaitlistEntry
		for i := range 7 {
			ws = append(ws, f.join(e, fmt.Sprint("user-", i)))
			if i == 3 {
				f.join(other, "user-x")
			}
		}
		f.offer(ws[2], e, "A-A-1")
		f.leave(ws[4], t0.Add(time.Minute))
		for _, i := range []int{0, 1, 3, 5, 6} {
			ws[i] = f.entry(ws[i].ID)
		}
		return ws
	}

	t.Run("WaitingEntriesListsWaitingEntriesInJoinOrder", func(t *testing.T) {
		tests := []struct {
			name  string
			after int // index of the entry to start after; -1 for none
			limit int
			want  []int
		}{
			{"All", -1, 10, []int{0, 1, 3, 5, 6}},
			{"UpToTheLimit", -1, 2, []int{0, 1}},
			{"AfterAnEntry", 1, 10, []int{3, 5, 6}},
			{"AfterAnEntryNotWaiting", 2, 2, []int{3, 5}},
			{"AfterTheLast", 6, 10, nil},
			{"NoLimit", -1, 0, nil},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				ws := line(f, e)
				var after boxoffice.ID
				if tc.after >= 0 {
					after = ws[tc.after].ID
				}
				got, err := f.store.WaitingEntries(f.ctx, e.ID, after, tc.limit)
				if err != nil {
					t.Fatalf("WaitingEntries: %v", err)
				}
				var want []boxoffice.WaitlistEntry
				for _, i := range tc.want {
					want = append(want, *ws[i])
				}
				if diff := cmp.Diff(want, got, opts); diff != "" {
					t.Errorf("WaitingEntries mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "WaitlistAheadCountsTheWaitingEntriesThatJoinedBefore", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		ws := line(f, e)
		for i, want := range []int{0, 1, 2, 2, 3, 3, 4} {
			got, err := f.store.WaitlistAhead(f.ctx, e.ID, ws[i].ID)
			if err != nil {
				t.Fatalf("WaitlistAhead: %v", err)
			}
			if got != want {
				t.Errorf("WaitlistAhead(entry %d) = %d, want %d", i, got, want)
			}
		}
	})

	s.test(t, "ConcurrentJoinsOfOneUserWriteOneEntry", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		entries := make([]*boxoffice.WaitlistEntry, racers)
		for i := range entries {
			entries[i] = f.newEntry(e, "alice", 1+i%4)
		}
		errs := make([]error, racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, w := range entries {
			wg.Go(func() {
				<-start
				errs[i] = f.store.JoinWaitlist(f.ctx, w, nil)
			})
		}
		close(start)
		wg.Wait()
		joined := 0
		for i, err := range errs {
			switch boxoffice.ErrorCode(err) {
			case "":
				joined++
			case boxoffice.ECONFLICT:
				_, err := f.store.WaitlistEntry(f.ctx, entries[i].ID)
				wantCode(t, "WaitlistEntry(refused)", err, boxoffice.ENOTFOUND)
			default:
				t.Errorf("join %d: %v, want success or %s", i, err, boxoffice.ECONFLICT)
			}
		}
		if joined != 1 {
			t.Errorf("%d joins succeeded, want exactly 1", joined)
		}
		if got := f.userWaitlist("alice"); len(got) != 1 {
			t.Errorf("UserWaitlist = %d entries, want 1", len(got))
		}
	})
}

// userWaitlist reads a user's waitlist entries.
func (f *fixture) userWaitlist(user string) []boxoffice.WaitlistEntry {
	f.t.Helper()
	ws, err := f.store.UserWaitlist(f.ctx, user)
	if err != nil {
		f.t.Fatalf("UserWaitlist(%s): %v", user, err)
	}
	return ws
}

// leave takes w off the waitlist at now and returns it as stored.
func (f *fixture) leave(w *boxoffice.WaitlistEntry, now time.Time) *boxoffice.WaitlistEntry {
	f.t.Helper()
	got, err := f.store.LeaveWaitlist(f.ctx, w.ID, now)
	if err != nil {
		f.t.Fatalf("LeaveWaitlist(%d): %v", w.ID, err)
	}
	return got
}

func (s suite) waitlistOffers(t *testing.T) {
	s.test(t, "CreateBookingOfAnOfferMovesTheEntryToOffered", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		w := f.join(e, "alice")
		f.publishAll()
		b := f.newOffer(w, e, "A-A-2", "A-A-1")
		b.CreatedAt = t0.Add(time.Minute + 250_999)
		b.UpdatedAt, b.HeldUntil = b.CreatedAt, b.CreatedAt.Add(hold)
		f.createBooking(b)
		if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
			t.Errorf("Booking mismatch (-want +got):\n%s", diff)
		}
		want := storedEntry(w)
		want.Status, want.BookingID, want.Offers, want.UpdatedAt = boxoffice.WaitlistOffered, b.ID, 1, ms(b.CreatedAt)
		if diff := cmp.Diff(want, f.entry(w.ID), opts); diff != "" {
			t.Errorf("WaitlistEntry mismatch (-want +got):\n%s", diff)
		}
		f.wantPending(wantEvent{boxoffice.TopicBookingHeld, b, b.CreatedAt})
	})

	t.Run("CreateBookingOfAnOfferRefuses", func(t *testing.T) {
		// Each case returns the offer to try (of A-A-1, to alice unless it
		// says otherwise); a refused offer writes nothing and leaves the
		// entry as it was.
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking
			want    string
		}{
			{"AnUnknownEntryIsNotFound", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				b := f.newOffer(f.join(e, "alice"), e, "A-A-1")
				b.WaitlistEntryID = 424242
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ENOTFOUND},
			{"AnotherUsersEntryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				b := f.newOffer(f.join(e, "bob"), e, "A-A-1")
				b.UserID = "alice"
				return boxoffice.NewBooking{Booking: b, TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"AnotherEventsEntryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				return boxoffice.NewBooking{Booking: f.newOffer(f.join(f.createEvent(), "alice"), e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"AnOfferedEntryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				w := f.join(e, "alice")
				f.offer(w, e, "A-A-2")
				return boxoffice.NewBooking{Booking: f.newOffer(w, e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"ALapsedEntryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				w := f.join(e, "alice")
				f.release(f.offer(w, e, "A-A-2"), boxoffice.BookingExpired)
				return boxoffice.NewBooking{Booking: f.newOffer(w, e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"ALeftEntryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				w := f.join(e, "alice")
				f.leave(w, t0)
				return boxoffice.NewBooking{Booking: f.newOffer(w, e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"AFulfilledEntryIsConflict", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				w := f.join(e, "alice")
				f.confirm(f.offer(w, e, "A-A-2"))
				return boxoffice.NewBooking{Booking: f.newOffer(w, e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.ECONFLICT},
			{"ASoldSeatIsSeatTaken", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				f.sell(e, "bob", "A-A-1")
				return boxoffice.NewBooking{Booking: f.newOffer(f.join(e, "alice"), e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.ESEATTAKEN},
			{"OverTheUsersLimitIsLimit", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				f.sell(e, "alice", "B-A-1", "B-A-2")
				return boxoffice.NewBooking{Booking: f.newOffer(f.join(e, "alice"), e, "A-A-1"), TicketLimit: 2}
			}, boxoffice.ELIMIT},
			{"ATakenIdempotencyKeyIsInFlight", func(f *fixture, e *boxoffice.Event) boxoffice.NewBooking {
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "offer")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				return boxoffice.NewBooking{Booking: f.newOffer(f.join(e, "alice"), e, "A-A-1"), TicketLimit: 8}
			}, boxoffice.EIDEMINFLIGHT},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				nb := tc.arrange(f, e)
				nb.Idempotency = f.idem(nb.Booking.UserID, "offer")
				nb.Idempotency.RequestHash = "the offer"
				f.publishAll()
				entry, entryErr := f.store.WaitlistEntry(f.ctx, nb.Booking.WaitlistEntryID)
				err := f.store.CreateBooking(f.ctx, nb)
				wantCode(t, "CreateBooking", err, tc.want)
				f.wantNoBooking(nb.Booking.ID)
				f.wantPending()
				if entryErr == nil {
					if diff := cmp.Diff(entry, f.entry(entry.ID), opts); diff != "" {
						t.Errorf("a refused offer changed the entry (-before +after):\n%s", diff)
					}
				}
				if tc.want == boxoffice.EIDEMINFLIGHT {
					f.wantIdempotency(f.idem("alice", "offer"))
				} else {
					f.wantNoIdempotency(nb.Booking.UserID, "offer")
				}
			})
		}
	})

	s.test(t, "ConfirmBookingOfAnOfferFulfilsTheEntry", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		w := f.join(e, "alice")
		b := f.offer(w, e, "A-A-1")
		now := t0.Add(2*time.Minute + 999)
		if _, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, now, "ok")); err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		want := storedEntry(w)
		want.Status, want.BookingID, want.Offers, want.UpdatedAt = boxoffice.WaitlistFulfilled, b.ID, 1, ms(now)
		if diff := cmp.Diff(want, f.entry(w.ID), opts); diff != "" {
			t.Errorf("WaitlistEntry mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "ConfirmBookingOfAnOfferFulfilsAnEntryThatLeft", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		w := f.join(e, "alice")
		b := f.offer(w, e, "A-A-1")
		f.leave(w, t0.Add(time.Minute))
		now := t0.Add(2 * time.Minute)
		if _, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, now, "ok")); err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		if got := f.entry(w.ID); got.Status != boxoffice.WaitlistFulfilled || !got.UpdatedAt.Equal(ms(now)) {
			t.Errorf("entry is %s at %v, want fulfilled at %v", got.Status, got.UpdatedAt, ms(now))
		}
	})

	t.Run("AnOfferThatEndsUnpaidLapsesTheEntry", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			end  func(f *fixture, b *boxoffice.Booking) time.Time // returns when
		}{
			{"Released", func(f *fixture, b *boxoffice.Booking) time.Time {
				f.release(b, boxoffice.BookingReleased)
				return t0.Add(time.Minute)
			}},
			{"ReleasedAsExpired", func(f *fixture, b *boxoffice.Booking) time.Time {
				f.release(b, boxoffice.BookingExpired)
				return t0.Add(time.Minute)
			}},
			{"ExpiredByTheSweep", func(f *fixture, b *boxoffice.Booking) time.Time {
				cutoff := b.HeldUntil.Add(time.Second)
				if got, err := f.store.ExpireBookings(f.ctx, cutoff, 10); err != nil || len(got) != 1 {
					f.t.Fatalf("ExpireBookings = %d bookings, %v; want 1", len(got), err)
				}
				return cutoff
			}},
		} {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				e := f.createEvent()
				w := f.join(e, "alice")
				b := f.offer(w, e, "A-A-1", "A-A-2")
				at := tc.end(f, b)
				want := storedEntry(w)
				want.Status, want.BookingID, want.Offers, want.UpdatedAt = boxoffice.WaitlistLapsed, b.ID, 1, ms(at)
				if diff := cmp.Diff(want, f.entry(w.ID), opts); diff != "" {
					t.Errorf("WaitlistEntry mismatch (-want +got):\n%s", diff)
				}
				// The seats come back for the next in line.
				f.wantReturns(returnOf(b, at))
			})
		}
	})

	s.test(t, "AnOfferReleasedAfterTheUserLeftLeavesTheEntryLeft", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		w := f.join(e, "alice")
		b := f.offer(w, e, "A-A-1")
		left := f.leave(w, t0.Add(time.Minute))
		if _, err := f.store.ReleaseBooking(f.ctx, b.ID, boxoffice.BookingReleased, t0.Add(2*time.Minute)); err != nil {
			t.Fatalf("ReleaseBooking: %v", err)
		}
		if diff := cmp.Diff(left, f.entry(w.ID), opts); diff != "" {
			t.Errorf("WaitlistEntry changed (-want +got):\n%s", diff)
		}
	})
}
