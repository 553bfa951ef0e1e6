package httpapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/boxoffice/boxoffice/auth"
)

// With traces off a request is not traced, but a caller's traceparent
// still passes through: its trace id comes back in X-Trace-Id (and goes on
// to the queue and the logs). With a tracer provider installed, every
// request has a trace.
func TestTraceIDWithTracesOffAndOn(t *testing.T) {
	a, err := auth.New([]byte("trace-test-secret-trace-test-secret"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(nil, nil, a, slog.New(slog.DiscardHandler)))
	defer srv.Close()
	tok, _ := a.Issue("alice", "", time.Hour)
	prevProp := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	defer otel.SetTextMapPropagator(prevProp)
	traceID := func(traceparent string) string {
		t.Helper()
		req, _ := http.NewRequest("DELETE", srv.URL+"/waitlist/x", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if traceparent != "" {
			req.Header.Set("Traceparent", traceparent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-Trace-Id")
	}
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	if id := traceID(""); id != "" {
		t.Errorf("traces off, no traceparent: X-Trace-Id %q", id)
	}
	if id := traceID("00-" + caller + "-00f067aa0ba902b7-01"); id != caller {
		t.Errorf("traces off, the caller's traceparent: X-Trace-Id %q, want %s", id, caller)
	}

	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(t.Context())
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)
	if id := traceID(""); len(id) != 32 {
		t.Errorf("traces on: X-Trace-Id %q, want a trace id", id)
	}
	if id := traceID("00-" + caller + "-00f067aa0ba902b7-01"); id != caller {
		t.Errorf("traces on, the caller's traceparent: X-Trace-Id %q, want %s", id, caller)
	}
}
