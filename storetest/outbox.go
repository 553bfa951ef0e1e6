package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

// Promises of the outbox pinned here (docs/events.md is the consumer's
// view of the same):
//   - an event's ID is "<topic>:<booking id>", its Key the booking id, its
//     CreatedAt the payload's occurred_at;
//   - occurred_at is the booking's CreatedAt for booking.held, c.Now for
//     booking.confirmed, now for ReleaseBooking and the cutoff for
//     ExpireBookings, in UTC at millisecond precision;
//   - ids in the payload are decimal strings;
//   - PurgeOutbox deletes published_at < cutoff, never an unpublished event.

func (s suite) outbox(t *testing.T) {
	s.outboxTransitions(t)
	s.outboxFailures(t)
	s.outboxReads(t)
	s.outboxConcurrency(t)
}

// wantEvent is an outbox event as the test expects it: the booking after
// the change and the time of the change.
type wantEvent struct {
	topic   string
	booking *boxoffice.Booking
	at      time.Time
}

// payload returns the payload w describes.
func (w wantEvent) payload() boxoffice.BookingEvent {
	b := stored(w.booking)
	return boxoffice.BookingEvent{
		ID:         w.topic + ":" + b.ID.String(),
		Type:       w.topic,
		OccurredAt: ms(w.at),
		Booking: boxoffice.BookingSnapshot{
			BookingID:   b.ID,
			EventID:     b.EventID,
			UserID:      b.UserID,
			SeatIDs:     b.SeatIDs,
			Status:      b.Status,
			AmountCents: b.AmountCents,
			HeldUntil:   b.HeldUntil,
			ListingID:   b.ListingID,

			WaitlistEntryID: b.WaitlistEntryID,
		},
	}
}

// pending reads every unpublished event.
func (f *fixture) pending() []boxoffice.OutboxEvent {
	f.t.Helper()
	evs, err := f.store.PendingOutbox(f.ctx, 10_000)
	if err != nil {
		f.t.Fatalf("PendingOutbox: %v", err)
	}
	return evs
}

// publishAll marks every pending event published at t0, so that what a
// test does next is alone in the pending list.
func (f *fixture) publishAll() {
	f.t.Helper()
	f.markPublished(f.pending(), t0)
}

func (f *fixture) markPublished(evs []boxoffice.OutboxEvent, at time.Time) {
	f.t.Helper()
	if err := f.store.MarkPublished(f.ctx, seqs(evs), at); err != nil {
		f.t.Fatalf("MarkPublished: %v", err)
	}
}

func seqs(evs []boxoffice.OutboxEvent) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

// wantPending fails unless the pending events are exactly want, in order,
// with rising seqs.
func (f *fixture) wantPending(want ...wantEvent) {
	f.t.Helper()
	got := f.pending()
	if len(got) != len(want) {
		f.t.Fatalf("%d pending events %v, want %d", len(got), eventIDs(got), len(want))
	}
	for i, ev := range got {
		if i > 0 && ev.Seq <= got[i-1].Seq {
			f.t.Errorf("event %s has seq %d after %d: want rising seqs", ev.ID, ev.Seq, got[i-1].Seq)
		}
		f.checkEvent(ev, want[i])
	}
}

