package httpapi

import "github.com/boxoffice/boxoffice"

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
	var haveEvent, haveSeats, haveKey bool
	i := jsonSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = jsonSpace(b, i+1)
	for {
		ks, ke, ok := plainString(b, i)
		if !ok {
			return false
		}
		i = jsonSpace(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = jsonSpace(b, i+1)
		switch string(b[ks:ke]) {
		case "event_id":
			s, e, ok := plainString(b, i)
			if !ok || haveEvent {
				return false
			}
			id, err := boxoffice.ParseID(string(b[s:e]))
			if err != nil {
				return false
			}
			out.EventID, haveEvent, i = id, true, e+1
		case "seat_ids":
			if haveSeats || i >= len(b) || b[i] != '[' {
				return false
			}
			out.SeatIDs, haveSeats = []string{}, true
			i = jsonSpace(b, i+1)
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			for {
				s, e, ok := plainString(b, i)
				if !ok {
					return false
				}
				out.SeatIDs = append(out.SeatIDs, string(b[s:e]))
				i = jsonSpace(b, e+1)
				if i >= len(b) {
					return false
				}
				if b[i] == ']' {
					i++
					break
				}
				if b[i] != ',' {
					return false
				}
				i = jsonSpace(b, i+1)
			}
		case "idempotency_key":
			s, e, ok := plainString(b, i)
			if !ok || haveKey {
				return false
			}
			out.IdempotencyKey, haveKey, i = string(b[s:e]), true, e+1
		default:
			return false
		}
		i = jsonSpace(b, i)
		if i >= len(b) {
			return false
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return false
		}
		i = jsonSpace(b, i+1)
	}
	if jsonSpace(b, i+1) != len(b) {
		return false
	}
	*q = out
	return true
}

// jsonSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func jsonSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString finds the JSON string starting at b[i] if it is printable
// ASCII without escapes: its text is b[s:e], and b[e] is its closing
// quote.
func plainString(b []byte, i int) (s, e int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	for e = i + 1; e < len(b); e++ {
		switch c := b[e]; {
		case c == '"':
			return i + 1, e, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return 0, 0, false
		}
	}
	return 0, 0, false
}
