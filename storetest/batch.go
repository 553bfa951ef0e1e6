package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Promises of CreateBookings and Idempotencies pinned here:
//   - CreateBookings answers each booking with the code, message and seats
//     CreateBooking gives it when the bookings are written one after the
//     other in slice order, also when their CreatedAt (the "now" of the
//     limit) differ, and leaves the store as that would: the same
//     bookings, idempotency records and outbox events (all but the
//     outbox's Seq, which is the store's);
//   - errs has one entry per booking; an empty batch is answered with none;
//   - the ticket limit holds across batches and single bookings written at
//     once;
//   - a resale purchase, a waitlist offer or a booking of no seats in a
//     batch is EINVALID and writes nothing (its listing and entry are left
//     as they were, free for CreateBooking); the others of the batch are
//     written;
//   - Idempotencies answers out[i] for (userIDs[i], keys[i]), the same
//     record as Idempotency or nil, pairs asked twice included; no pairs,
//     no records; lengths that differ are EINVALID.

func (s suite) batchBookings(t *testing.T) {
	s.batchAsOneByOne(t)
	s.batchLimitConcurrency(t)

	s.test(t, "CreateBookingsJudgesEachLimitAtItsBookingsCreatedAt", func(t *testing.T, f *fixture) {
		// As one by one: a booking's limit counts the seats live at its own
		// CreatedAt, whatever the times of the batch's other bookings.
		e := f.createEvent()
		f.book(e, "alice", "A-A-1", "A-A-2") // held from t0 for hold
		f.book(e, "bob", "A-A-3", "A-A-4")
		late := t0.Add(hold + time.Minute) // both holds have run out
		at := func(b *boxoffice.Booking, now time.Time) *boxoffice.Booking {
			b.CreatedAt, b.UpdatedAt, b.HeldUntil = now, now, now.Add(hold)
			return b
		}
		bookings := []*boxoffice.Booking{
			// alice's first comes late: her hold does not count (0+2);
			// her second, at t0, sees her hold and the first (2+2+4).
			at(f.newBooking(e, "alice", "A-B-1", "A-B-2"), late),
			f.newBooking(e, "alice", "A-B-3", "A-B-4", "A-B-5", "A-B-6"),
			// bob's first, at t0, sees his hold (2+2); his second comes
			// late, when neither counts (0+4).
			f.newBooking(e, "bob", "A-C-1", "A-C-2"),
			at(f.newBooking(e, "bob", "A-C-3", "A-C-4", "A-C-5", "A-C-6"), late),
		}
		want := []string{"", boxoffice.ELIMIT, "", ""}
		nbs := make([]boxoffice.NewBooking, len(bookings))
		for i, b := range bookings {
			nbs[i] = boxoffice.NewBooking{Booking: b, TicketLimit: 6}
		}
		errs, err := f.store.CreateBookings(f.ctx, nbs)
		if err != nil {
			t.Fatalf("CreateBookings: %v", err)
		}
		if len(errs) != len(nbs) {
			t.Fatalf("CreateBookings: %d answers for %d bookings", len(errs), len(nbs))
		}
		for i, b := range bookings {
			if got := boxoffice.ErrorCode(errs[i]); got != want[i] {
				t.Errorf("booking %d (%s at %s): error code %q, want %q (error: %v)",
					i, b.UserID, b.CreatedAt.Format("15:04"), got, want[i], errs[i])
				continue
			}
			if want[i] == "" {
				f.booking(b.ID)
			} else {
				f.wantNoBooking(b.ID)
			}
		}
	})

	s.test(t, "CreateBookingsRefusesPurchasesOffersAndEmptyBookingsAlone", func(t *testing.T, f *fixture) {
		// Only plain bookings batch; a purchase or an offer in a batch is
		// refused, writes nothing, and does not stop the rest.
		e := f.createEvent()
		l := f.list(f.sell(e, "seller", "A-A-1").Tickets[0], 9000)
		w := f.join(e, "waiter")
		f.publishAll()

		plain1 := f.newBooking(e, "alice", "A-B-1")
		purchase := f.newPurchase(l, "bob")
		plain2 := f.newBooking(e, "carol", "A-B-2", "A-B-3")
		offer := f.newOffer(w, e, "A-C-1", "A-C-2")
		plain3 := f.newBooking(e, "dave", "B-A-1")
		empty := f.newBooking(e, "erin")
		both := f.newPurchase(l, "frank") // a purchase and an offer at once
		both.WaitlistEntryID = w.ID
		bookings := []*boxoffice.Booking{plain1, purchase, plain2, offer, plain3, empty, both}
		want := []string{"", boxoffice.EINVALID, "", boxoffice.EINVALID, "", boxoffice.EINVALID, boxoffice.EINVALID}
		nbs := make([]boxoffice.NewBooking, len(bookings))
		for i, b := range bookings {
			nbs[i] = boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: f.idem(b.UserID, fmt.Sprint("k", i))}
		}
		errs, err := f.store.CreateBookings(f.ctx, nbs)
		if err != nil {
			t.Fatalf("CreateBookings: %v", err)
		}
		if len(errs) != len(nbs) {
			t.Fatalf("CreateBookings: %d answers for %d bookings", len(errs), len(nbs))
		}
		for i, b := range bookings {
			wantCode(t, fmt.Sprintf("booking %d (%s)", i, b.UserID), errs[i], want[i])
			if want[i] != "" {
				f.wantNoBooking(b.ID)
				f.wantNoIdempotency(b.UserID, fmt.Sprint("k", i))
				continue
			}
			if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
				t.Errorf("booking %d mismatch (-want +got):\n%s", i, diff)
			}
			f.wantIdempotency(nbs[i].Idempotency)
		}
		f.wantPending(
			wantEvent{boxoffice.TopicBookingHeld, plain1, plain1.CreatedAt},
			wantEvent{boxoffice.TopicBookingHeld, plain2, plain2.CreatedAt},
			wantEvent{boxoffice.TopicBookingHeld, plain3, plain3.CreatedAt},
		)
		// The listing and the entry are as they were, and free.
		if diff := cmp.Diff(storedListing(l), f.listing(l.ID), opts); diff != "" {
			t.Errorf("Listing mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(storedEntry(w), f.entry(w.ID), opts); diff != "" {
			t.Errorf("WaitlistEntry mismatch (-want +got):\n%s", diff)
		}
		f.purchase(l, "bob")
		f.offer(w, e, "A-C-1", "A-C-2")
	})

	s.test(t, "CreateBookingsOfNoBookingsAnswersNone", func(t *testing.T, f *fixture) {
		for _, nbs := range [][]boxoffice.NewBooking{nil, {}} {
			errs, err := f.store.CreateBookings(f.ctx, nbs)
			if err != nil || len(errs) != 0 {
				t.Errorf("CreateBookings(%#v) = %v, %v; want no answers, nil", nbs, errs, err)
			}
		}
		f.wantPending()
	})
}

