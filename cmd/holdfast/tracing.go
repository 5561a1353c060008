package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/holdfast/holdfast/postgres/pgops"
)

// tracingEnv are the standard OpenTelemetry variables that, set, turn
// tracing on without --otlp-endpoint.
var tracingEnv = []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"}

// statementTracer gives every SQL statement (and batch) of a pool a span
// through otelpgx. otelpgx only records statements inside a caller's span:
// statements of an HTTP request join its span (httpapi starts one per
// request, "holdfast reserve"); a statement without one (maintenance, the
// combiner's shared batches) gets a root span of its own, named for the
// route of its sqlcommenter comment, with otelpgx's statement span under
// it. Safe for concurrent use.
type statementTracer struct {
	*otelpgx.Tracer
	roots trace.Tracer
}

type rootSpanKey struct{}

func (t *statementTracer) root(ctx context.Context, sql string) context.Context {
	if trace.SpanFromContext(ctx).IsRecording() {
		return ctx
	}
	route := pgops.ParseComment(sql).Route
	if route == "" {
		route = "sql"
	}
	ctx, span := t.roots.Start(ctx, "holdfast "+route, trace.WithAttributes(attribute.String("holdfast.route", route)))
	return context.WithValue(ctx, rootSpanKey{}, span)
}

func endRoot(ctx context.Context) {
	if span, ok := ctx.Value(rootSpanKey{}).(trace.Span); ok {
		span.End()
	}
}

// TraceQueryStart implements pgx.QueryTracer.
func (t *statementTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return t.Tracer.TraceQueryStart(t.root(ctx, data.SQL), conn, data)
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t *statementTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	t.Tracer.TraceQueryEnd(ctx, conn, data)
	endRoot(ctx)
}

// TraceBatchStart implements pgx.BatchTracer.
func (t *statementTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	sql := ""
	if data.Batch != nil && len(data.Batch.QueuedQueries) > 0 {
		sql = data.Batch.QueuedQueries[0].SQL
	}
	return t.Tracer.TraceBatchStart(t.root(ctx, sql), conn, data)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (t *statementTracer) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	t.Tracer.TraceBatchEnd(ctx, conn, data)
	endRoot(ctx)
}

// startTracing turns OpenTelemetry tracing on when it is configured: an
// OTLP/HTTP endpoint (e.g. http://127.0.0.1:4318), or the standard
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT variables. Off (nil tracer, no-op
// shutdown) otherwise. The tracer gives each SQL statement a span (otelpgx:
// statement text, no parameters; see statementTracer); the SDK reads the
// other OTEL_* variables (sampler, headers). shutdown flushes the spans
// still buffered.
func startTracing(ctx context.Context, endpoint string) (*statementTracer, func(context.Context) error, error) {
	nop := func(context.Context) error { return nil }
	configured := endpoint != ""
	for _, v := range tracingEnv {
		configured = configured || os.Getenv(v) != ""
	}
	if !configured {
		return nil, nop, nil
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		// Like OTEL_EXPORTER_OTLP_ENDPOINT: a base URL gets the traces path.
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, nop, usageError("--otlp-endpoint wants an http(s) URL such as http://127.0.0.1:4318")
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nop, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "holdfast"), attribute.String("service.version", version)))
	if err != nil {
		return nil, nop, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	// Global, so spans the engine or HTTP layer may start join these.
	otel.SetTracerProvider(tp)
	return &statementTracer{
		Tracer: otelpgx.NewTracer(otelpgx.WithTracerProvider(tp), otelpgx.WithTrimSQLInSpanName()),
		roots:  tp.Tracer("github.com/holdfast/holdfast/cmd/holdfast"),
	}, tp.Shutdown, nil
}