// checkEvent compares one event with what was expected of it.
func (f *fixture) checkEvent(ev boxoffice.OutboxEvent, w wantEvent) {
	f.t.Helper()
	p := w.payload()
	if ev.ID != p.ID || ev.Topic != w.topic || ev.Key != p.Booking.BookingID.String() || !ev.CreatedAt.Equal(p.OccurredAt) ||
		ev.CreatedAt.Location() != time.UTC {
		f.t.Errorf("event = {ID %q, Topic %q, Key %q, CreatedAt %v}, want {%q, %q, %q, %v UTC}",
			ev.ID, ev.Topic, ev.Key, ev.CreatedAt, p.ID, w.topic, p.Booking.BookingID.String(), p.OccurredAt)
	}
	var got boxoffice.BookingEvent
	if err := json.Unmarshal(ev.Payload, &got); err != nil {
		f.t.Fatalf("event %s: payload %s: %v", ev.ID, ev.Payload, err)
	}
	if diff := cmp.Diff(p, got, opts); diff != "" {
		f.t.Errorf("event %s payload mismatch (-want +got):\n%s", ev.ID, diff)
	}
	// The wire form: ids as decimal strings (JavaScript loses precision on
	// large numbers), times as RFC 3339 in UTC.
	var raw struct {
		OccurredAt string `json:"occurred_at"`
		Booking    struct {
			BookingID any    `json:"booking_id"`
			EventID   any    `json:"event_id"`
			HeldUntil string `json:"held_until"`
		} `json:"booking"`
	}
	if err := json.Unmarshal(ev.Payload, &raw); err != nil {
		f.t.Fatalf("event %s: payload %s: %v", ev.ID, ev.Payload, err)
	}
	if raw.Booking.BookingID != p.Booking.BookingID.String() || raw.Booking.EventID != p.Booking.EventID.String() {
		f.t.Errorf("event %s: booking_id %#v, event_id %#v, want decimal strings", ev.ID, raw.Booking.BookingID, raw.Booking.EventID)
	}
	for _, s := range []string{raw.OccurredAt, raw.Booking.HeldUntil} {
		if tm, err := time.Parse(time.RFC3339Nano, s); err != nil || tm.Location() != time.UTC {
			f.t.Errorf("event %s: time %q, want RFC 3339 in UTC", ev.ID, s)
		}
	}
}

func eventIDs(evs []boxoffice.OutboxEvent) []string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return ids
}

// as returns a copy of b in status at updatedAt.
func as(b *boxoffice.Booking, status boxoffice.BookingStatus, updatedAt time.Time) *boxoffice.Booking {
	c := stored(b)
	c.Status, c.UpdatedAt = status, ms(updatedAt)
	return c
}

