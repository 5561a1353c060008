package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestPodsMoveCLIMariaDB is TestPodsMoveCLI on MariaDB pods (two
// databases of one private MariaDB server; the map on PostgreSQL): `pods
// move` run beside `serve --pods-config` moves the shop, serve's next calls
// reach the target, the move back is the same command; a move onto a pod
// of the other engine is a usage error.
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
	base := startServe(t, "--pods-config", path)
	t.Setenv("DATABASE_URL", pc.URL("control"))
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
	if code, out, errOut := run(t, "pods", "move", "--pods-config", path, "--shop", "1", "--to", "a", "--purge-delay", "1ms"); code != 0 || !strings.Contains(out, "moved shop 1 from b to a (epoch 3, copy)") {
		t.Fatalf("pods move back: exit %d %s%s", code, out, errOut)
	}
	if code, body := call(t, "POST", base+"/v1/shops/1/reservations/"+co2+"/claim", k, ""); code != http.StatusOK {
		t.Fatalf("claim after the move back: %d %s", code, body)
	}
	if a, b := holds("pa"), holds("pb"); a != 2 || b != 0 {
		t.Fatalf("after the move back: holds on a %d, b %d; want 2 and 0", a, b)
	}
}
