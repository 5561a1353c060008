package httpapi_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/holdfast/holdfast/httpapi"
)

// Every request is one span named for its route, with its answer's status
// (and error code): the operation span that statement spans join.
func TestRequestSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, envOpts{maxConns: 4, server: httpapi.Config{TracerProvider: tp}})
	e.stock(1, 7, 1)
	id := uuid.New()
	e.expect(req{method: "POST", path: "/v1/shops/1/reservations", key: "shop1", body: reserveBody(id, line(7, 1), "")}, 201, "")
	e.expect(req{method: "POST", path: "/v1/shops/1/reservations", key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")}, 409, "insufficient_stock")
	e.expect(req{method: "POST", path: "/v1/shops/1/reservations/" + id.String() + "/claim", key: "shop1"}, 200, "")

	type want struct {
		name   string
		status int64
		code   string
	}
	wants := []want{{"holdfast reserve", 201, ""}, {"holdfast reserve", 409, "insufficient_stock"}, {"holdfast claim", 200, ""}}
	spans := rec.Ended()
	if len(spans) != len(wants) {
		t.Fatalf("got %d spans, want %d", len(spans), len(wants))
	}
	for i, s := range spans {
		got := want{name: s.Name()}
		for _, a := range s.Attributes() {
			switch a.Key {
			case "http.response.status_code":
				got.status = a.Value.AsInt64()
			case "holdfast.error_code":
				got.code = a.Value.AsString()
			}
		}
		if got != wants[i] {
			t.Errorf("span %d: %+v, want %+v", i, got, wants[i])
		}
	}
}

// A fresh server's request series exist at zero, so dashboards and alerts
// read 0, not "No data" (issue #12 item 6).
func TestRequestSeriesAtZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{maxConns: 4})
	r := e.expect(req{method: "GET", path: "/metrics", key: "admin"}, 200, "")
	for _, want := range []string{
		`holdfast_http_requests_total{outcome="ok",route="reserve",status="201"} 0`,
		`holdfast_http_requests_total{outcome="ok",route="claim",status="200"} 0`,
		`holdfast_http_requests_total{outcome="insufficient_stock",route="reserve",status="409"} 0`,
		`holdfast_http_requests_total{outcome="overloaded",route="release",status="503"} 0`,
		`holdfast_http_request_duration_seconds_count{outcome="ok",route="set_inventory"} 0`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
