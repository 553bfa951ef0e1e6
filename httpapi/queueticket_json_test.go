package httpapi

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
)

// appendJSON writes what encoding/json writes for a queue ticket, for
// tickets of every shape: each optional field there or not, numbers of
// every size, times in and out of UTC, text that needs escaping.
func TestQueueTicketJSONIsEncodingJSONs(t *testing.T) {
	texts := jt.Texts("/queue/266168001122795520", "sold_out")
	jt.Differential(t, 1, 5000, func(r *rand.Rand, i int) queueTicketJSON {
		pick := func(s []string) string { return jt.Pick(r, s) }
		tk := queueTicketJSON{
			RequestID:     boxoffice.ID(r.Int64()),
			EventID:       boxoffice.ID(r.Int64N(1000)),
			Status:        boxoffice.QueueStatus(pick([]string{"waiting", "queued", "held", "rejected", "a\"b"})),
			QueuePosition: r.Int64N(10_000_000) - 5,
			Ahead:         r.Int64(),
			SaleOpensAt:   jt.Time(r),
			StatusURL:     pick(texts),
			EventsURL:     pick(texts),
			Reason:        pick(texts),
			Message:       pick(texts),
			PaymentURL:    pick(texts),
			WaitlistURL:   pick(texts),
		}
		if i%7 == 0 {
			tk.SaleOpensAt = time.Time{}
		}
		if r.IntN(2) == 0 {
			f := jt.Pick(r, jt.Floats)
			if r.IntN(2) == 0 {
				f = r.Float64() * math.Pow(10, float64(r.IntN(30)-10))
			}
			tk.EstimatedWaitSeconds = &f
		}
		if r.IntN(2) == 0 {
			n := r.IntN(70_000)
			tk.SeatsLeft = &n
		}
		if r.IntN(2) == 0 {
			n := r.IntN(5) - 1
			tk.ExpectedSeatsLeft = &n
		}
		if r.IntN(2) == 0 {
			tk.BookingID = boxoffice.ID(r.Int64())
			h := tk.SaleOpensAt.Add(time.Duration(r.Int64N(int64(time.Hour))))
			tk.HeldUntil = &h
		}
		return tk
	}, func(tk *queueTicketJSON) ([]byte, error) { return tk.appendJSON(nil), nil })
}

// BenchmarkQueueTicketJSON is the 202's body, by hand and by reflection.
//
//	go test ./httpapi -run '^$' -bench QueueTicketJSON -benchmem
func BenchmarkQueueTicketJSON(b *testing.B) {
	wait := 113.0
	tk := queueTicketJSON{RequestID: 255296395076960256, EventID: 266530388015316992, Status: boxoffice.QueueWaiting,
		EstimatedWaitSeconds: &wait, SaleOpensAt: time.Date(2026, 12, 6, 11, 38, 36, 0, time.UTC),
		StatusURL: "/queue/255296395076960256", EventsURL: "/queue/255296395076960256/events"}
	b.Run("Append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = tk.appendJSON(buf[:0])
		}
	})
	b.Run("EncodingJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&tk); err != nil {
				b.Fatal(err)
			}
		}
	})
}
