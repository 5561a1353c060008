package httpapi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestWaitlist walks a checkout through the waitlist over HTTP: a short
// reservation with wait_seconds is 202 waiting (a retry too), a new buyer
// without it is 409 while the unit comes back, GET answers 202 while it
// waits, 200 with the hold once the server granted it, and a wait that ran
// out is 410 wait_expired. Every answer is checked against openapi.json.
func TestWaitlist(t *testing.T) { t.Parallel(); engines(t, testWaitlist) }

func testWaitlist(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	e.stock(1, 7, 1)
	holder := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(holder, line(7, 1), "")}, 201, "")

	w := uuid.New()
	body := reserveBody(w, line(7, 1), `,"wait_seconds":300,"ttl_seconds":600`)
	res := e.expect(req{method: "POST", path: res1, key: "shop1", body: body}, 202, "")
	if res.json["status"] != "waiting" || res.json["position"] != float64(1) || res.json["checkout_id"] != w.String() {
		t.Fatalf("waiting answer: %s", res.body)
	}
	until, err := time.Parse(time.RFC3339Nano, res.json["wait_until"].(string))
	if err != nil || !until.Equal(e.clock.Now().Add(300*time.Second)) {
		t.Fatalf("wait_until %v (%v), want now + 300 s", res.json["wait_until"], err)
	}
	if res := e.expect(req{method: "POST", path: res1, key: "shop1", body: body}, 202, ""); res.json["position"] != float64(1) {
		t.Fatalf("retry: %s", res.body)
	}
	second := uuid.New()
	if res := e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(second, line(7, 1), `,"wait_seconds":60`)}, 202, ""); res.json["position"] != float64(2) {
		t.Fatalf("second waiter: %s", res.body)
	}
	e.expect(req{method: "GET", path: res1 + "/" + w.String(), key: "shop1"}, 202, "")

	e.expect(req{method: "POST", path: res1 + "/" + holder.String() + "/release", key: "shop1"}, 200, "")
	// Back, not served yet: not for a new buyer.
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")}, 409, "insufficient_stock")
	if _, err := e.eng.ServeWaitlist(ctx); err != nil {
		t.Fatal(err)
	}
	got := e.expect(req{method: "GET", path: res1 + "/" + w.String(), key: "shop1"}, 200, "")
	if got.json["status"] != "held" {
		t.Fatalf("granted: %s", got.body)
	}
	exp, _ := time.Parse(time.RFC3339Nano, got.json["expires_at"].(string))
	if created, _ := time.Parse(time.RFC3339Nano, got.json["created_at"].(string)); !exp.Equal(created.Add(600 * time.Second)) {
		t.Fatalf("granted hold %s, want its ttl_seconds (600)", got.body)
	}
	// A retry of the waiting request now answers the hold.
	e.expect(req{method: "POST", path: res1, key: "shop1", body: body}, 200, "")
	if res := e.expect(req{method: "GET", path: res1 + "/" + second.String(), key: "shop1"}, 202, ""); res.json["position"] != float64(1) {
		t.Fatalf("second waiter after the first was served: %s", res.body)
	}
	// A waiting checkout holds nothing yet: claim says so.
	e.expect(req{method: "POST", path: res1 + "/" + second.String() + "/claim", key: "shop1"}, 409, "checkout_waiting")
	e.clock.Advance(61 * time.Second)
	e.expect(req{method: "GET", path: res1 + "/" + second.String(), key: "shop1"}, 410, "wait_expired")
	// Its outcome is final: a release answers it and changes nothing.
	e.expect(req{method: "POST", path: res1 + "/" + second.String() + "/release", key: "shop1"}, 410, "wait_expired")
	e.expect(req{method: "POST", path: res1 + "/" + second.String() + "/claim", key: "shop1"}, 410, "wait_expired")
	if _, err := e.eng.ServeWaitlist(ctx); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "GET", path: res1 + "/" + second.String(), key: "shop1"}, 410, "wait_expired")
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(second, line(7, 1), `,"wait_seconds":60`)}, 410, "wait_expired")
	e.expect(req{method: "POST", path: res1 + "/" + w.String() + "/claim", key: "shop1"}, 200, "")
}

// TestWaitlistBadInput: a bad wait_seconds is a clear error naming it, and
// writes nothing (no hold, no wait).
func TestWaitlistBadInput(t *testing.T) { t.Parallel(); engines(t, testWaitlistBadInput) }

