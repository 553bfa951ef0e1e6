package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The queue ticket is the most written answer of a sale: every 202 at the
// front door and every poll of /queue/{id}. appendJSON writes it without
// reflection, byte for byte what encoding/json writes for queueTicketJSON
// (TestQueueTicketJSONIsEncodingJSONs compares them on random tickets); the
// stream's events still go through encoding/json.

var ticketBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeQueueTicket is writeJSON for a queue ticket.
func writeQueueTicket(w http.ResponseWriter, status int, t *queueTicketJSON) {
	bp := ticketBufs.Get().(*[]byte)
	b := append(t.appendJSON((*bp)[:0]), '\n') // as json.Encoder ends a value
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	*bp = b
	ticketBufs.Put(bp)
}

func (t *queueTicketJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"request_id":"`...)
	b = strconv.AppendInt(b, int64(t.RequestID), 10)
	b = append(b, `","event_id":"`...)
	b = strconv.AppendInt(b, int64(t.EventID), 10)
	b = append(b, `","status":`...)
	b = appendJSONString(b, string(t.Status))
	b = append(b, `,"queue_position":`...)
	b = strconv.AppendInt(b, t.QueuePosition, 10)
	b = append(b, `,"ahead":`...)
	b = strconv.AppendInt(b, t.Ahead, 10)
	b = append(b, `,"estimated_wait_seconds":`...)
	if t.EstimatedWaitSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONFloat(b, *t.EstimatedWaitSeconds)
	}
	if t.SeatsLeft != nil {
		b = append(b, `,"seats_left":`...)
		b = strconv.AppendInt(b, int64(*t.SeatsLeft), 10)
	}
	if t.ExpectedSeatsLeft != nil {
		b = append(b, `,"expected_seats_left_at_turn":`...)
		b = strconv.AppendInt(b, int64(*t.ExpectedSeatsLeft), 10)
	}
	b = append(b, `,"sale_opens_at":`...)
	b = appendJSONTime(b, t.SaleOpensAt)
	b = append(b, `,"status_url":`...)
	b = appendJSONString(b, t.StatusURL)
	b = append(b, `,"events_url":`...)
	b = appendJSONString(b, t.EventsURL)
	b = appendOptionalString(b, `,"reason":`, t.Reason)
	b = appendOptionalString(b, `,"message":`, t.Message)
	if t.BookingID != 0 {
		b = append(b, `,"booking_id":"`...)
		b = strconv.AppendInt(b, int64(t.BookingID), 10)
		b = append(b, '"')
	}
	if t.HeldUntil != nil {
		b = append(b, `,"held_until":`...)
		b = appendJSONTime(b, *t.HeldUntil)
	}
	b = appendOptionalString(b, `,"payment_url":`, t.PaymentURL)
	b = appendOptionalString(b, `,"waitlist_url":`, t.WaitlistURL)
	return append(b, '}')
}

// appendOptionalString writes key and s unless s is empty (omitempty).
func appendOptionalString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendJSONString quotes s as encoding/json does; anything but printable
// ASCII without the characters it escapes goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendEncoded(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat writes f as encoding/json does for the plain range; the
// exponent forms, and NaN and the infinities (which it refuses), go
// through it.
func appendJSONFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) || math.IsInf(f, 0) {
		return appendEncoded(b, f)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// appendJSONTime writes t as time.Time.MarshalJSON does, for the years it
// accepts.
func appendJSONTime(b []byte, t time.Time) []byte {
	if y := t.Year(); y < 0 || y > 9999 {
		return appendEncoded(b, t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendEncoded is the way out to encoding/json for the rare values the
// appenders above leave to it; one it refuses (NaN, a year past 9999) is
// written null rather than failing the whole answer.
func appendEncoded(b []byte, v any) []byte {
	q, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, q...)
}
