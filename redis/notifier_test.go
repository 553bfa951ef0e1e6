package redis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/boxoffice/boxoffice"
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