// batchAsOneByOne runs the same random batch through CreateBookings on one
// store and through CreateBooking, one booking after the other, on another
// store in the same starting state: every booking must get the same answer
// and the two stores must end up the same. The batch mixes every way a
// booking can be refused: an unknown event, a key recorded before or
// earlier in the batch, a sold seat, the limit (also across bookings of the
// batch), an id taken before or earlier in the batch, an unknown seat, a
// seat named twice.
//
// A booking is never both of the last two; both stores would answer the
// unknown seat first (BookingStore's order of errors).
func (s suite) batchAsOneByOne(t *testing.T) {
	t.Run("CreateBookingsAnswersAsOneByOne", func(t *testing.T) {
		for round := range 6 {
			// From round 3 on the bookings of a batch are made at different
			// times, so an earlier booking's hold, or one made before the
			// batch, may have run out at a later one's CreatedAt (or not
			// have started: the store does not look).
			apart := round >= 3
			name := fmt.Sprint(round)
			if apart {
				name += "ClocksApart"
			}
			s.testTwo(t, name, func(t *testing.T, one, batch *fixture) {
				rng := rand.New(rand.NewPCG(uint64(round), 7))
				// Every value is built once and written to both stores; the
				// event first, where a sharded store places it (alike in
				// both), so that the ids built after it name its shard.
				e := one.newEvent()
				for _, f := range []*fixture{one, batch} {
					if err := f.store.CreateEvent(f.ctx, e); err != nil {
						t.Fatalf("CreateEvent: %v", err)
					}
				}
				sold := one.newBooking(e, "u0", "A-A-1")
				sale := one.confirmation(sold, t0.Add(time.Minute), "sold")
				held := one.newBooking(e, "u1", "A-A-2", "A-A-3")
				heldKey := one.idem("u1", "k-held")
				for _, f := range []*fixture{one, batch} {
					// A-A-1 is sold to u0; A-A-2 and A-A-3 held by u1 under
					// the key k-held.
					if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: sold, TicketLimit: 4}); err != nil {
						t.Fatalf("CreateBooking(sold): %v", err)
					}
					if _, err := f.store.ConfirmBooking(f.ctx, sale); err != nil {
						t.Fatalf("ConfirmBooking(sold): %v", err)
					}
					if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: held, TicketLimit: 4, Idempotency: heldKey}); err != nil {
						t.Fatalf("CreateBooking(held): %v", err)
					}
				}

				nbs := randomBatch(rng, one, e, apart, held.ID)
				want := make([]error, len(nbs))
				for i, nb := range nbs {
					want[i] = one.store.CreateBooking(one.ctx, nb)
				}
				got, err := batch.store.CreateBookings(batch.ctx, nbs)
				if err != nil {
					t.Fatalf("CreateBookings: %v", err)
				}
				if len(got) != len(nbs) {
					t.Fatalf("CreateBookings: %d answers for %d bookings", len(got), len(nbs))
				}
				codes := map[string]int{}
				for i, nb := range nbs {
					codes[boxoffice.ErrorCode(want[i])]++
					if w, g := answer(want[i]), answer(got[i]); w != g {
						t.Errorf("booking %d (%s, seats %v, at %v, key %v): one by one %s, batched %s",
							i, nb.Booking.UserID, nb.Booking.SeatIDs, nb.Booking.CreatedAt.Format("15:04"), keyOf(nb), w, g)
					}
				}
				// The batch must test both ways, and every refusal.
				for _, code := range []string{"", boxoffice.ENOTFOUND, boxoffice.EIDEMINFLIGHT, boxoffice.ESEATTAKEN,
					boxoffice.ELIMIT, boxoffice.ECONFLICT, boxoffice.EINVALID} {
					if codes[code] == 0 {
						t.Errorf("no booking of the batch was answered %q (answers: %v): the batch does not test it", code, codes)
					}
				}

				// The stores, read through the port.
				ids := []boxoffice.ID{sold.ID, held.ID}
				keys := []*boxoffice.IdempotencyRecord{heldKey}
				for _, nb := range nbs {
					ids = append(ids, nb.Booking.ID)
					if nb.Idempotency != nil {
						keys = append(keys, nb.Idempotency)
					}
				}
				slices.Sort(ids)
				for _, id := range slices.Compact(ids) {
					w, werr := one.store.Booking(one.ctx, id)
					g, gerr := batch.store.Booking(batch.ctx, id)
					if answer(werr) != answer(gerr) {
						t.Errorf("Booking(%d): one by one %s, batched %s", id, answer(werr), answer(gerr))
					} else if diff := cmp.Diff(w, g, opts); diff != "" {
						t.Errorf("Booking(%d) differs (-one by one +batched):\n%s", id, diff)
					}
				}
				for _, k := range keys {
					w, werr := one.store.Idempotency(one.ctx, k.UserID, k.Key)
					g, gerr := batch.store.Idempotency(batch.ctx, k.UserID, k.Key)
					if answer(werr) != answer(gerr) {
						t.Errorf("Idempotency(%s, %s): one by one %s, batched %s", k.UserID, k.Key, answer(werr), answer(gerr))
					} else if diff := cmp.Diff(w, g, opts); diff != "" {
						t.Errorf("Idempotency(%s, %s) differs (-one by one +batched):\n%s", k.UserID, k.Key, diff)
					}
				}
				w, g := one.pending(), batch.pending()
				for _, evs := range [][]boxoffice.OutboxEvent{w, g} {
					if !slices.IsSorted(seqs(evs)) {
						t.Errorf("PendingOutbox is not in seq order: %v", seqs(evs))
					}
				}
				noSeq := cmpopts.IgnoreFields(boxoffice.OutboxEvent{}, "Seq")
				if diff := cmp.Diff(w, g, opts, noSeq); diff != "" {
					t.Errorf("PendingOutbox differs (-one by one +batched):\n%s", diff)
				}
			})
		}
	})
}