func (s suite) outboxTransitions(t *testing.T) {
	s.test(t, "OutboxCreateBookingWritesBookingHeld", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.newBooking(e, "alice", "B-A-3", "A-A-1")
		// Sub-millisecond and not in UTC: the event says what was stored.
		b.CreatedAt = t0.Add(2*time.Second + 123_456_789).In(time.FixedZone("WEST", 3600))
		b.UpdatedAt, b.HeldUntil = b.CreatedAt, b.CreatedAt.Add(hold)
		f.createBooking(b)
		f.wantPending(wantEvent{boxoffice.TopicBookingHeld, b, b.CreatedAt})
	})

	s.test(t, "OutboxConfirmBookingWritesBookingConfirmed", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.book(e, "alice", "A-A-1", "A-A-2")
		f.publishAll()
		now := t0.Add(time.Minute + 999_999)
		c := f.confirmation(b, now, "ok")
		if _, err := f.store.ConfirmBooking(f.ctx, c); err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		f.wantPending(wantEvent{boxoffice.TopicBookingConfirmed, as(b, boxoffice.BookingConfirmed, now), now})

		// A confirm of a booking confirmed already returns it and writes
		// nothing: its event was written once.
		f.publishAll()
		if _, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, now.Add(time.Minute), "again")); err != nil {
			t.Fatalf("ConfirmBooking(again): %v", err)
		}
		f.wantPending()
	})

	for _, tc := range []struct {
		name  string
		to    boxoffice.BookingStatus
		topic string
	}{
		{"OutboxReleaseBookingToReleasedWritesBookingReleased", boxoffice.BookingReleased, boxoffice.TopicBookingReleased},
		{"OutboxReleaseBookingToExpiredWritesBookingExpired", boxoffice.BookingExpired, boxoffice.TopicBookingExpired},
	} {
		s.test(t, tc.name, func(t *testing.T, f *fixture) {
			e := f.createEvent()
			b := f.book(e, "alice", "A-A-1")
			f.publishAll()
			now := t0.Add(3 * time.Minute)
			if _, err := f.store.ReleaseBooking(f.ctx, b.ID, tc.to, now); err != nil {
				t.Fatalf("ReleaseBooking: %v", err)
			}
			f.wantPending(wantEvent{tc.topic, as(b, tc.to, now), now})
		})
	}

	s.test(t, "OutboxExpireBookingsWritesBookingExpiredForEach", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		early := f.newBooking(e, "alice", "A-A-1", "A-A-2")
		early.HeldUntil = t0.Add(time.Minute)
		f.createBooking(early)
		late := f.book(e, "bob", "A-A-3")
		live := f.newBooking(e, "carol", "A-A-4")
		live.HeldUntil = t0.Add(2 * hold)
		f.createBooking(live)
		f.publishAll()

		cutoff := t0.Add(hold)
		if _, err := f.store.ExpireBookings(f.ctx, cutoff, 10); err != nil {
			t.Fatalf("ExpireBookings: %v", err)
		}
		// In the sweep's order: oldest hold first.
		f.wantPending(
			wantEvent{boxoffice.TopicBookingExpired, as(early, boxoffice.BookingExpired, cutoff), cutoff},
			wantEvent{boxoffice.TopicBookingExpired, as(late, boxoffice.BookingExpired, cutoff), cutoff},
		)
	})

	s.test(t, "OutboxABookingsEventsFollowItsLife", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		b := f.book(e, "alice", "A-A-1")
		confirmedAt := t0.Add(time.Minute)
		if _, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, confirmedAt, "ok")); err != nil {
			t.Fatalf("ConfirmBooking: %v", err)
		}
		r := f.book(e, "bob", "A-A-2")
		f.release(r, boxoffice.BookingReleased)
		f.wantPending(
			wantEvent{boxoffice.TopicBookingHeld, b, t0},
			wantEvent{boxoffice.TopicBookingConfirmed, as(b, boxoffice.BookingConfirmed, confirmedAt), confirmedAt},
			wantEvent{boxoffice.TopicBookingHeld, r, t0},
			wantEvent{boxoffice.TopicBookingReleased, as(r, boxoffice.BookingReleased, t0.Add(time.Minute)), t0.Add(time.Minute)},
		)
	})
}

