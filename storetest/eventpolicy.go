package storetest

import (
	"testing"

	"github.com/boxoffice/boxoffice"
	"github.com/google/go-cmp/cmp"
)

func (s suite) eventPolicy(t *testing.T) {
	s.test(t, "CreateEventKeepsTheRefundAndResalePolicy", func(t *testing.T, f *fixture) {
		// Each event has a policy of its own; Event and Events both read
		// it back.
		strict := f.newEvent()
		strict.Refundable, strict.RefundCutoffHours = true, 48
		strict.ResaleDisabled = true
		open := f.newEvent()
		open.ResaleCapPercent = 120
		plain := f.newEvent() // the zero policy: no refunds, resale without a cap
		for _, e := range []*boxoffice.Event{strict, open, plain} {
			if err := f.store.CreateEvent(f.ctx, e); err != nil {
				t.Fatalf("CreateEvent: %v", err)
			}
			got, err := f.store.Event(f.ctx, e.ID)
			if err != nil {
				t.Fatalf("Event: %v", err)
			}
			if diff := cmp.Diff(storedEvent(e), got, opts); diff != "" {
				t.Errorf("Event(%d) mismatch (-want +got):\n%s", e.ID, diff)
			}
		}
		got, err := f.store.Events(f.ctx, boxoffice.EventFilter{Limit: 10})
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		want := []*boxoffice.Event{storedEvent(plain), storedEvent(open), storedEvent(strict)}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("Events mismatch (-want +got):\n%s", diff)
		}
	})
}
