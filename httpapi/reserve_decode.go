package httpapi

import (
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/internal/jsonscan"
)

// A reserve's body is decoded on every request of a flash sale, and
// encoding/json (a decoder, reflection, then exactNames' pass for the
// names' case) was a third of the reserve handler's CPU. decodeFast reads
// the body every client sends, {"event_id":"..","seat_ids":[..]} with an
// optional idempotency_key, in one pass; anything else (another field,
// null, an escape, a non-ASCII byte, a repeated key, a number for the id)
// goes the general way. It only ever accepts, never refuses, and what it
// accepts is what the general way makes of the same bytes
// (TestReserveDecodeFastAgreesWithTheGeneralWay, FuzzDecodeReserve).

// fastDecoder is a body type with a fast path; decodeFast leaves the value
// untouched when it reports false.
type fastDecoder interface {
	decodeFast(body []byte) bool
}

func (q *reserveRequest) decodeFast(b []byte) bool {
	var out reserveRequest
	ok := jsonscan.Object(b, 0, func(key []byte, at int) (int, bool) {
		switch string(key) {
		case "event_id":
			s, e, ok := jsonscan.String(b, at)
			if !ok {
				return 0, false
			}
			id, err := boxoffice.ParseID(string(b[s:e]))
			out.EventID = id
			return e + 1, err == nil
		case "seat_ids":
			ss, next, ok := jsonscan.Strings(b, at)
			out.SeatIDs = ss
			return next, ok
		case "idempotency_key":
			return jsonscan.Text(b, at, &out.IdempotencyKey)
		}
		return 0, false
	})
	if ok {
		*q = out
	}
	return ok
}
