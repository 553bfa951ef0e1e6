package httpapi

import (
	"reflect"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice"
)

// FuzzDecodeReserve feeds arbitrary bodies and headers to the reserve
// decoding. It must never panic, whatever it accepts must be a request the
// service can work on (a positive event id and a key, if any, from the
// body or the header), and what the fast path accepts the general way
// decodes to the same request.
func FuzzDecodeReserve(f *testing.F) {
	f.Add(`{"event_id":"123","seat_ids":["A-A-1","A-A-2"],"idempotency_key":"k"}`, "")
	f.Add(`{"event_id":123,"seat_ids":["A-A-1"]}`, "k")
	f.Add(`{"event_id":"-1","seat_ids":[]}`, "")
	f.Add(`{"event_id":"99999999999999999999"}`, "")
	f.Add(`{"seat_ids":[1,2]}`, "")
	f.Add(`[]`, "")
	f.Add(`{"event_id":"1","seat_ids":null,"idempotency_key":"a"}`, "b")
	f.Fuzz(func(t *testing.T, body, header string) {
		var fast, general reserveRequest
		if fast.decodeFast([]byte(body)) {
			if err := decodeBody([]byte(body), &general); err != nil || !reflect.DeepEqual(fast, general) {
				t.Fatalf("fast path %+v, general way %+v (%v)", fast, general, err)
			}
		}
		var q reserveRequest
		if err := decodeBytesOrReader(strings.NewReader(body), &q); err != nil {
			if boxoffice.ErrorCode(err) == boxoffice.EINTERNAL {
				t.Fatalf("decoding error not in the vocabulary: %v", err)
			}
			return
		}
		req, err := decodeReserve(q, header)
		if err != nil {
			if c := boxoffice.ErrorCode(err); c != boxoffice.EINVALID && c != boxoffice.ELIMIT {
				t.Fatalf("decodeReserve error %v has code %s", err, c)
			}
			return
		}
		if req.EventID <= 0 {
			t.Fatalf("accepted event id %d", req.EventID)
		}
		if req.IdempotencyKey != q.IdempotencyKey && req.IdempotencyKey != header {
			t.Fatalf("key %q from neither body %q nor header %q", req.IdempotencyKey, q.IdempotencyKey, header)
		}
		if len(req.SeatIDs) > 100 {
			t.Fatalf("accepted %d seats", len(req.SeatIDs))
		}
	})
}

// FuzzEventLayout feeds arbitrary event bodies to decoding and validation.
// Whatever is accepted must expand to exactly SeatCount seats with unique
// ids, each of whose section SectionOf recovers, within the limits.
func FuzzEventLayout(f *testing.F) {
	f.Add(`{"name":"x","starts_at":"2030-01-01T00:00:00Z","sale_opens_at":"2029-01-01T00:00:00Z","sale_mode":"direct","sections":[{"name":"A","price_tier":"t","price_cents":100,"rows":3,"seats_per_row":4}]}`)
	f.Add(`{"name":"x","starts_at":"2030-01-01T00:00:00Z","sale_opens_at":"2029-01-01T00:00:00Z","sale_mode":"queued","ticket_limit":2,"sections":[{"name":"A","price_tier":"t","price_cents":1,"rows":27,"seats_per_row":1},{"name":"B_2","price_tier":"u","price_cents":0,"rows":1,"seats_per_row":1000}]}`)
	f.Add(`{"name":"x","sections":[{"name":"A-1","rows":-1}]}`)
	f.Add(`{"name":"x","starts_at":"2030-01-01T00:00:00Z","sale_opens_at":"2029-01-01T00:00:00Z","sale_mode":"direct","sections":[{"name":"A","price_tier":"t","price_cents":1,"rows":702,"seats_per_row":1000}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var q eventRequest
		if err := decodeBytesOrReader(strings.NewReader(body), &q); err != nil {
			return
		}
		e, err := q.toEvent()
		if err != nil {
			if boxoffice.ErrorCode(err) != boxoffice.EINVALID {
				t.Fatalf("layout error %v is not EINVALID", err)
			}
			return
		}
		n := e.SeatCount()
		if n < 1 || n > boxoffice.MaxSeatsPerEvent {
			t.Fatalf("accepted %d seats", n)
		}
		seats := e.Seats()
		if len(seats) != n {
			t.Fatalf("Seats() = %d, SeatCount = %d", len(seats), n)
		}
		ids := make(map[string]bool, n)
		for _, s := range seats {
			if ids[s.ID] {
				t.Fatalf("duplicate seat id %s", s.ID)
			}
			ids[s.ID] = true
			if boxoffice.SectionOf(s.ID) != s.Section {
				t.Fatalf("SectionOf(%s) = %s, want %s", s.ID, boxoffice.SectionOf(s.ID), s.Section)
			}
		}
	})
}
