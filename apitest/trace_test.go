package apitest

import (
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestProductionTraceAcrossTheQueue runs the production shape (PostgreSQL,
// Redis, Kafka) with an in-memory exporter and follows one queued reserve:
// the API's span, the admission to the queue, and the booking worker's
// decision with its hold and its database write are one trace, reached
// through the Kafka record's traceparent; the trace id is the response's
// X-Trace-Id.
func TestProductionTraceAcrossTheQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
		_ = tp.Shutdown(ctx)
	})

	env := newProductionEnv(t, "Redis", envOr("BOXOFFICE_TEST_REDIS", "redis://127.0.0.1:6379/0"))
	s := env.stack(t, 1)
	ev := s.queuedEvent(t, -time.Minute)
	fan := s.client(t, "traced-fan", "")
	q, r := fan.enqueue(ev, "t-1", "A-A-1")
	if r.Status != http.StatusAccepted {
		t.Fatalf("queued reserve: %d %s", r.Status, r.Body)
	}
	traceID := r.Header.Get("X-Trace-Id")
	if len(traceID) != 32 {
		t.Fatalf("X-Trace-Id = %q, want a trace id", traceID)
	}
	s.StartWorkers(t, 1)
	if out := fan.awaitOutcome(q.RequestID); out.Status != "held" {
		t.Fatalf("outcome %+v", out)
	}
	// The worker ends its spans as the batch ends, just after the outcome
	// is announced: wait for them.
	want := []string{"POST /bookings/reserve", "boxoffice.queue.admit", "boxoffice.queue.decide",
		"boxoffice.holds.acquire_many", "boxoffice.store.create_bookings", "boxoffice.queue.finish_many"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]sdktrace.ReadOnlySpan{}
		for _, sp := range rec.Ended() {
			if sp.SpanContext().TraceID().String() == traceID {
				got[sp.Name()] = sp
			}
		}
		missing := []string{}
		for _, name := range want {
			if got[name] == nil {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			api, decide := got["POST /bookings/reserve"], got["boxoffice.queue.decide"]
			if decide.Parent().SpanID() != got["POST /bookings/reserve"].SpanContext().SpanID() {
				t.Errorf("the decision's parent is %s, want the API's span %s", decide.Parent().SpanID(), api.SpanContext().SpanID())
			}
			if !decide.Parent().IsRemote() {
				t.Errorf("the decision's parent is not remote: the trace did not come through the request log")
			}
			if w := got["boxoffice.store.create_bookings"]; w.Parent().SpanID() != decide.SpanContext().SpanID() {
				t.Errorf("the database write is not a child of the decision")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s lacks %v (spans ended: %d)", traceID, missing, len(rec.Ended()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
