package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/webhook"
)

// TestPodsMoveCLI: `holdfast pods move` moves a shop that `holdfast serve
// --pods-config` serves — from another process's pools, so the only fence
// is the pods' own placement guard — and serve's next calls of the shop go
// to the target: its holds are there, new ones land there, none stay on
// the source. `pods abort` on a finished move changes nothing; the move
// back is the same command. A webhook endpoint of the shop, registered
// through serve (on the shop's pod), receives every event of the shop
// across both moves: serve delivers each pod's shops.
func TestPodsMoveCLI(t *testing.T) {
	ctx := context.Background()
	// Pod a's server can stream a shop (wal_level logical), pod b's
	// cannot: the move to b streams, the move back copies under the fence.
	start := func(logical bool) *pgcluster.Cluster {
		c, err := pgcluster.Start(ctx, pgcluster.Options{Logical: logical})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		return c
	}
	c1, c2 := start(true), start(false)
	for _, d := range []struct {
		c    *pgcluster.Cluster
		name string
	}{{c1, "control"}, {c1, "pa"}, {c2, "pb"}} {
		conn, err := pgx.Connect(ctx, d.c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+d.name)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`{"control": {"url": %q}, "default_pod": "a",
	  "pods": [{"name": "a", "url": %q, "max_conns": 6}, {"name": "b", "url": %q, "max_conns": 6}]}`,
		c1.URL("control"), c1.URL("pa"), c2.URL("pb"))
	path := filepath.Join(t.TempDir(), "pods.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// A webhook receiver: the cursors it was sent (at least once).
	var hmu sync.Mutex
	got := map[int64]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := strconv.ParseInt(r.Header.Get(webhook.CursorHeader), 10, 64)
		if err == nil {
			hmu.Lock()
			got[c] = true
			hmu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	base := startServe(t, "--pods-config", path, "--webhook-allow-networks", "127.0.0.0/8",
		"--webhook-key", strings.Repeat("5a", webhook.SecretKeySize))
	t.Setenv("DATABASE_URL", c1.URL("control"))
	code, out, errOut := run(t, "keys", "create", "--shop", "1")
	if code != 0 {
		t.Fatalf("keys create: %d %s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	k := strings.TrimSpace(lines[len(lines)-1])
	code, out, errOut = run(t, "keys", "create", "--admin")
	if code != 0 {
		t.Fatalf("keys create --admin: %d %s%s", code, out, errOut)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	admin := strings.TrimSpace(lines[len(lines)-1])
	// Shop 1's endpoint, on its pod (a), from its first event: it is
	// delivered there, moves with the shop to b and back, and receives
	// every event of the shop.
	if code, body := call(t, "POST", base+"/v1/shops/1/webhooks", admin, `{"url": "`+rcv.URL+`/hook", "after": 0}`); code != http.StatusCreated {
		t.Fatalf("webhook: %d %s", code, body)
	}
	if n := countRows(t, c1.URL("pa"), "SELECT count(*) FROM webhook_endpoints WHERE shop_id = 1"); n != 1 {
		t.Fatalf("shop 1's endpoint on pod a: %d rows", n)
	}
	// delivered waits until every event of shop 1 on the pod at u, from
	// cursor 1 to its feed's head, reached the endpoint.
	delivered := func(u, when string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			head := countRows(t, u, "SELECT coalesce((SELECT last_seq FROM holdfast_event_shops WHERE shop_id = 1), 0)")
			pending := countRows(t, u, "SELECT count(*) FROM holdfast_events WHERE shop_id = 1 AND seq IS NULL")
			var missing []int64
			hmu.Lock()
			for c := int64(1); c <= head; c++ {
				if !got[c] {
					missing = append(missing, c)
				}
			}
			hmu.Unlock()
			if head > 0 && pending == 0 && len(missing) == 0 {
				t.Logf("%s: the endpoint received cursors 1..%d", when, head)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("webhook %s: the shop's feed is at %d (%d unsequenced); the endpoint misses %v", when, head, pending, missing)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if code, body := call(t, "PUT", base+"/v1/shops/1/inventory/42/1", k, `{"available": 10, "reason": "stocktake"}`); code != http.StatusOK {
		t.Fatalf("stock: %d %s", code, body)
	}
	reserve := func(id string) {
		t.Helper()
		if code, body := call(t, "POST", base+"/v1/shops/1/reservations", k, `{"checkout_id":"`+id+`","lines":[{"item_id":42,"location_id":1,"quantity":1}]}`); code != http.StatusCreated {
			t.Fatalf("reserve %s: %d %s", id, code, body)
		}
	}
	const co1, co2 = "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42", "7f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e43"
	reserve(co1)
	holds := func(u string) int {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM holds WHERE shop_id = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if a, b := holds(c1.URL("pa")), holds(c2.URL("pb")); a != 1 || b != 0 {
		t.Fatalf("before the move: holds on a %d, b %d", a, b)
	}
	code, out, errOut = run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "b", "--purge-delay", "1ms")
	if code != 0 || !regexp.MustCompile(`moved shop 1 from a to b \(epoch 2, stream\): \d+ rows, fence \d+ ms \(wait \d+, catch-up`).MatchString(out) {
		t.Fatalf("pods move: exit %d %s%s", code, out, errOut)
	}
	t.Log(strings.TrimSpace(out))
	// serve's router has the old placement cached: its write is refused by
	// pod a's guard, and it goes to b.
	reserve(co2)
	if code, body := call(t, "GET", base+"/v1/shops/1/reservations/"+co1, k, ""); code != http.StatusOK || !strings.Contains(string(body), `"held"`) {
		t.Fatalf("the hold reserved before the move: %d %s", code, body)
	}
	if a, b := holds(c1.URL("pa")), holds(c2.URL("pb")); a != 0 || b != 2 {
		t.Fatalf("after the move: holds on a %d, b %d; want 0 and 2", a, b)
	}
	// Delivered by pod b's deliverer: the endpoint moved with the shop.
	if n := countRows(t, c2.URL("pb"), "SELECT count(*) FROM webhook_endpoints WHERE shop_id = 1"); n != 1 {
		t.Fatalf("shop 1's endpoint on pod b after the move: %d rows", n)
	}
	delivered(c2.URL("pb"), "on pod b")
	if code, out, errOut := run(t, "pods", "abort", "--pods-config", path, "--shop", "1"); code != 0 || !strings.Contains(out, "served by pod b; copies deleted on []") {
		t.Fatalf("pods abort after a finished move: exit %d %s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "b"); code == 0 || !strings.Contains(out+errOut, "already") {
		t.Fatalf("pods move onto the shop's own pod: exit %d %s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "a", "--purge-delay", "1ms"); code != 0 || !strings.Contains(out, "moved shop 1 from b to a (epoch 3, copy)") {
		t.Fatalf("pods move back: exit %d %s%s", code, out, errOut)
	}
	if code, body := call(t, "POST", base+"/v1/shops/1/reservations/"+co2+"/claim", k, ""); code != http.StatusOK {
		t.Fatalf("claim after the move back: %d %s", code, body)
	}
	if a, b := holds(c1.URL("pa")), holds(c2.URL("pb")); a != 2 || b != 0 {
		t.Fatalf("after the move back: holds on a %d, b %d; want 2 and 0", a, b)
	}
	// Every event of the shop, from cursor 1 to the feed's head, reached
	// the endpoint across both moves.
	delivered(c1.URL("pa"), "after the move back")
}

func countRows(t *testing.T, u, q string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
