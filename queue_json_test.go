package boxoffice

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
	"github.com/boxoffice/boxoffice/internal/jsonscan/jsonscantest"
)

// AppendJSON writes what encoding/json writes for a queued request, for
// requests of every shape: each optional field there or not, times in and
// out of UTC, text that needs escaping.
func TestQueuedRequestAppendJSONIsEncodingJSONs(t *testing.T) {
	jt.Differential(t, 3, 5000, randomQueuedRequest, func(q *QueuedRequest) ([]byte, error) {
		// Appended after what the buffer holds, which stays.
		got := q.AppendJSON([]byte("x"))
		if got[0] != 'x' {
			return got, fmt.Errorf("the buffer's byte became %q", got[0])
		}
		return got[1:], nil
	})
}

var queuedTexts = jt.Texts("user-42", "S-A-1", "5f2c9a", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")

// randomQueuedRequest is a request of any shape: each optional field there
// or not, times in and out of UTC, text that needs escaping.
func randomQueuedRequest(r *rand.Rand, _ int) QueuedRequest {
	pick := func(s []string) string { return jt.Pick(r, s) }
	q := QueuedRequest{
		ID:             ID(r.Int64()),
		EventID:        ID(r.Int64N(1000)),
		UserID:         pick(queuedTexts),
		IdempotencyKey: pick(queuedTexts),
		RequestHash:    pick(queuedTexts),
		Position:       r.Int64N(10_000_000) - 5,
		EnqueuedAt:     jt.Time(r),
	}
	switch r.IntN(3) {
	case 0: // nil: null
	case 1:
		q.SeatIDs = []string{}
	default:
		for range 1 + r.IntN(4) {
			q.SeatIDs = append(q.SeatIDs, pick(queuedTexts))
		}
	}
	if r.IntN(4) == 0 {
		q.Best = &BestAvailable{Quantity: r.IntN(8), Section: pick(queuedTexts), Features: []SeatFeature{"aisle"}}
	}
	if r.IntN(2) == 0 {
		q.TraceParent = pick(queuedTexts)
	}
	if r.IntN(2) == 0 {
		f := jt.Pick(r, jt.Floats)
		q.EstimatedWait = &f
	}
	return q
}

// The records the front door writes take DecodeQueuedRequest's one pass.
var commonQueuedRequests = []string{
	`{"request_id":"266168001122795520","event_id":"266168001122795000","user_id":"user-123456","seat_ids":["S-AB-123"],"idempotency_key":"0f3c1a9e-1b2c-4d5e-8f90-123456789abc","request_hash":"9f86d081884c7d659a2feaa0c55ad015","position":123456,"enqueued_at":"2026-12-07T00:47:09.123456789Z","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","estimated_wait_seconds":12.5}`,
	`{"request_id":"7","event_id":"8","user_id":"u","seat_ids":[],"idempotency_key":"","request_hash":"h","position":0,"enqueued_at":"2026-12-07T01:47:09+01:00"}`,
	`{"request_id":"7","event_id":"8","user_id":"u","seat_ids":["A-1","A-2"],"idempotency_key":"k","request_hash":"h","position":9,"enqueued_at":"2026-12-07T00:47:09Z","estimated_wait_seconds":3e-7}`,
}

// DecodeQueuedRequest's one pass accepts only what encoding/json accepts,
// and makes of it what encoding/json makes: on requests of every shape as
// AppendJSON writes them, on the common records and on 50,000 random
// mutations of them (bytes that matter to JSON inserted, replaced or cut).
func TestDecodeQueuedRequestAgreesWithEncodingJSON(t *testing.T) {
	general := func(b []byte, q *QueuedRequest) error { return json.Unmarshal(b, q) }
	r := rand.New(rand.NewPCG(11, 12))
	fast := 0
	for i := range 5000 {
		q := randomQueuedRequest(r, i)
		doc := string(q.AppendJSON(nil))
		if jsonscantest.Agree(t, doc, (*QueuedRequest).decodeFast, general) {
			fast++
		}
		var got, want QueuedRequest
		err, wantErr := DecodeQueuedRequest([]byte(doc), &got), json.Unmarshal([]byte(doc), &want)
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: DecodeQueuedRequest %+v, %v; encoding/json %+v, %v", doc, got, err, want, wantErr)
		}
	}
	t.Logf("one pass took %d of 5,000 random requests", fast)
	// A plain request (printable ASCII, positive ids, a position, no
	// best-available ask) as AppendJSON writes it always takes the one
	// pass, whatever its times and estimates.
	plain := []string{"user-42", "S-A-1", "5f2c9a", "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	for i := range 5000 {
		q := randomQueuedRequest(r, i)
		q.ID, q.EventID, q.Position, q.Best = ID(1+r.Int64N(1<<62)), ID(1+r.Int64N(1000)), r.Int64N(1e15), nil
		q.UserID, q.IdempotencyKey, q.RequestHash = jt.Pick(r, plain), jt.Pick(r, plain), jt.Pick(r, plain)
		for j := range q.SeatIDs {
			q.SeatIDs[j] = jt.Pick(r, plain)
		}
		if q.TraceParent != "" {
			q.TraceParent = jt.Pick(r, plain)
		}
		if doc := string(q.AppendJSON(nil)); !jsonscantest.Agree(t, doc, (*QueuedRequest).decodeFast, general) {
			t.Errorf("%s: not on the one pass", doc)
		}
	}
	for _, doc := range commonQueuedRequests {
		if !jsonscantest.Agree(t, doc, (*QueuedRequest).decodeFast, general) {
			t.Errorf("%s: not on the one pass", doc)
		}
	}
	bits := append([]string{`"position":1`, `"Request_ID"`, `"seat_ids":[]`, `"estimated_wait_seconds":1`, `"enqueued_at":"2026-12-07T00:47:09Z"`, `24:00:00`, `+25:00`}, jsonscantest.Bits...)
	accepted := 0
	jsonscantest.Mutants(9, commonQueuedRequests, bits, 50_000, func(doc string) {
		if jsonscantest.Agree(t, doc, (*QueuedRequest).decodeFast, general) {
			accepted++
		}
	})
	t.Logf("one pass took %d of 50,000 mutated records", accepted)
}

func BenchmarkQueuedRequestJSON(b *testing.B) {
	w := 12.5
	q := &QueuedRequest{ID: 266168001122795520, EventID: 266168001122795000, UserID: "user-123456", SeatIDs: []string{"S-AB-123"},
		IdempotencyKey: "0f3c1a9e-1b2c-4d5e-8f90-123456789abc", RequestHash: "9f86d081884c7d659a2feaa0c55ad015",
		Position: 123456, EnqueuedAt: time.Now(), EstimatedWait: &w}
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(q)
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = q.AppendJSON(buf[:0])
		}
	})
}

func BenchmarkDecodeQueuedRequest(b *testing.B) {
	doc := []byte(commonQueuedRequests[0])
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q QueuedRequest
			_ = json.Unmarshal(doc, &q)
		}
	})
	b.Run("DecodeQueuedRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q QueuedRequest
			_ = DecodeQueuedRequest(doc, &q)
		}
	})
}
