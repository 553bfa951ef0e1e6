package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice"
)

// The outcome journal keeps the first outcome of each request, answers by
// id, counts per event, and takes a batch in one call.
func TestQueueOutcomeJournal(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	ev, other := newID(), newID()
	at := t0.Truncate(time.Millisecond)
	var batch []boxoffice.QueueRecord
	for i := range 5 {
		r := boxoffice.QueueRecord{RequestID: newID(), EventID: ev, UserID: "fan", Position: int64(i + 1),
			QueueOutcome: boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, Message: "taken", FinishedAt: at}}
		if i%2 == 0 {
			r.QueueOutcome = boxoffice.QueueOutcome{Status: boxoffice.QueueHeld, BookingID: r.RequestID, HeldUntil: at.Add(time.Minute), FinishedAt: at}
		}
		batch = append(batch, r)
	}
	batch = append(batch, boxoffice.QueueRecord{RequestID: newID(), EventID: other, UserID: "x", Position: 1,
		QueueOutcome: boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, FinishedAt: at}})
	stored, err := s.RecordQueueOutcomes(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		if stored[i] != batch[i] {
			t.Errorf("stored %+v, want %+v", stored[i], batch[i])
		}
	}
	// A redelivery that decided otherwise gets the first outcome back.
	again := batch[0]
	again.QueueOutcome = boxoffice.QueueOutcome{Status: boxoffice.QueueRejected, Reason: boxoffice.ESEATTAKEN, FinishedAt: at.Add(time.Second)}
	stored, err = s.RecordQueueOutcomes(ctx, []boxoffice.QueueRecord{again})
	if err != nil || stored[0] != batch[0] {
		t.Fatalf("redelivery: %+v %v, want the first outcome %+v", stored, err, batch[0])
	}
	got, err := s.QueueRecords(ctx, []boxoffice.ID{batch[1].RequestID, batch[2].RequestID, newID()})
	if err != nil || len(got) != 2 || got[batch[1].RequestID] != batch[1] || got[batch[2].RequestID] != batch[2] {
		t.Fatalf("QueueRecords: %+v %v", got, err)
	}
	served, err := s.QueueServed(ctx, []boxoffice.ID{ev, other, newID()})
	if err != nil || len(served) != 2 || served[ev] != 5 || served[other] != 1 {
		t.Fatalf("QueueServed: %v %v", served, err)
	}
	if _, err := s.RecordQueueOutcomes(ctx, []boxoffice.QueueRecord{{RequestID: newID(), EventID: ev,
		QueueOutcome: boxoffice.QueueOutcome{Status: boxoffice.QueueQueued}}}); boxoffice.ErrorCode(err) != boxoffice.EINVALID {
		t.Fatalf("a non-final outcome: %v, want EINVALID", err)
	}
}
