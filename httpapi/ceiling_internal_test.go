package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// BenchmarkCeilingReserve is the API's own cost of one reservation: the
// ceiling's handler, no network, no database.
func BenchmarkCeilingReserve(b *testing.B) {
	const key = "hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	s, err := Ceiling(key, 1, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := `{"checkout_id":"` + uuid.NewString() + `","lines":[{"item_id":1,"location_id":1,"quantity":1}]}`
			r := httptest.NewRequest(http.MethodPost, "/v1/shops/1/reservations", strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+key)
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}

// TestLogErrorsOnly: with Config.LogErrorsOnly a success writes no log
// line and an error still does.
func TestLogErrorsOnly(t *testing.T) {
	const key = "hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	var logs strings.Builder
	s, err := Ceiling(key, 1, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.LogErrorsOnly = true
	send := func(body string) int {
		r := httptest.NewRequest(http.MethodPost, "/v1/shops/1/reservations", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	if c := send(`{"checkout_id":"` + uuid.NewString() + `","lines":[{"item_id":1,"location_id":1,"quantity":1}]}`); c != 201 || logs.Len() != 0 {
		t.Fatalf("success: %d, logged %q", c, logs.String())
	}
	if c := send(`{}`); c != 400 || !strings.Contains(logs.String(), `"status":400`) {
		t.Fatalf("error: %d, logged %q", c, logs.String())
	}
}
