package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestTracingOffByDefault: without an endpoint or OTEL_* variables there is
// no tracer.
func TestTracingOffByDefault(t *testing.T) {
	for _, v := range tracingEnv {
		t.Setenv(v, "")
	}
	tr, stop, err := startTracing(context.Background(), "")
	if err != nil || tr != nil {
		t.Fatalf("tracer %v, err %v; want none", tr, err)
	}
	_ = stop(context.Background())
}

// TestTracingExportsStatements: with --otlp-endpoint, each SQL statement of
// a traced pool becomes a span that reaches an OTLP/HTTP receiver, with the
// statement's text and the service's name, under a root span named for the
// statement's route (no caller span here).
func TestTracingExportsStatements(t *testing.T) {
	for _, v := range tracingEnv {
		t.Setenv(v, "")
	}
	ctx := context.Background()
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		req := &coltrace.ExportTraceServiceRequest{}
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer recv.Close()

	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx) //nolint:errcheck
	tr, stop, err := startTracing(ctx, recv.URL)
	if err != nil || tr == nil {
		t.Fatalf("tracer %v, err %v", tr, err)
	}
	db := &database{URL: c.URL("postgres")}
	pool, err := db.tracedPool(ctx, 2, "holdfast-test", tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "/* app='holdfast',route='reserve' */ SELECT 41 + 1"); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if err := stop(ctx); err != nil { // flushes the batch
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	var service bool
	var spans []*tracev1.Span
	for _, req := range got {
		for _, rs := range req.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				service = service || (a.GetKey() == "service.name" && a.GetValue().GetStringValue() == "holdfast")
			}
			for _, ss := range rs.GetScopeSpans() {
				spans = append(spans, ss.GetSpans()...)
			}
		}
	}
	roots := map[string]bool{}
	for _, sp := range spans {
		if sp.GetName() == "holdfast reserve" && len(sp.GetParentSpanId()) == 0 {
			roots[string(sp.GetSpanId())] = true
		}
	}
	var statement, child bool
	for _, sp := range spans {
		for _, a := range sp.GetAttributes() {
			if strings.Contains(a.GetValue().GetStringValue(), "SELECT 41 + 1") {
				statement = true
				child = child || roots[string(sp.GetParentSpanId())]
			}
		}
	}
	if !statement || !service || !child {
		t.Fatalf("receiver got %d exports; a span with the statement: %v, under a root span \"holdfast reserve\": %v; service.name holdfast: %v",
			len(got), statement, child, service)
	}
}