// randomBatch returns 60 bookings of e for ten users u0-u9, with ids and
// fences from f, limit 6, two thirds of them with a key, and about one in
// twelve refused for each reason (see batchAsOneByOne). takenID is the id
// of a booking written before. With apart, their CreatedAt (and HeldUntil)
// are spread around t0.
func randomBatch(rng *rand.Rand, f *fixture, e *boxoffice.Event, apart bool, takenID boxoffice.ID) []boxoffice.NewBooking {
	var nbs []boxoffice.NewBooking
	for i := range 60 {
		user := fmt.Sprintf("u%d", rng.IntN(10))
		at := t0
		if apart {
			// Before, at, during and after the holds made at t0.
			at = t0.Add([]time.Duration{-5 * time.Minute, 0, 5 * time.Minute, hold + 2*time.Minute}[rng.IntN(4)])
		}
		// One to three distinct seats of section A: a seat is named twice
		// only below, never with an unknown seat.
		var seats []string
		for n := 1 + rng.IntN(3); len(seats) < n; {
			seat := boxoffice.SeatID("A", string(rune('A'+rng.IntN(4))), 1+rng.IntN(10))
			if !slices.Contains(seats, seat) {
				seats = append(seats, seat)
			}
		}
		b := &boxoffice.Booking{
			ID:          f.idFor(e.ID),
			EventID:     e.ID,
			Status:      boxoffice.BookingPending,
			Fence:       f.nextFence(),
			AmountCents: 12000 * int64(len(seats)),
			HeldUntil:   at.Add(hold),
			CreatedAt:   at,
			UpdatedAt:   at,
		}
		switch rng.IntN(12) {
		case 0:
			seats = append(seats, "A-A-1") // sold (maybe named twice: sold first)
		case 1:
			seats = append(seats, "A-Z-99") // no such seat
		case 2:
			seats = append(seats, seats[0]) // twice
		case 3:
			b.EventID = 999_999_999 // no such event
		case 4:
			b.ID = takenID // taken before
		case 5:
			if i > 0 {
				b.ID = nbs[i-1].Booking.ID // taken earlier in the batch (if that one won)
			}
		}
		b.SeatIDs = seats
		nb := boxoffice.NewBooking{Booking: b, TicketLimit: 6}
		if rng.IntN(3) > 0 {
			key := fmt.Sprintf("k%d", i)
			switch rng.IntN(6) {
			case 0:
				user, key = "u1", "k-held" // recorded before
			case 1:
				key = "k-dup" // taken if this user took it earlier in the batch
			}
			nb.Idempotency = f.idem(user, key)
			nb.Idempotency.Body = []byte(fmt.Sprintf(`{"booking_id":"%d"}`, b.ID))
		}
		b.UserID = user
		nbs = append(nbs, nb)
	}
	return nbs
}

