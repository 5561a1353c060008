package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBodyReading: how a reservation's body arrives over a real connection
// — a known length, chunked, shorter than its Content-Length, past BodyMax
// unannounced, with a Content-Type parameter — gives the answers the API
// documents, and each answer's access-log line carries every field.
func TestBodyReading(t *testing.T) {
	t.Parallel()
	const key = "hf_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	logs := &syncBuffer{}
	s, err := Ceiling(key, 1, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	url := ts.URL + "/v1/shops/1/reservations"
	body := func() string {
		return `{"checkout_id":"` + uuid.NewString() + `","lines":[{"item_id":1,"location_id":1,"quantity":1}]}`
	}
	// post sends body with the given length (-1: chunked) and content type.
	post := func(t *testing.T, r io.Reader, length int64, ct string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, r)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", ct)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	// onlyReader hides a reader's length from net/http: the body is sent
	// chunked.
	type onlyReader struct{ io.Reader }

	t.Run("known length", func(t *testing.T) {
		b := body()
		if code, got := post(t, strings.NewReader(b), int64(len(b)), "application/json"); code != http.StatusCreated {
			t.Fatalf("%d %s", code, got)
		}
	})
	t.Run("known length past bodyPreallocMax", func(t *testing.T) {
		b := body() + strings.Repeat(" ", bodyPreallocMax)
		if code, got := post(t, strings.NewReader(b), int64(len(b)), "application/json"); code != http.StatusCreated {
			t.Fatalf("%d %s", code, got)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		if code, got := post(t, onlyReader{strings.NewReader(body())}, -1, "application/json"); code != http.StatusCreated {
			t.Fatalf("%d %s", code, got)
		}
	})
	t.Run("content type with a parameter", func(t *testing.T) {
		b := body()
		if code, got := post(t, strings.NewReader(b), int64(len(b)), "application/json; charset=utf-8"); code != http.StatusCreated {
			t.Fatalf("%d %s", code, got)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		b := body()
		if code, got := post(t, strings.NewReader(b), int64(len(b)), "text/plain"); code != http.StatusUnsupportedMediaType || !strings.Contains(got, `"unsupported_media_type"`) {
			t.Fatalf("%d %s", code, got)
		}
	})
	t.Run("chunked past BodyMax", func(t *testing.T) {
		big := `{"checkout_id":"` + validCheckout + `","x":"` + strings.Repeat("a", BodyMax) + `"}`
		if code, got := post(t, onlyReader{strings.NewReader(big)}, -1, "application/json"); code != http.StatusRequestEntityTooLarge || !strings.Contains(got, `"body_too_large"`) {
			t.Fatalf("%d %s", code, got)
		}
	})
	t.Run("shorter than its Content-Length", func(t *testing.T) {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b := body()
		_, err = io.WriteString(c, "POST /v1/shops/1/reservations HTTP/1.1\r\nHost: holdfast\r\nAuthorization: Bearer "+key+
			"\r\nContent-Type: application/json\r\nContent-Length: "+strings.Repeat("9", 3)+"\r\n\r\n"+b)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), `"malformed_json"`) || !strings.Contains(string(got), "cannot read the body") {
			t.Fatalf("%d %s", res.StatusCode, got)
		}
	})

	// Every answer above has its log line, with every field.
	var lines int
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] != "request" {
			continue
		}
		lines++
		for _, f := range []string{"time", "level", "request_id", "method", "route", "status", "duration_ms", "bytes", "shop", "key_id"} {
			if _, ok := m[f]; !ok {
				t.Errorf("log line %q lacks %s", l, f)
			}
		}
		if st := m["status"].(float64); st >= 400 && m["code"] == nil {
			t.Errorf("log line %q: an error's line lacks its code", l)
		}
	}
	if lines != 7 {
		t.Fatalf("%d request lines, want 7:\n%s", lines, logs.String())
	}
}

const validCheckout = "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"
