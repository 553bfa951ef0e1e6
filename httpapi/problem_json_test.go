package httpapi

import (
	"math/rand/v2"
	"testing"

	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
)

// appendJSON writes what encoding/json writes for a problem, for problems
// of every shape: each optional field there or not, seats or none, text
// that needs escaping.
func TestProblemJSONIsEncodingJSONs(t *testing.T) {
	texts := jt.Texts("https://boxoffice.example/problems/seat-taken", "Seat taken", "seat S-A-1 is held by someone else",
		"/bookings/reserve")
	jt.Differential(t, 9, 5000, func(r *rand.Rand, i int) Problem {
		pick := func() string { return jt.Pick(r, texts) }
		p := Problem{Type: pick(), Title: pick(), Status: 400 + r.IntN(200), Detail: pick(), Instance: pick(), Code: pick(), WaitlistURL: pick()}
		switch r.IntN(3) {
		case 0:
		case 1:
			p.Seats = []string{}
		default:
			for range 1 + r.IntN(3) {
				p.Seats = append(p.Seats, pick())
			}
		}
		return p
	}, func(p *Problem) ([]byte, error) { return p.appendJSON(nil), nil })
}
