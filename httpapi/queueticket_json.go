package httpapi

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/boxoffice/boxoffice/internal/jsonappend"
)

// The queue ticket is the most written answer of a sale: every 202 at the
// front door and every poll of /queue/{id}. appendJSON writes it without
// reflection (internal/jsonappend), byte for byte what encoding/json writes
// for queueTicketJSON (TestQueueTicketJSONIsEncodingJSONs compares them on
// random tickets); the stream's events still go through encoding/json.

var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// jsonAppender is an answer that appends its own JSON (without reflection).
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

// writeAppended is writeJSON for an answer that appends its own JSON: the
// same bytes, a newline after them as json.Encoder writes.
func writeAppended(w http.ResponseWriter, status int, contentType string, v jsonAppender) {
	bp := jsonBufs.Get().(*[]byte)
	b := append(v.appendJSON((*bp)[:0]), '\n')
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
	*bp = b
	jsonBufs.Put(bp)
}

// writeQueueTicket is writeJSON for a queue ticket.
func writeQueueTicket(w http.ResponseWriter, status int, t *queueTicketJSON) {
	writeAppended(w, status, "application/json", t)
}

func (t *queueTicketJSON) appendJSON(b []byte) []byte {
	b = append(b, `{"request_id":`...)
	b = jsonappend.QuotedInt(b, int64(t.RequestID))
	b = append(b, `,"event_id":`...)
	b = jsonappend.QuotedInt(b, int64(t.EventID))
	b = append(b, `,"status":`...)
	b = jsonappend.String(b, string(t.Status))
	b = append(b, `,"queue_position":`...)
	b = strconv.AppendInt(b, t.QueuePosition, 10)
	b = append(b, `,"ahead":`...)
	b = strconv.AppendInt(b, t.Ahead, 10)
	b = append(b, `,"estimated_wait_seconds":`...)
	if t.EstimatedWaitSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = jsonappend.Float(b, *t.EstimatedWaitSeconds)
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
	b = jsonappend.Time(b, t.SaleOpensAt)
	b = append(b, `,"status_url":`...)
	b = jsonappend.String(b, t.StatusURL)
	b = append(b, `,"events_url":`...)
	b = jsonappend.String(b, t.EventsURL)
	b = jsonappend.OptionalString(b, `,"reason":`, t.Reason)
	b = jsonappend.OptionalString(b, `,"message":`, t.Message)
	b = jsonappend.OptionalQuotedInt(b, `,"booking_id":`, int64(t.BookingID))
	if t.HeldUntil != nil {
		b = append(b, `,"held_until":`...)
		b = jsonappend.Time(b, *t.HeldUntil)
	}
	b = jsonappend.OptionalString(b, `,"payment_url":`, t.PaymentURL)
	b = jsonappend.OptionalString(b, `,"waitlist_url":`, t.WaitlistURL)
	return append(b, '}')
}
