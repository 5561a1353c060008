package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestPodsMoveCLI: `holdfast pods move` moves a shop that `holdfast serve
// --pods-config` serves — from another process's pools, so the only fence
// is the pods' own placement guard — and serve's next calls of the shop go
// to the target: its holds are there, new ones land there, none stay on
// the source. `pods abort` on a finished move changes nothing; the move
// back is the same command.
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
	base := startServe(t, "--pods-config", path)
	t.Setenv("DATABASE_URL", c1.URL("control"))
	code, out, errOut := run(t, "keys", "create", "--shop", "1")
	if code != 0 {
		t.Fatalf("keys create: %d %s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	k := strings.TrimSpace(lines[len(lines)-1])
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
}
