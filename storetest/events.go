package storetest

import (
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

func (s suite) events(t *testing.T) {
	s.test(t, "CreateEventThenEventReturnsItWithSections", func(t *testing.T, f *fixture) {
		tokyo := time.FixedZone("JST", 9*3600)
		e := f.newEvent()
		e.Name, e.Venue = "Nocturne — 夜想曲", "Suntory Hall"
		e.SaleMode, e.TicketLimit = boxoffice.SaleQueued, 4
		// Sub-millisecond digits and a zone other than UTC: the store keeps
		// milliseconds and answers in UTC.
		e.StartsAt = time.Date(2030, 7, 1, 19, 30, 0, 123_456_789, tokyo)
		e.SaleOpensAt = time.Date(2030, 6, 1, 10, 0, 0, 999_999_999, tokyo)
		e.CreatedAt = time.Date(2030, 5, 1, 9, 0, 0, 1_000_001, tokyo)
		// Seat features come back on their section, and on its seats.
		e.Sections[0].Features = map[string][]boxoffice.SeatFeature{
			"A-1": {boxoffice.Wheelchair}, "A-2": {boxoffice.Companion}, "D-10": {boxoffice.RestrictedView, boxoffice.Companion}}
		if err := f.store.CreateEvent(f.ctx, e); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		got, err := f.store.Event(f.ctx, e.ID)
		if err != nil {
			t.Fatalf("Event: %v", err)
		}
		if diff := cmp.Diff(storedEvent(e), got, opts); diff != "" {
			t.Errorf("Event mismatch (-want +got):\n%s", diff)
		}
		if seats := got.Seats(); !seats[0].HasFeature(boxoffice.Wheelchair) || len(seats[2].Features) != 0 || len(seats[39].Features) != 2 {
			t.Errorf("seats' features: %v %v %v", seats[0].Features, seats[2].Features, seats[39].Features)
		}
		if got.StartsAt.Nanosecond() != 123_000_000 {
			t.Errorf("StartsAt = %v, want the milliseconds kept and the rest dropped", got.StartsAt)
		}
	})

	s.test(t, "EventUnknownIsNotFound", func(t *testing.T, f *fixture) {
		f.createEvent()
		_, err := f.store.Event(f.ctx, 424242)
		wantCode(t, "Event(unknown)", err, boxoffice.ENOTFOUND)
	})

	s.test(t, "CreateEventWithTakenIDIsConflict", func(t *testing.T, f *fixture) {
		first := f.createEvent()
		second := f.newEvent()
		second.ID, second.Name = first.ID, "Impostor"
		second.Sections = []boxoffice.Section{{Name: "Z", PriceTier: "t", PriceCents: 1, Rows: 1, SeatsPerRow: 1}}
		wantCode(t, "CreateEvent(same id)", f.store.CreateEvent(f.ctx, second), boxoffice.ECONFLICT)
		got, err := f.store.Event(f.ctx, first.ID)
		if err != nil {
			t.Fatalf("Event: %v", err)
		}
		if diff := cmp.Diff(storedEvent(first), got, opts); diff != "" {
			t.Errorf("the first event changed (-want +got):\n%s", diff)
		}
		b := f.newBooking(first, "alice", "A-A-1")
		b.SeatIDs = []string{"Z-A-1"}
		err = f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8})
		wantCode(t, "CreateBooking on a seat of the refused layout", err, boxoffice.EINVALID)
	})

	s.test(t, "CreateEventWritesEverySeatOfTheLayout", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		// The first and last seat of each section exist; the seat after
		// the last row does not.
		for _, seat := range []string{"A-A-1", "A-D-10", "B-A-1", "B-B-10"} {
			f.book(e, "alice", seat)
		}
		for _, seat := range []string{"A-E-1", "A-A-11", "B-C-1", "C-A-1"} {
			b := f.newBooking(e, "alice", "A-A-2")
			b.SeatIDs = []string{seat}
			err := f.store.CreateBooking(f.ctx, boxoffice.NewBooking{Booking: b, TicketLimit: 8})
			wantCode(t, "CreateBooking("+seat+")", err, boxoffice.EINVALID)
		}
	})

	s.test(t, "CreateEventWithTheLargestLayout", func(t *testing.T, f *fixture) {
		if testing.Short() || raceEnabled {
			// One goroutine, nothing for the race detector to find; 200,000
			// seats take long under it.
			t.Skip("200,000 seats: skipped in -short mode and under -race")
		}
		e := f.newEvent()
		e.Sections = nil
		for i := range 4 {
			e.Sections = append(e.Sections, boxoffice.Section{
				Name: string(rune('W' + i)), PriceTier: "std", PriceCents: 1000, Rows: 200, SeatsPerRow: 250,
			})
		}
		if n := e.SeatCount(); n != boxoffice.MaxSeatsPerEvent {
			t.Fatalf("fixture: %d seats, want %d", n, boxoffice.MaxSeatsPerEvent)
		}
		if err := f.store.CreateEvent(f.ctx, e); err != nil {
			t.Fatalf("CreateEvent: %v", err)
		}
		seats := e.Seats()
		last := seats[len(seats)-1].ID
		b := f.book(e, "alice", seats[0].ID, last)
		f.confirm(b)
		if diff := cmp.Diff([]string{seats[0].ID, last}, f.soldSeats(e.ID), sortedStrings); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
	})

	s.test(t, "EventsOfAnEmptyStoreIsEmpty", func(t *testing.T, f *fixture) {
		got, err := f.store.Events(f.ctx, boxoffice.EventFilter{Limit: 10})
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		if len(got) != 0 {
			t.Errorf("Events = %d events, want none", len(got))
		}
	})

	t.Run("EventsPagesNewestFirst", func(t *testing.T) {
		// Five events, ids ascending: e[4] is the newest.
		tests := []struct {
			name   string
			filter func(e []*boxoffice.Event) boxoffice.EventFilter
			want   []int // indexes into e
		}{
			{"All", func([]*boxoffice.Event) boxoffice.EventFilter { return boxoffice.EventFilter{Limit: 10} }, []int{4, 3, 2, 1, 0}},
			{"Limit", func([]*boxoffice.Event) boxoffice.EventFilter { return boxoffice.EventFilter{Limit: 2} }, []int{4, 3}},
			{"Before", func(e []*boxoffice.Event) boxoffice.EventFilter {
				return boxoffice.EventFilter{Before: e[3].ID, Limit: 10}
			}, []int{2, 1, 0}},
			{"BeforeAndLimit", func(e []*boxoffice.Event) boxoffice.EventFilter {
				return boxoffice.EventFilter{Before: e[3].ID, Limit: 2}
			}, []int{2, 1}},
			{"BeforeTheOldest", func(e []*boxoffice.Event) boxoffice.EventFilter {
				return boxoffice.EventFilter{Before: e[0].ID, Limit: 10}
			}, nil},
		}
		for _, tc := range tests {
			s.test(t, tc.name, func(t *testing.T, f *fixture) {
				var events []*boxoffice.Event
				for i := range 5 {
					e := f.newEvent()
					e.Name = "Event " + string(rune('1'+i))
					e.Sections = e.Sections[:1+i%2]
					if err := f.store.CreateEvent(f.ctx, e); err != nil {
						t.Fatalf("CreateEvent: %v", err)
					}
					events = append(events, e)
				}
				got, err := f.store.Events(f.ctx, tc.filter(events))
				if err != nil {
					t.Fatalf("Events: %v", err)
				}
				var want []*boxoffice.Event
				for _, i := range tc.want {
					want = append(want, storedEvent(events[i]))
				}
				if diff := cmp.Diff(want, got, opts); diff != "" {
					t.Errorf("Events mismatch (-want +got):\n%s", diff)
				}
			})
		}
	})

	s.test(t, "EventsCursorWalksEveryEventOnce", func(t *testing.T, f *fixture) {
		var want []boxoffice.ID
		for range 7 {
			want = append([]boxoffice.ID{f.createEvent().ID}, want...)
		}
		var got []boxoffice.ID
		filter := boxoffice.EventFilter{Limit: 3}
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("still paging after %d pages: %v", page, got)
			}
			events, err := f.store.Events(f.ctx, filter)
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if len(events) > filter.Limit {
				t.Fatalf("page %d has %d events, limit %d", page, len(events), filter.Limit)
			}
			if len(events) == 0 {
				break
			}
			for _, e := range events {
				got = append(got, e.ID)
			}
			filter.Before = events[len(events)-1].ID
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ids seen paging (-want +got):\n%s", diff)
		}
	})

	s.test(t, "SoldSeatsListsSeatsWithAValidTicket", func(t *testing.T, f *fixture) {
		e := f.createEvent()
		other := f.createEvent()
		if got := f.soldSeats(e.ID); len(got) != 0 {
			t.Fatalf("SoldSeats of a new event = %v, want none", got)
		}
		f.confirm(f.book(e, "alice", "B-A-3", "A-A-1"))
		f.confirm(f.book(e, "bob", "A-D-10"))
		f.book(e, "carol", "A-A-2")                                      // pending: held, not sold
		f.release(f.book(e, "dave", "A-A-3"), boxoffice.BookingReleased) // released
		f.confirm(f.book(other, "erin", "A-A-4"))                        // another event
		want := []string{"A-A-1", "A-D-10", "B-A-3"}
		if diff := cmp.Diff(want, f.soldSeats(e.ID), sortedStrings); diff != "" {
			t.Errorf("SoldSeats mismatch (-want +got):\n%s", diff)
		}
	})
}

// storedEvent returns e as a store gives it back: times in ms UTC.
func storedEvent(e *boxoffice.Event) *boxoffice.Event {
	c := *e
	c.StartsAt, c.SaleOpensAt, c.CreatedAt = ms(e.StartsAt), ms(e.SaleOpensAt), ms(e.CreatedAt)
	c.Sections = append([]boxoffice.Section(nil), e.Sections...)
	c.DrawSeed = nil // kept apart, read back only by Draw
	return &c
}
