package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
	jt "github.com/boxoffice/boxoffice/internal/jsonappend/jsonappendtest"
	"github.com/boxoffice/boxoffice/internal/jsonscan/jsonscantest"
)

// Two listeners (two API processes) both get every notice.
func TestNotifier(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client) {
		prefix := newPrefix(t, client)
		n := NewNotifier(client, prefix)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := [2]chan boxoffice.QueueNotice{make(chan boxoffice.QueueNotice, 10), make(chan boxoffice.QueueNotice, 10)}
		for i := range got {
			go n.Listen(ctx, func(q boxoffice.QueueNotice) { got[i] <- q })
		}
		want := boxoffice.QueueNotice{RequestID: 7, EventID: 9, UserID: "fan", Status: boxoffice.QueueHeld}
		// Subscriptions take a moment; publish until both have heard.
		deadline := time.After(10 * time.Second)
		for i := range got {
			for heard := false; !heard; {
				if err := n.Notify(ctx, want); err != nil {
					t.Fatal(err)
				}
				select {
				case q := <-got[i]:
					if q != want {
						t.Fatalf("listener %d got %+v, want %+v", i, q, want)
					}
					heard = true
				case <-time.After(50 * time.Millisecond):
				case <-deadline:
					t.Fatalf("listener %d heard nothing", i)
				}
			}
		}
		// A drained batch travels as one message; each listener gets
		// every notice of it, in order.
		batch := []boxoffice.QueueNotice{
			{RequestID: 11, EventID: 9, UserID: "a", Status: boxoffice.QueueHeld},
			{RequestID: 12, EventID: 9, UserID: "b", Status: boxoffice.QueueRejected},
			{RequestID: 13, EventID: 9, UserID: "c", Status: boxoffice.QueueRejected},
		}
		if err := n.Notify(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			for j := 0; j < len(batch); {
				select {
				case q := <-got[i]:
					if q == want {
						continue // a copy of the first notice, published again above
					}
					if q != batch[j] {
						t.Fatalf("listener %d got %+v, want %+v", i, q, batch[j])
					}
					j++
				case <-deadline:
					t.Fatalf("listener %d heard %d of the batch's %d notices", i, j, len(batch))
				}
			}
		}
	})
}

// noticesFast accepts only what decodeNoticesGeneral reads whole, and makes
// of it what the general way makes: on what Notify writes (one notice, a
// batch, every status, the escapes and ids of every sign) and on 50,000
// random mutations of it.
func TestNoticesFastAgreesWithTheGeneralWay(t *testing.T) {
	general := func(b []byte, out *[]boxoffice.QueueNotice) error {
		*out = decodeNoticesGeneral(string(b))
		if *out == nil {
			return errors.New("unreadable")
		}
		return nil
	}
	check := func(doc string) bool {
		t.Helper()
		return jsonscantest.Agree(t, doc, noticesFast, general)
	}
	texts := jt.Texts("fan-1", "user-123456")
	statuses := []boxoffice.QueueStatus{boxoffice.QueueHeld, boxoffice.QueueRejected, boxoffice.QueueQueued, "a\"b"}
	r := rand.New(rand.NewPCG(13, 14))
	var docs []string
	for i := range 2000 {
		ns := make([]boxoffice.QueueNotice, 1+r.IntN(4))
		plain := i%2 == 0
		for j := range ns {
			ns[j] = boxoffice.QueueNotice{RequestID: boxoffice.ID(r.Int64() - r.Int64()), EventID: boxoffice.ID(r.Int64N(1000)),
				UserID: jt.Pick(r, texts), Status: jt.Pick(r, statuses)}
			if plain {
				ns[j].RequestID, ns[j].UserID, ns[j].Status = boxoffice.ID(1+r.Int64N(1<<62)), "fan-1", boxoffice.QueueHeld
			}
		}
		var doc []byte
		if len(ns) == 1 {
			doc, _ = json.Marshal(ns[0])
		} else {
			doc, _ = json.Marshal(ns)
		}
		if fast := check(string(doc)); plain && !fast {
			t.Errorf("%s: not on the one pass", doc)
		}
		if i < 20 {
			docs = append(docs, string(doc))
		}
	}
	docs = append(docs, `[]`, `{}`, ` [ {"request_id":"1","event_id":"2","user_id":"u","status":"held"} ] `)
	bits := append([]string{`"request_id":"5"`, `"Status"`, `"-"`, `"+1"`, `"01"`, `{}`, `"event_id":"-0"`}, jsonscantest.Bits...)
	accepted := 0
	jsonscantest.Mutants(15, docs, bits, 50_000, func(doc string) {
		if check(doc) {
			accepted++
		}
	})
	t.Logf("one pass took %d of 50,000 mutated messages", accepted)
}

func BenchmarkDecodeNotices(b *testing.B) {
	ns := make([]boxoffice.QueueNotice, 500)
	for i := range ns {
		ns[i] = boxoffice.QueueNotice{RequestID: boxoffice.ID(266168001122795520 + i), EventID: 266168001122795000, UserID: fmt.Sprintf("user-%d", i), Status: boxoffice.QueueRejected}
	}
	msg, _ := json.Marshal(ns)
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeNoticesGeneral(string(msg))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ns)), "ns/notice")
	})
	b.Run("decodeNotices", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeNotices(string(msg))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ns)), "ns/notice")
	})
}
