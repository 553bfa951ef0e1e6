package boxoffice

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
)

// AppendJSON writes what encoding/json writes for a queued request, for
// requests of every shape: each optional field there or not, times in and
// out of UTC, text that needs escaping.
func TestQueuedRequestAppendJSONIsEncodingJSONs(t *testing.T) {
	texts := jt.Texts("user-42", "S-A-1", "5f2c9a", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	jt.Differential(t, 3, 5000, func(r *rand.Rand, i int) QueuedRequest {
		pick := func(s []string) string { return jt.Pick(r, s) }
		q := QueuedRequest{
			ID:             ID(r.Int64()),
			EventID:        ID(r.Int64N(1000)),
			UserID:         pick(texts),
			IdempotencyKey: pick(texts),
			RequestHash:    pick(texts),
			Position:       r.Int64N(10_000_000) - 5,
			EnqueuedAt:     jt.Time(r),
		}
		switch r.IntN(3) {
		case 0: // nil: null
		case 1:
			q.SeatIDs = []string{}
		default:
			for range 1 + r.IntN(4) {
				q.SeatIDs = append(q.SeatIDs, pick(texts))
			}
		}
		if r.IntN(4) == 0 {
			q.Best = &BestAvailable{Quantity: r.IntN(8), Section: pick(texts), Features: []SeatFeature{"aisle"}}
		}
		if r.IntN(2) == 0 {
			q.TraceParent = pick(texts)
		}
		if r.IntN(2) == 0 {
			f := jt.Pick(r, jt.Floats)
			q.EstimatedWait = &f
		}
		return q
	}, func(q *QueuedRequest) ([]byte, error) {
		// Appended after what the buffer holds, which stays.
		got := q.AppendJSON([]byte("x"))
		if got[0] != 'x' {
			return got, fmt.Errorf("the buffer's byte became %q", got[0])
		}
		return got[1:], nil
	})
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
