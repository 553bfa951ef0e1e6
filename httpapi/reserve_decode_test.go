package httpapi

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// The bodies clients send take the fast path.
var commonReserveBodies = []string{
	`{"event_id":"266168001122795520","seat_ids":["S-A-1"]}`,
	`{"event_id":"7","seat_ids":["S-A-1","S-A-2","S-AB-1000"],"idempotency_key":"0f3c1a9e-1b2c-4d5e-8f90-123456789abc"}`,
	`{"seat_ids":["S-A-1"],"event_id":"7"}`,
	"{ \"event_id\" : \"7\" ,\n\t\"seat_ids\" : [ \"S-A-1\" , \"S-A-2\" ] }\r\n",
	`{"event_id":"7","seat_ids":[]}`,
	`{"idempotency_key":"k","event_id":"7"}`,
}

// decodeFast accepts only what the general way accepts, and makes of it
// what the general way makes: on the common bodies and on 50,000 random
// mutations of them (bytes that matter to JSON inserted, replaced or cut).
func TestReserveDecodeFastAgreesWithTheGeneralWay(t *testing.T) {
	check := func(body string) bool {
		t.Helper()
		var fast reserveRequest
		if !fast.decodeFast([]byte(body)) {
			if !reflect.DeepEqual(fast, reserveRequest{}) {
				t.Fatalf("%q: refused, but wrote %+v", body, fast)
			}
			return false
		}
		var general reserveRequest
		if err := decodeBody([]byte(body), &general); err != nil {
			t.Fatalf("%q: fast path accepted what the general way refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fast, general) {
			t.Fatalf("%q: fast path %+v, general way %+v", body, fast, general)
		}
		return true
	}
	for _, b := range commonReserveBodies {
		if !check(b) {
			t.Errorf("%q: not on the fast path", b)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	bits := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, "\t", "\n", `1`, `0`, `-`, `+`, `a`, `é`, "\x00", "\x7f",
		`null`, `"x"`, `"event_id":"1"`, `"Event_ID"`, `\u0041`, `1e3`, `true`, `"seat_ids":[]`}
	accepted := 0
	for range 50_000 {
		b := []byte(commonReserveBodies[r.IntN(len(commonReserveBodies))])
		for range 1 + r.IntN(3) {
			at := r.IntN(len(b) + 1)
			bit := bits[r.IntN(len(bits))]
			switch r.IntN(3) {
			case 0: // insert
				b = append(b[:at:at], append([]byte(bit), b[at:]...)...)
			case 1: // replace a byte
				if at < len(b) {
					b = append(b[:at:at], append([]byte(bit), b[at+1:]...)...)
				}
			default: // cut
				if at < len(b) {
					b = append(b[:at:at], b[at+1+r.IntN(len(b)-at):]...)
				}
			}
		}
		if check(string(b)) {
			accepted++
		}
	}
	t.Logf("fast path took %d of 50,000 mutated bodies", accepted)
}
