package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// appendJSON writes what encoding/json writes for a problem, for problems
// of every shape: each optional field there or not, seats or none, text
// that needs escaping.
func TestProblemJSONIsEncodingJSONs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	texts := []string{"", "https://boxoffice.example/problems/seat-taken", "Seat taken", "seat S-A-1 is held by someone else",
		"/bookings/reserve", "a <b> & \"c\"", "tab\there", "é ü 🎟", "line\u2028sep", string([]byte{0xff, 'x'})}
	pick := func() string { return texts[r.IntN(len(texts))] }
	for i := range 5000 {
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
		want, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("problem %d:\nappend: %s\njson:   %s", i, got, want)
		}
	}
}
