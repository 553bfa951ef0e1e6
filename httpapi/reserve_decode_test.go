package httpapi

import (
	"testing"

	"github.com/boxoffice/boxoffice/internal/jsonscan/jsonscantest"
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
		return jsonscantest.Agree(t, body, (*reserveRequest).decodeFast, func(b []byte, q *reserveRequest) error { return decodeBody(b, q) })
	}
	for _, b := range commonReserveBodies {
		if !check(b) {
			t.Errorf("%q: not on the fast path", b)
		}
	}
	bits := append([]string{`"event_id":"1"`, `"Event_ID"`, `"seat_ids":[]`}, jsonscantest.Bits...)
	accepted := 0
	jsonscantest.Mutants(5, commonReserveBodies, bits, 50_000, func(body string) {
		if check(body) {
			accepted++
		}
	})
	t.Logf("fast path took %d of 50,000 mutated bodies", accepted)
}
