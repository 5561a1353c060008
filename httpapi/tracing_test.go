package httpapi_test

import (
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
