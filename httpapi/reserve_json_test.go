package httpapi

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
)

// appendJSON writes what encoding/json writes for a reserve's answer: with
// and without seats, times in and out of UTC and of every precision, text
// that needs escaping.
func TestReserveJSONIsEncodingJSONs(t *testing.T) {
	texts := jt.Texts("/bookings/266168001122795520/confirm")
	seats := jt.Texts("A-B-12", "Floor-AA-1")
	jt.Differential(t, 3, 5000, func(r *rand.Rand, i int) reserveJSON {
		j := reserveJSON{
			BookingID:  boxoffice.ID(r.Int64()),
			HeldUntil:  jt.Time(r),
			PaymentURL: jt.Pick(r, texts),
		}
		switch i % 5 {
		case 0:
			j.HeldUntil = j.HeldUntil.Truncate(time.Millisecond)
		case 1:
			j.HeldUntil = time.Time{}
		}
		if n := r.IntN(4); n > 0 || i%11 == 0 {
			j.SeatIDs = make([]string, n)
			for k := range j.SeatIDs {
				j.SeatIDs[k] = jt.Pick(r, seats)
			}
		}
		return j
	}, func(j *reserveJSON) ([]byte, error) { return j.appendJSON(nil), nil })
}
