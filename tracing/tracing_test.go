package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/boxoffice/boxoffice/tracing"
)

// TestParentCarriesTheTrace: a traceparent taken from a span and given to
// another context (as a queued request carries it through the log) makes
// that context's spans part of the same trace, and the log lines written
// with it carry the trace id.
func TestParentCarriesTheTrace(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "reserve")
	defer span.End()
	parent := tracing.Parent(ctx)
	if !strings.HasPrefix(parent, "00-"+span.SpanContext().TraceID().String()+"-") {
		t.Fatalf("Parent = %q, want a traceparent of trace %s", parent, span.SpanContext().TraceID())
	}
	later := tracing.FromParent(context.Background(), parent)
	_, child := tp.Tracer("test").Start(later, "decide")
	defer child.End()
	if child.SpanContext().TraceID() != span.SpanContext().TraceID() {
		t.Fatalf("the child is in trace %s, want %s", child.SpanContext().TraceID(), span.SpanContext().TraceID())
	}
	if got := tracing.FromParent(context.Background(), "not a traceparent"); tracing.TraceID(got) != "" {
		t.Fatalf("a malformed traceparent gave trace %q", tracing.TraceID(got))
	}
	if tracing.Parent(context.Background()) != "" {
		t.Fatal("Parent of an untraced context is not empty")
	}

	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler{Handler: slog.NewTextHandler(&buf, nil)}).With("part", "worker")
	log.InfoContext(later, "decided")
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], "trace_id="+span.SpanContext().TraceID().String()) || !strings.Contains(lines[0], "part=worker") {
		t.Errorf("log line with a traced context: %s", lines[0])
	}
	if strings.Contains(lines[1], "trace_id=") {
		t.Errorf("log line without a context has a trace id: %s", lines[1])
	}
}
