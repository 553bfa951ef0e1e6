// Package tracing is boxoffice's OpenTelemetry adapter: Setup turns traces
// on from the standard OTEL_* variables (off by default), LogHandler puts
// the trace id on every log line written with a request's context, and
// Parent / FromParent carry a trace across the queue (a queued request
// keeps the W3C traceparent of the reserve that enqueued it, so that the
// booking worker's decision joins the buyer's trace).
package tracing

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is the tracer of boxoffice's spans. It goes through the global
// provider, so it traces once Setup (or a test) has installed one; before,
// the hot paths skip their spans (Active).
func Tracer() trace.Tracer { return otel.Tracer("github.com/boxoffice/boxoffice") }

// unset is the global tracer provider before anyone installs one: otel's
// delegating provider, whose tracers make spans that record nothing.
var unset = otel.GetTracerProvider()

// Active reports whether spans started under ctx are worth starting: a
// tracer provider is installed (Setup, or a test's), or ctx carries a
// trace, such as a caller's traceparent, that must pass through to the
// queue and the logs. When it is false a request's spans are skipped: with
// traces off, the global tracer's do-nothing spans still cost their
// options, a look-up and allocations on every request.
func Active(ctx context.Context) bool {
	return otel.GetTracerProvider() != unset || trace.SpanContextFromContext(ctx).IsValid()
}

// Enabled says whether the environment asks for traces: an OTLP endpoint
// is set (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// and OTEL_TRACES_EXPORTER is not "none" (OTEL_SDK_DISABLED=true turns
// everything off).
func Enabled() bool {
	if os.Getenv("OTEL_SDK_DISABLED") == "true" || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs a tracer provider exporting over OTLP/HTTP as the OTEL_*
// variables say (endpoint, headers, sampler: OTEL_TRACES_SAMPLER), with
// service.name from OTEL_SERVICE_NAME or service, and the W3C propagator.
// Without Enabled it installs only the propagator (incoming traceparents
// still pass through to the queue and the logs). shutdown flushes the
// spans left.
func Setup(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(service)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, err
	}
	// resource.Default reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES;
	// they win over the default name given here.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// Parent returns the W3C traceparent of ctx's span, "" if it has none.
func Parent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// FromParent returns ctx with the remote span context of a traceparent
// (Parent's), or ctx as it is for "" or one that does not parse.
func FromParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// TraceID returns the trace id of ctx's span, "" if it has none.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// LogHandler adds trace_id and span_id to every record logged with a
// context that carries a span.
type LogHandler struct{ slog.Handler }

// Handle implements slog.Handler.
func (h LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h LogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return LogHandler{h.Handler.WithAttrs(as)}
}

// WithGroup implements slog.Handler.
func (h LogHandler) WithGroup(name string) slog.Handler { return LogHandler{h.Handler.WithGroup(name)} }