// answer is an error as the contract sees it: its code, message and seats.
func answer(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%s %q %v", boxoffice.ErrorCode(err), boxoffice.ErrorMessage(err), boxoffice.ErrorSeats(err))
}

func keyOf(nb boxoffice.NewBooking) string {
	if nb.Idempotency == nil {
		return "none"
	}
	return nb.Idempotency.UserID + "/" + nb.Idempotency.Key
}

// batchLimitConcurrency writes bookings of one seat each for five users,
// from eight goroutines at once: half write batches of CreateBookings, half
// one CreateBooking after the other. The limit is checked inside each
// transaction, so every user ends with exactly the limit, and every
// refusal is the limit's.
func (s suite) batchLimitConcurrency(t *testing.T) {
	s.test(t, "CreateBookingsLimitHoldsAcrossConcurrentBatches", func(t *testing.T, f *fixture) {
		const (
			workers = 8
			rounds  = 4
			each    = 10 // bookings a round
			users   = 5
			limit   = 3
		)
		e := f.newEvent()
		e.Sections = []boxoffice.Section{{Name: "A", PriceTier: "std", PriceCents: 5000, Rows: workers, SeatsPerRow: rounds * each}}
		if err := f.store.CreateEvent(f.ctx, e); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		seats := e.Seats()
		// A distinct seat for each booking: only the limit refuses.
		nbs := make([][][]boxoffice.NewBooking, workers)
		for w := range nbs {
			nbs[w] = make([][]boxoffice.NewBooking, rounds)
			for r := range rounds {
				for i := range each {
					b := f.newBooking(e, fmt.Sprint("u", (w+i)%users), seats[(w*rounds+r)*each+i].ID)
					nbs[w][r] = append(nbs[w][r], boxoffice.NewBooking{Booking: b, TicketLimit: limit})
				}
			}
		}
		answers := make([][][]error, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range workers {
			answers[w] = make([][]error, rounds)
			wg.Go(func() {
				<-start
				for r, batch := range nbs[w] {
					if w%2 == 0 {
						answers[w][r] = make([]error, len(batch))
						for i, nb := range batch {
							answers[w][r][i] = f.store.CreateBooking(f.ctx, nb)
						}
						continue
					}
					errs, err := f.store.CreateBookings(f.ctx, batch)
					if err != nil || len(errs) != len(batch) {
						t.Errorf("worker %d: CreateBookings = %d answers, %v; want %d, nil", w, len(errs), err, len(batch))
						errs = make([]error, len(batch))
						for i := range errs {
							errs[i] = fmt.Errorf("not answered")
						}
					}
					answers[w][r] = errs
				}
			})
		}
		close(start)
		wg.Wait()

		seatsOf := map[string]int{}
		for w := range nbs {
			for r := range nbs[w] {
				for i, nb := range nbs[w][r] {
					b := nb.Booking
					switch err := answers[w][r][i]; boxoffice.ErrorCode(err) {
					case "":
						if diff := cmp.Diff(stored(b), f.booking(b.ID), opts); diff != "" {
							t.Errorf("Booking(%d) mismatch (-want +got):\n%s", b.ID, diff)
						}
						seatsOf[b.UserID] += len(b.SeatIDs)
					case boxoffice.ELIMIT:
						f.wantNoBooking(b.ID)
					default:
						t.Errorf("worker %d booking %d: %v, want success or %s", w, r*each+i, err, boxoffice.ELIMIT)
					}
				}
			}
		}
		for u := range users {
			if user := fmt.Sprint("u", u); seatsOf[user] != limit {
				t.Errorf("%s holds %d seats, want the limit, %d", user, seatsOf[user], limit)
			}
		}
	})
}

func (s suite) idempotencies(t *testing.T) {
	s.test(t, "IdempotenciesReadsEachPairInOrder", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		paris := time.FixedZone("CEST", 2*3600)
		alice1 := f.idem("alice", "k1")
		alice1.CreatedAt = time.Date(2030, 6, 1, 20, 0, 0, 1_999_999, paris)
		alice1.ExpiresAt = alice1.CreatedAt.Add(24 * time.Hour)
		alice1.Body = []byte{0, 1, 2, 0xff, '{', '}'}
		bob1, alice2 := f.idem("bob", "k1"), f.idem("alice", "k2")
		bob1.Outcome, bob1.Body = boxoffice.OutcomeConfirmed, []byte("bob's")
		for _, r := range []*boxoffice.IdempotencyRecord{alice1, bob1, alice2} {
			if err := f.store.PutIdempotency(f.ctx, r); err != nil {
				t.Fatalf("PutIdempotency(%s, %s): %v", r.UserID, r.Key, err)
			}
		}
		// One written with a booking.
		carol := f.idem("carol", "reserve")
		if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{
			Booking: f.newBooking(e, "carol", "A-A-1"), TicketLimit: 8, Idempotency: carol}); err != nil {
			t.Fatalf("CreateBooking: %v", err)
		}

		asked := []struct {
			user, key string
			want      *boxoffice.IdempotencyRecord // nil: none
		}{
			{"alice", "k1", alice1},
			{"alice", "missing", nil},
			{"bob", "k1", bob1},
			{"carol", "k1", nil},
			{"alice", "k2", alice2},
			{"alice", "k1", alice1}, // asked twice
			{"bob", "k2", nil},      // alice's key, not bob's
			{"carol", "reserve", carol},
			{"", "", nil},
		}
		var users, keys []string
		for _, a := range asked {
			users, keys = append(users, a.user), append(keys, a.key)
		}
		got, err := f.store.Idempotencies(f.ctx, users, keys)
		if err != nil {
			t.Fatalf("Idempotencies: %v", err)
		}
		if len(got) != len(asked) {
			t.Fatalf("Idempotencies: %d records for %d pairs", len(got), len(asked))
		}
		for i, a := range asked {
			if a.want == nil {
				if got[i] != nil {
					t.Errorf("pair %d (%s, %s): %+v, want nil", i, a.user, a.key, got[i])
				}
				f.wantNoIdempotency(a.user, a.key)
				continue
			}
			want := *a.want
			want.CreatedAt, want.ExpiresAt = ms(want.CreatedAt), ms(want.ExpiresAt)
			if diff := cmp.Diff(&want, got[i], opts); diff != "" {
				t.Errorf("pair %d (%s, %s) mismatch (-want +got):\n%s", i, a.user, a.key, diff)
			}
			one, err := f.store.Idempotency(f.ctx, a.user, a.key)
			if err != nil {
				t.Fatalf("Idempotency(%s, %s): %v", a.user, a.key, err)
			}
			if diff := cmp.Diff(one, got[i], opts); diff != "" {
				t.Errorf("pair %d (%s, %s): Idempotencies differs from Idempotency (-Idempotency +Idempotencies):\n%s", i, a.user, a.key, diff)
			}
		}
	})

	s.test(t, "IdempotenciesOfNoPairsIsEmpty", func(t *testing.T, f *fixture) {
		if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "k")); err != nil {
			t.Fatalf("PutIdempotency: %v", err)
		}
		for _, none := range [][]string{nil, {}} {
			got, err := f.store.Idempotencies(f.ctx, none, none)
			if err != nil || len(got) != 0 {
				t.Errorf("Idempotencies(%#v, %#v) = %v, %v; want none, nil", none, none, got, err)
			}
		}
	})

	s.test(t, "IdempotenciesOfUnpairedUsersAndKeysIsInvalid", func(t *testing.T, f *fixture) {
		if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "k")); err != nil {
			t.Fatalf("PutIdempotency: %v", err)
		}
		for _, c := range []struct{ users, keys []string }{
			{[]string{"alice"}, nil},
			{nil, []string{"k"}},
			{[]string{"alice", "alice"}, []string{"k"}},
		} {
			_, err := f.store.Idempotencies(f.ctx, c.users, c.keys)
			wantCode(t, fmt.Sprintf("Idempotencies(%q, %q)", c.users, c.keys), err, boxoffice.EINVALID)
		}
	})
}