func (s suite) outboxFailures(t *testing.T) {
	t.Run("OutboxFailedCallWritesNoEvent", func(t *testing.T) {
		// Each case arranges what it needs (its events are published
		// before the call) and makes one call that must fail with want;
		// nothing of it may reach the outbox.
		tests := []struct {
			name    string
			arrange func(f *fixture, e *boxoffice.Event) func() error
			want    string
		}{
			{"CreateBookingSeatTaken", func(f *fixture, e *boxoffice.Event) func() error {
				f.confirm(f.book(e, "bob", "A-A-1"))
				b := f.newBooking(e, "alice", "A-A-1", "A-A-2")
				return func() error { return f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8}) }
			}, boxoffice.ESEATTAKEN},
			{"CreateBookingLimit", func(f *fixture, e *boxoffice.Event) func() error {
				f.book(e, "alice", "A-A-1", "A-A-2")
				b := f.newBooking(e, "alice", "A-A-3")
				return func() error { return f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 2}) }
			}, boxoffice.ELIMIT},
			{"CreateBookingIdempotencyKeyTaken", func(f *fixture, e *boxoffice.Event) func() error {
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "k")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				b := f.newBooking(e, "alice", "A-A-1")
				return func() error {
					return f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8, Idempotency: f.idem("alice", "k")})
				}
			}, boxoffice.EIDEMINFLIGHT},
			{"CreateBookingTakenID", func(f *fixture, e *boxoffice.Event) func() error {
				first := f.book(e, "alice", "A-A-1")
				b := f.newBooking(e, "bob", "A-A-2")
				b.ID = first.ID
				return func() error { return f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8}) }
			}, boxoffice.ECONFLICT},
			{"CreateBookingUnknownSeat", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.newBooking(e, "alice", "A-A-1")
				b.SeatIDs = []string{"A-A-1", "Q-Z-99"}
				return func() error { return f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8}) }
			}, boxoffice.EINVALID},
			{"ConfirmBookingHoldLost", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.book(e, "alice", "A-A-1")
				return f.confirmCall(f.confirmation(b, b.HeldUntil, "late"))
			}, boxoffice.EHOLDLOST},
			{"ConfirmBookingNewerHold", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.book(e, "alice", "A-A-1")
				f.book(e, "bob", "A-A-1")
				return f.confirmCall(f.confirmation(b, t0.Add(time.Minute), "ok"))
			}, boxoffice.EHOLDLOST},
			{"ConfirmBookingSeatTaken", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.book(e, "alice", "A-A-1", "A-A-2")
				f.confirm(f.book(e, "bob", "A-A-2"))
				return f.confirmCall(f.confirmation(b, t0.Add(2*time.Minute), "ok"))
			}, boxoffice.ESEATTAKEN},
			{"ConfirmBookingIdempotencyKeyTaken", func(f *fixture, e *boxoffice.Event) func() error {
				// The record is written after the tickets, the payment
				// and the booking: all of it, and its event, must go.
				if err := f.store.PutIdempotency(f.ctx, f.idem("alice", "confirm")); err != nil {
					f.t.Fatalf("PutIdempotency: %v", err)
				}
				b := f.book(e, "alice", "A-A-1")
				c := f.confirmation(b, t0.Add(time.Minute), "ok")
				c.Idempotency = f.idem("alice", "confirm")
				return f.confirmCall(c)
			}, boxoffice.EIDEMINFLIGHT},
			{"ConfirmBookingReleased", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.book(e, "alice", "A-A-1")
				f.release(b, boxoffice.BookingReleased)
				return f.confirmCall(f.confirmation(b, t0.Add(2*time.Minute), "late"))
			}, boxoffice.ECONFLICT},
			{"ReleaseBookingNotPending", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.book(e, "alice", "A-A-1")
				f.confirm(b)
				return func() error {
					_, err := f.store.ReleaseBooking(f.ctx, b.ID, boxoffice.BookingExpired, t0.Add(time.Hour))
					return err
				}
			}, boxoffice.ECONFLICT},
			{"ReleaseBookingToAnotherStatus", func(f *fixture, e *boxoffice.Event) func() error {
				b := f.book(e, "alice", "A-A-1")
				return func() error {
					_, err := f.store.ReleaseBooking(f.ctx, b.ID, boxoffice.BookingConfirmed, t0.Add(time.Minute))
					return err
				}
			}, boxoffice.EINVALID},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				call := tc.arrange(f, f.createEvent())
				f.publishAll()
				wantCode(t, tc.name, call(), tc.want)
				f.wantPending()
			})
		}
	})

	s.test(t, "OutboxExpireBookingsWithNothingToExpireWritesNoEvent", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		f.book(e, "alice", "A-A-1")
		f.publishAll()
		got, err := f.store.ExpireBookings(f.ctx, t0.Add(time.Minute), 10)
		if err != nil || len(got) != 0 {
			t.Fatalf("ExpireBookings = %d bookings, %v; want none", len(got), err)
		}
		f.wantPending()
	})
}

// confirmCall returns a call of ConfirmBooking(c) for the failure table.
func (f *fixture) confirmCall(c boxoffice.ConfirmBooking) func() error {
	return func() error {
		_, err := f.store.ConfirmBooking(f.ctx, c)
		return err
	}
}

