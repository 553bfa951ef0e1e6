package sale

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/tracing"
)

// batchSpans are the spans of a drain batch's requests: one decision span
// per request, a child of the reserve that enqueued it (its traceparent,
// carried through the request log), so the buyer's trace runs from the
// API through Kafka to the worker. The batch's steps are shared by all its
// requests (one script call, one transaction), so each request's trace
// gets a child span of each step with the step's own times.
type batchSpans struct {
	spans map[*queued]trace.Span
}

func startDecisions(ctx context.Context, ps []*queued) batchSpans {
	b := batchSpans{spans: make(map[*queued]trace.Span, len(ps))}
	for _, p := range ps {
		if p.r.TraceParent == "" {
			continue
		}
		_, span := tracing.Tracer().Start(tracing.FromParent(ctx, p.r.TraceParent), "boxoffice.queue.decide",
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
				attribute.String("boxoffice.request_id", p.r.ID.String()),
				attribute.String("boxoffice.event_id", p.r.EventID.String()),
				attribute.Int64("boxoffice.position", p.r.Position),
				attribute.Int("boxoffice.batch", len(ps))))
		if span.IsRecording() {
			b.spans[p] = span
		}
	}
	return b
}

// step records a step of the batch, from start to now, in each trace.
func (b batchSpans) step(name string, start time.Time) {
	if len(b.spans) == 0 {
		return
	}
	end := time.Now()
	for _, span := range b.spans {
		_, s := tracing.Tracer().Start(trace.ContextWithSpan(context.Background(), span), name, trace.WithTimestamp(start))
		s.End(trace.WithTimestamp(end))
	}
}

// end closes the decision spans with what became of each request.
func (b batchSpans) end() {
	for p, span := range b.spans {
		switch {
		case p.out != nil:
			span.SetAttributes(attribute.String("boxoffice.status", string(p.out.Status)),
				attribute.String("boxoffice.reason", p.out.Reason))
		case p.err != nil:
			span.SetStatus(codes.Error, boxoffice.ErrorCode(p.err))
		}
		span.End()
	}
}