func testWaitlistBadInput(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	e.stock(1, 7, 1)
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")}, 201, "")
	waiters := func() int {
		var n int
		const q = "SELECT (SELECT count(*) FROM waiters) + (SELECT count(*) FROM waiter_lines)"
		e.countsOn(q, q, &n)
		return n
	}
	before, beforeW := e.snapshot(), waiters()
	for _, c := range []struct {
		name, extra string
		status      int
		code, field string
	}{
		{"wait string", `,"wait_seconds":"60"`, 400, "wrong_type", "wait_seconds"},
		{"wait fraction", `,"wait_seconds":1.5`, 400, "wrong_type", "wait_seconds"},
		{"wait null", `,"wait_seconds":null`, 400, "wrong_type", "wait_seconds"},
		{"wait negative", `,"wait_seconds":-1`, 422, "invalid_argument", "wait_seconds"},
		{"wait above the cap", `,"wait_seconds":901`, 422, "invalid_argument", "wait_seconds"},
		{"wait twice", `,"wait_seconds":5,"wait_seconds":6`, 400, "malformed_json", "wait_seconds"},
		{"wait fine, quantity bad", `,"wait_seconds":60`, 0, "", ""},
	} {
		b := reserveBody(uuid.New(), line(7, 1), c.extra)
		status, code, field := c.status, c.code, c.field
		if status == 0 {
			b = reserveBody(uuid.New(), line(7, 0), c.extra)
			status, code, field = 422, "invalid_argument", "lines[0].quantity"
		}
		res := e.do(req{method: "POST", path: res1, key: "shop1", body: b})
		if res.status != status || res.errCode() != code || res.errField() != field || res.errMember("message") == "" {
			t.Errorf("%s: got %d %s/%q (%s), want %d %s/%q", c.name, res.status, res.errCode(), res.errField(), truncate(res.body), status, code, field)
		}
	}
	if after := e.snapshot(); after != before || waiters() != beforeW {
		t.Fatalf("bad input changed the database:\nbefore %+v, %d waiter rows\nafter  %+v, %d", before, beforeW, after, waiters())
	}
}

// TestWaitlistHandOver (issue 24 items 4 and 5): GETs of a waiting
// checkout while its grant lands answer 202 or 200 — never 404 (hold and
// wait are read in one transaction); releasing a waiting checkout answers
// 410 wait_cancelled (a retry and a GET too), and it is never granted.
func TestWaitlistHandOver(t *testing.T) { t.Parallel(); engines(t, testWaitlistHandOver) }

func testWaitlistHandOver(t *testing.T, engine string) {
	e := newEnvOn(t, engine, envOpts{})
	ctx := context.Background()
	for r := range 10 {
		item := int64(20 + r)
		e.stock(1, item, 1)
		holder := uuid.New()
		e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(holder, line(item, 1), "")}, 201, "")
		w := uuid.New()
		e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(w, line(item, 1), `,"wait_seconds":300`)}, 202, "")
		done := make(chan struct{})
		bad := make(chan string, 4)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
					granted := false // the grant committed before this GET was sent
					select {
					case <-done:
						granted = true
					default:
					}
					res, err := e.try(req{method: "GET", path: res1 + "/" + w.String(), key: "shop1"})
					switch {
					case err != nil:
						bad <- err.Error()
						return
					case res.status == 200:
						return
					case res.status != 202 || granted:
						bad <- fmt.Sprintf("round %d: GET of the waiting checkout while its grant lands: %d %s", r, res.status, truncate(res.body))
						return
					}
				}
				bad <- fmt.Sprintf("round %d: no 200 within 30s", r)
			}()
		}
		e.expect(req{method: "POST", path: res1 + "/" + holder.String() + "/release", key: "shop1"}, 200, "")
		if _, err := e.eng.ServeWaitlist(ctx); err != nil {
			t.Fatal(err)
		}
		close(done)
		wg.Wait()
		close(bad)
		for s := range bad {
			t.Fatal(s)
		}
	}

	// Release of a waiting checkout cancels its wait.
	e.stock(1, 40, 1)
	holder := uuid.New()
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(holder, line(40, 1), "")}, 201, "")
	w := uuid.New()
	body := reserveBody(w, line(40, 1), `,"wait_seconds":300`)
	e.expect(req{method: "POST", path: res1, key: "shop1", body: body}, 202, "")
	e.expect(req{method: "POST", path: res1 + "/" + w.String() + "/release", key: "shop1"}, 410, "wait_cancelled")
	e.expect(req{method: "POST", path: res1 + "/" + w.String() + "/release", key: "shop1"}, 410, "wait_cancelled")
	e.expect(req{method: "GET", path: res1 + "/" + w.String(), key: "shop1"}, 410, "wait_cancelled")
	e.expect(req{method: "POST", path: res1 + "/" + holder.String() + "/release", key: "shop1"}, 200, "")
	if _, err := e.eng.ServeWaitlist(ctx); err != nil {
		t.Fatal(err)
	}
	e.expect(req{method: "GET", path: res1 + "/" + w.String(), key: "shop1"}, 410, "wait_cancelled")
	e.expect(req{method: "POST", path: res1, key: "shop1", body: body}, 410, "wait_cancelled")
	// Its unit sells to a new buyer.
	e.expect(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(40, 1), "")}, 201, "")
}