func (s suite) outboxReads(t *testing.T) {
	// booked creates n single-seat bookings and returns their held events
	// as expected, in creation order.
	booked := func(f *fixture, n int) []wantEvent {
		e := f.createEvent()
		var want []wantEvent
		for i := range n {
			b := f.book(e, fmt.Sprint("user-", i), e.Seats()[i].ID)
			want = append(want, wantEvent{boxoffice.TopicBookingHeld, b, t0})
		}
		return want
	}

	s.test(t, "PendingOutboxIsInSeqOrderUpToTheLimit", func(t *testing.T, f *fixture) {
		want := booked(f, 5)
		for _, limit := range []int{1, 2, 5, 50} {
			got, err := f.store.PendingOutbox(f.ctx, limit)
			if err != nil {
				t.Fatalf("PendingOutbox(%d): %v", limit, err)
			}
			n := min(limit, len(want))
			if len(got) != n {
				t.Fatalf("PendingOutbox(%d) returned %d events, want %d", limit, len(got), n)
			}
			for i, ev := range got {
				f.checkEvent(ev, want[i])
			}
		}
		for _, limit := range []int{0, -1} {
			if got, err := f.store.PendingOutbox(f.ctx, limit); err != nil || len(got) != 0 {
				t.Errorf("PendingOutbox(%d) = %d events, %v; want none", limit, len(got), err)
			}
		}
		f.wantPending(want...)
	})

	s.test(t, "MarkPublishedTakesEventsOutOfPending", func(t *testing.T, f *fixture) {
		want := booked(f, 5)
		evs := f.pending()
		// Out of order and with gaps, as a relay that published a few.
		f.markPublished([]boxoffice.OutboxEvent{evs[3], evs[0]}, t0)
		f.wantPending(want[1], want[2], want[4])
		// Marking again, an empty list and an unknown seq change nothing.
		f.markPublished([]boxoffice.OutboxEvent{evs[3], evs[0]}, t0.Add(time.Hour))
		f.markPublished(nil, t0)
		f.markPublished([]boxoffice.OutboxEvent{{Seq: evs[4].Seq + 1_000_000}}, t0)
		f.wantPending(want[1], want[2], want[4])
		f.markPublished(f.pending(), t0)
		f.wantPending()
	})

	s.test(t, "DeletePublishedTakesEventsOutOfTheOutbox", func(t *testing.T, f *fixture) {
		want := booked(f, 5)
		evs := f.pending()
		del := func(evs ...boxoffice.OutboxEvent) {
			t.Helper()
			seqs := make([]int64, len(evs))
			for i, ev := range evs {
				seqs[i] = ev.Seq
			}
			if err := f.store.DeletePublished(f.ctx, seqs); err != nil {
				t.Fatalf("DeletePublished: %v", err)
			}
		}
		// Out of order and with gaps, as a relay that published a few.
		del(evs[3], evs[0])
		f.wantPending(want[1], want[2], want[4])
		// Again, nothing, and an unknown seq: no change.
		del(evs[3], evs[0])
		del()
		del(boxoffice.OutboxEvent{Seq: evs[4].Seq + 1_000_000})
		f.wantPending(want[1], want[2], want[4])
		// Deleted, not marked: a purge finds nothing, and leaves the
		// pending ones.
		if n, err := f.store.PurgeOutbox(f.ctx, t0.Add(1000*24*time.Hour)); err != nil || n != 0 {
			t.Errorf("PurgeOutbox after DeletePublished = %d, %v; want 0", n, err)
		}
		f.wantPending(want[1], want[2], want[4])
		del(f.pending()...)
		f.wantPending()
	})

	s.test(t, "PurgeOutboxDeletesOnlyWhatWasPublishedBeforeTheCutoff", func(t *testing.T, f *fixture) {
		want := booked(f, 4)
		evs := f.pending()
		day := 24 * time.Hour
		f.markPublished(evs[0:1], t0)
		f.markPublished(evs[1:2], t0.Add(day))
		f.markPublished(evs[2:3], t0.Add(2*day))
		// evs[3] stays unpublished; marking evs[0] again keeps its time.
		f.markPublished(evs[0:1], t0.Add(50*day))
		purge := func(cutoff time.Time, want int) {
			t.Helper()
			n, err := f.store.PurgeOutbox(f.ctx, cutoff)
			if err != nil {
				t.Fatalf("PurgeOutbox(%v): %v", cutoff, err)
			}
			if n != want {
				t.Errorf("PurgeOutbox(%v) deleted %d, want %d", cutoff, n, want)
			}
		}
		purge(t0.Add(-time.Millisecond), 0)
		purge(t0.Add(day), 1)             // published_at < cutoff: not the one published at the cutoff
		purge(t0.Add(day+time.Second), 1) // which was kept until now
		purge(t0.Add(day+time.Second), 0)
		purge(t0.Add(100*day), 1)
		// An unpublished event is never purged.
		f.wantPending(want[3])
	})
}

