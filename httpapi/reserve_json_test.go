package httpapi

import (
	"encoding/json"
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
	r := rand.New(rand.NewPCG(3, 4))
	texts := jt.Texts("/bookings/266168001122795520/confirm")
	seats := jt.Texts("A-B-12", "Floor-AA-1")
	for i := range 5000 {
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
		want, err := json.Marshal(&j)
		if err != nil {
			t.Fatal(err)
		}
		if got := j.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("reserve %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
