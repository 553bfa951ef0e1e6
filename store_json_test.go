package boxoffice

import (
	"math/rand/v2"
	"testing"
	"time"

	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
)

// bookingEventJSON writes what encoding/json writes for a booking event:
// every status and optional id there or not, nil and empty seat lists,
// times in and out of UTC and of every precision, text that needs
// escaping; and a year JSON cannot hold fails as json.Marshal fails.
func TestBookingEventJSONIsEncodingJSONs(t *testing.T) {
	texts := jt.Texts("user-1", "auth0|abc")
	seats := jt.Texts("A-B-12", "Floor-AA-1")
	statuses := []BookingStatus{BookingPending, BookingConfirmed, BookingReleased, BookingExpired, BookingCancelled}
	topics := []string{TopicBookingHeld, TopicBookingConfirmed, TopicBookingReleased, TopicBookingExpired, TopicBookingCancelled, "ticket.resold"}
	when := func(r *rand.Rand, i int) time.Time {
		t := jt.Time(r)
		switch i % 4 {
		case 0:
			return t.Truncate(time.Millisecond)
		case 1:
			return time.Time{}
		}
		return t
	}
	jt.Differential(t, 5, 5000, func(r *rand.Rand, i int) BookingEvent {
		e := BookingEvent{
			ID: jt.Pick(r, texts) + ":" + jt.Pick(r, topics), Type: jt.Pick(r, topics),
			OccurredAt: when(r, i),
			Booking: BookingSnapshot{
				BookingID: ID(r.Int64()), EventID: ID(r.Int64N(1 << 62)), UserID: jt.Pick(r, texts),
				Status: jt.Pick(r, statuses), AmountCents: r.Int64N(1<<40) - 1000, HeldUntil: when(r, i+r.IntN(4)),
			},
		}
		if n := r.IntN(5); n > 0 || i%3 == 0 {
			e.Booking.SeatIDs = make([]string, n)
			for k := range e.Booking.SeatIDs {
				e.Booking.SeatIDs[k] = jt.Pick(r, seats)
			}
		}
		if r.IntN(3) == 0 {
			e.Booking.ListingID = ID(r.Int64())
		}
		if r.IntN(3) == 0 {
			e.Booking.WaitlistEntryID = ID(r.Int64())
		}
		return e
	}, bookingEventJSON)
	e := BookingEvent{OccurredAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := bookingEventJSON(&e); err == nil {
		t.Error("a year past 9999 was written")
	}
}
