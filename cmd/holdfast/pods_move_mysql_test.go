package main

import (
	"context"
	"database/sql"
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

	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/webhook"
)

// TestPodsMoveCLIMariaDB is TestPodsMoveCLI on MariaDB pods (two
// databases of one private MariaDB server; the map on PostgreSQL): `pods
// move` run beside `serve --pods-config` moves the shop, serve's next calls
// reach the target, the move back is the same command; a move onto a pod
// of the other engine is a usage error. A webhook endpoint of the shop
// moves with it — its id and cursor, though pod b has an endpoint of
// another shop with the same id (migration 020 keyed the webhook tables by
// shop and id) — and receives every event of the shop across both moves.
func TestPodsMoveCLIMariaDB(t *testing.T) {
	ctx := context.Background()
	pc, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Stop(context.Background()) })
	for _, name := range []string{"control", "pg"} {
		conn, err := pgx.Connect(ctx, pc.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	mc, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Stop(context.Background()) })
	admin, err := sql.Open("mysql", mc.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	for _, name := range []string{"pa", "pb"} {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`{"control": {"url": %q}, "default_pod": "a",
	  "pods": [{"name": "a", "engine": "mariadb", "url": %q, "max_conns": 6}, {"name": "b", "engine": "mariadb", "url": %q, "max_conns": 6},
	           {"name": "p", "url": %q, "max_conns": 4}]}`,
		pc.URL("control"), mc.URL("pa"), mc.URL("pb"), pc.URL("pg"))
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
	t.Setenv("DATABASE_URL", pc.URL("control"))
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
	adminKey := strings.TrimSpace(lines[len(lines)-1])
	rows := func(q string) int64 {
		t.Helper()
		var n int64
		if err := admin.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Pod b's own endpoint of another shop, with the id shop 1's gets on
	// pod a (every pod's ids start at 1): the move must carry shop 1's
	// beside it. serve migrated both pods when it started.
	if _, err := admin.ExecContext(ctx, "INSERT INTO pb.webhook_endpoints (id, shop_id, url, secret, created_at) VALUES (1, 5, 'https://example.com/h', 's', UTC_TIMESTAMP(6))"); err != nil {
		t.Fatal(err)
	}
	// Shop 1's endpoint, on its pod (a), from its first event.
	if code, body := call(t, "POST", base+"/v1/shops/1/webhooks", adminKey, `{"url": "`+rcv.URL+`/hook", "after": 0}`); code != http.StatusCreated || !strings.Contains(string(body), `"id":1,`) {
		t.Fatalf("webhook: %d %s (want id 1)", code, body)
	}
	// delivered waits until every event of shop 1 on the pod db, from
	// cursor 1 to its feed's head, reached the endpoint, and answers the
	// endpoint's cursor there.
	delivered := func(db, when string) int64 {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			head := rows("SELECT COALESCE((SELECT last_seq FROM " + db + ".holdfast_event_shops WHERE shop_id = 1), 0)")
			pending := rows("SELECT count(*) FROM " + db + ".holdfast_events WHERE shop_id = 1 AND seq IS NULL")
			cursor := rows("SELECT COALESCE(MAX(`cursor`), -1) FROM " + db + ".webhook_endpoints WHERE shop_id = 1 AND id = 1")
			var missing []int64
			hmu.Lock()
			for c := int64(1); c <= head; c++ {
				if !got[c] {
					missing = append(missing, c)
				}
			}
			hmu.Unlock()
			if head > 0 && pending == 0 && len(missing) == 0 && cursor == head {
				t.Logf("%s: the endpoint received cursors 1..%d", when, head)
				return cursor
			}
			if time.Now().After(deadline) {
				t.Fatalf("webhook %s: the shop's feed is at %d (%d unsequenced), the endpoint's cursor at %d; it misses %v", when, head, pending, cursor, missing)
			}
			time.Sleep(50 * time.Millisecond) // polling the condition, not timing it
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
	holds := func(db string) int {
		var n int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM "+db+".holds WHERE shop_id = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if a, b := holds("pa"), holds("pb"); a != 1 || b != 0 {
		t.Fatalf("before the move: holds on a %d, b %d", a, b)
	}
	before := delivered("pa", "on pod a")
	if code, out, errOut := run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "p"); code == 0 || !strings.Contains(out+errOut, "one engine") {
		t.Fatalf("pods move onto a PostgreSQL pod: exit %d %s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "b", "--purge-delay", "1ms")
	if code != 0 || !regexp.MustCompile(`moved shop 1 from a to b \(epoch 2, copy\): \d+ rows, fence \d+ ms`).MatchString(out) {
		t.Fatalf("pods move: exit %d %s%s", code, out, errOut)
	}
	t.Log(strings.TrimSpace(out))
	reserve(co2)
	if code, body := call(t, "GET", base+"/v1/shops/1/reservations/"+co1, k, ""); code != http.StatusOK || !strings.Contains(string(body), `"held"`) {
		t.Fatalf("the hold reserved before the move: %d %s", code, body)
	}
	if a, b := holds("pa"), holds("pb"); a != 0 || b != 2 {
		t.Fatalf("after the move: holds on a %d, b %d; want 0 and 2", a, b)
	}
	// The endpoint moved with the shop, its cursor with it (at least where
	// it was: the move carried it, then pod b's deliverer went on), beside
	// pod b's own endpoint 1; none is left on pod a.
	if n := rows("SELECT count(*) FROM pb.webhook_endpoints WHERE shop_id = 1 AND id = 1 AND `cursor` >= " + strconv.FormatInt(before, 10)); n != 1 {
		t.Fatalf("shop 1's endpoint on pod b after the move, cursor at least %d: %d rows", before, n)
	}
	if a, b := rows("SELECT count(*) FROM pa.webhook_endpoints"), rows("SELECT count(*) FROM pb.webhook_endpoints WHERE shop_id = 5"); a != 0 || b != 1 {
		t.Fatalf("after the move: endpoints on a %d, shop 5's on b %d; want 0 and 1", a, b)
	}
	delivered("pb", "on pod b")
	if code, out, errOut := run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "a", "--purge-delay", "1ms"); code != 0 || !strings.Contains(out, "moved shop 1 from b to a (epoch 3, copy)") {
		t.Fatalf("pods move back: exit %d %s%s", code, out, errOut)
	}
	if code, body := call(t, "POST", base+"/v1/shops/1/reservations/"+co2+"/claim", k, ""); code != http.StatusOK {
		t.Fatalf("claim after the move back: %d %s", code, body)
	}
	if a, b := holds("pa"), holds("pb"); a != 2 || b != 0 {
		t.Fatalf("after the move back: holds on a %d, b %d; want 2 and 0", a, b)
	}
	// Every event of the shop, from cursor 1 to the feed's head, reached
	// the endpoint across both moves.
	delivered("pa", "after the move back")
}