func (s suite) outboxConcurrency(t *testing.T) {
	s.test(t, "ConcurrentBookingsWriteEachEventOnceWithDistinctSeqs", func(t *testing.T, f *fixture) {
		// racers users book, and confirm or release, at once: every change
		// has its one event, each with a seq of its own, and one booking's
		// events keep its order.
		e := f.createEvent()
		seats := e.Seats()
		const each = 3 // bookings per racer: 48 of the 60 seats
		bookings := make([][]*boxoffice.Booking, racers)
		for i := range bookings {
			for j := range each {
				bookings[i] = append(bookings[i], f.newBooking(e, fmt.Sprint("user-", i), seats[i*each+j].ID))
			}
		}
		var (
			mu   sync.Mutex
			want = map[string]bool{}
			errs []error
		)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() {
				<-start
				for j, b := range bookings[i] {
					topics, err := f.bookAndFinish(b, j%2 == 0)
					mu.Lock()
					if err != nil {
						errs = append(errs, err)
					}
					for _, topic := range topics {
						want[topic+":"+b.ID.String()] = true
					}
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			t.Error(err)
		}

		got := f.pending()
		ids := map[string]bool{}
		bySeq := map[int64]string{}
		seqOf := map[string]int64{}
		for _, ev := range got {
			if ids[ev.ID] {
				t.Errorf("event %s written twice", ev.ID)
			}
			ids[ev.ID] = true
			if other, dup := bySeq[ev.Seq]; dup {
				t.Errorf("events %s and %s share seq %d", other, ev.ID, ev.Seq)
			}
			bySeq[ev.Seq], seqOf[ev.ID] = ev.ID, ev.Seq
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if !slices.IsSorted(seqs(got)) {
			t.Errorf("PendingOutbox is not in seq order: %v", seqs(got))
		}
		for _, bs := range bookings {
			for _, b := range bs {
				held := seqOf[boxoffice.TopicBookingHeld+":"+b.ID.String()]
				for _, topic := range []string{boxoffice.TopicBookingConfirmed, boxoffice.TopicBookingReleased} {
					if seq, ok := seqOf[topic+":"+b.ID.String()]; ok && seq < held {
						t.Errorf("booking %d: %s has seq %d, before its booking.held (%d)", b.ID, topic, seq, held)
					}
				}
			}
		}
		f.markPublished(got, t0)
		f.wantPending()
	})
}

// bookAndFinish creates b, then confirms it (confirm) or releases it, and
// returns the topics of the events the changes that succeeded must have
// written. It is safe to call from any goroutine.
func (f *fixture) bookAndFinish(b *boxoffice.Booking, confirm bool) ([]string, error) {
	if err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: boxoffice.MaxTicketLimit}); err != nil {
		return nil, fmt.Errorf("CreateBooking(%d): %w", b.ID, err)
	}
	topics := []string{boxoffice.TopicBookingHeld}
	if confirm {
		// The ids of the tickets come from the fixture's atomic counter.
		if _, err := f.store.ConfirmBooking(f.ctx, f.confirmation(b, t0.Add(time.Minute), "race")); err != nil {
			return topics, fmt.Errorf("ConfirmBooking(%d): %w", b.ID, err)
		}
		return append(topics, boxoffice.TopicBookingConfirmed), nil
	}
	if _, err := f.store.ReleaseBooking(f.ctx, b.ID, boxoffice.BookingReleased, t0.Add(time.Minute)); err != nil {
		return topics, fmt.Errorf("ReleaseBooking(%d): %w", b.ID, err)
	}
	return append(topics, boxoffice.TopicBookingReleased), nil
}
