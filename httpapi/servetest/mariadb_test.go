package servetest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/webhook"
)

// TestServeMariaDB: the one-flag path. `holdfast serve --engine mariadb`
// with DATABASE_URL unset starts a private MariaDB; `holdfast keys create
// --engine mariadb` with the same --data-dir reaches it; the key reserves
// and claims over HTTP, the level shows the claim; a webhook endpoint added
// by `holdfast webhooks add --engine mariadb` receives the events, signed;
// a revoked key stops working; SIGTERM shuts down cleanly
// (exit 0) and takes the private server's URL file with it.
func TestServeMariaDB(t *testing.T) {
	t.Parallel()
	if _, _, err := mysqlcluster.FindBinaries(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	s := serve(t, "", "--engine", "mariadb", "--data-dir", dir, "--webhook-allow-networks", "127.0.0.0/8")
	urlFile := filepath.Join(dir, "mariadb-serve.url")
	if _, err := os.Stat(urlFile); err != nil {
		t.Fatalf("no URL file for holdfast keys: %v", err)
	}
	run2 := func(t *testing.T, args ...string) string {
		t.Helper()
		out, errOut, err := run(t, "", args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		return out
	}
	keys := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(t, "", append([]string{"keys"}, append(args, "--engine", "mariadb", "--data-dir", dir)...)...)
		if err != nil {
			t.Fatalf("keys %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		return out
	}
	lastLine := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	key := lastLine(keys("create", "--shop", "1"))
	if !strings.HasPrefix(key, "hf_") {
		t.Fatalf("keys create: last line is not a key: %q", key)
	}

	// A webhook endpoint (registered by the CLI, from the feed's start)
	// receives the shop's events, signed.
	var mu sync.Mutex
	var got []string
	var secret string
	verified := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if secret == "" || webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), 0) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &ev)
		got = append(got, ev.Type)
		verified++
	}))
	defer recv.Close()
	sec := lastLine(run2(t, "webhooks", "add", "--shop", "1", "--url", recv.URL, "--after", "0", "--engine", "mariadb", "--data-dir", dir,
		"--webhook-allow-networks", "127.0.0.0/8"))
	if !strings.HasPrefix(sec, "whsec_") {
		t.Fatalf("webhooks add: last line is not a secret: %q", sec)
	}
	mu.Lock()
	secret = sec
	mu.Unlock()

	inv := s.url + "/v1/shops/1/inventory/7/1"
	if st, body := call(t, "PUT", inv, key, `{"available":5,"reason":"stock"}`); st != 200 {
		t.Fatalf("set: %d %s", st, body)
	}
	const checkout = "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"
	if st, body := call(t, "POST", s.url+"/v1/shops/1/reservations", key,
		`{"checkout_id":"`+checkout+`","lines":[{"item_id":7,"location_id":1,"quantity":2}]}`); st != 201 || !strings.Contains(body, `"status":"held"`) {
		t.Fatalf("reserve: %d %s", st, body)
	}
	if st, body := call(t, "POST", s.url+"/v1/shops/1/reservations/"+checkout+"/claim", key, ""); st != 200 || !strings.Contains(body, `"status":"claimed"`) {
		t.Fatalf("claim: %d %s", st, body)
	}
	if st, body := call(t, "GET", inv, key, ""); st != 200 || !strings.Contains(body, `"available":3`) || !strings.Contains(body, `"held":0`) {
		t.Fatalf("level after the claim: %d %s", st, body)
	}
	if st, body := call(t, "GET", s.url+"/readyz", "", ""); st != 200 {
		t.Fatalf("readyz: %d %s", st, body)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		mu.Lock()
		n, types := verified, strings.Join(got, ",")
		mu.Unlock()
		if n >= 3 && strings.Contains(types, "hold.claimed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook deliveries after a minute: %d verified, types %s", n, types)
		}
		time.Sleep(50 * time.Millisecond) // polling the condition, not timing it
	}

	admin := lastLine(keys("create", "--admin"))
	if st, body := call(t, "GET", s.url+"/v1/shops/1/webhooks", admin, ""); st != 200 || !strings.Contains(body, `"url":"`+recv.URL+`"`) {
		t.Fatalf("webhooks on MariaDB: %d %s", st, body)
	}
	if out := keys("list"); !strings.Contains(out, "shop 1") || !strings.Contains(out, "admin") || strings.Contains(out, key) {
		t.Fatalf("keys list:\n%s", out)
	}
	keys("revoke", key)
	// Servers trust a key for KeyCacheTTLDefault (5s): poll, bounded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ := call(t, "GET", inv, key, "")
		if st == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a revoked key still answers %d", st)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, s.stderr.String())
	}
	logs := s.stderr.String()
	if !strings.Contains(logs, `"msg":"shut down"`) || !strings.Contains(logs, `"route":"claim","status":200`) {
		t.Fatalf("log:\n%s", logs)
	}
	if strings.Contains(logs, key[3:]) || strings.Contains(logs, admin[3:]) {
		t.Fatal("a key appears in the log")
	}
	if _, err := os.Stat(urlFile); !os.IsNotExist(err) {
		t.Fatalf("the URL file outlives serve: %v", err)
	}
	// Without a running serve, keys says what to do (exit 1, no URL).
	_, errOut, err := run(t, "", "keys", "list", "--engine", "mariadb", "--data-dir", dir)
	if exitCode(err) != 1 || !strings.Contains(errOut, "holdfast serve --engine mariadb") {
		t.Fatalf("keys list without serve: %v\n%s", err, errOut)
	}
}

// TestServeMySQLURL: DATABASE_URL=mysql://… alone selects the MySQL engine
// for serve and keys (no --engine): the schema is migrated on start, a key
// made by `holdfast keys create` reserves and claims, and SIGTERM exits 0.
func TestServeMySQLURL(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 4)
	u := (&url.URL{Scheme: "mysql", User: url.UserPassword(db.Config.User, db.Config.Passwd), Host: db.Config.Addr, Path: "/" + db.Config.DBName}).String()
	// An empty database: serve migrates it.
	if _, err := db.DB.Exec("DROP TABLE api_keys"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.Exec("DELETE FROM schema_migrations WHERE version = 8"); err != nil {
		t.Fatal(err)
	}
	s := serve(t, u)
	out, errOut, err := run(t, u, "keys", "create", "--shop", "1")
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if st, body := call(t, "PUT", s.url+"/v1/shops/1/inventory/7/1", key, `{"available":5,"reason":"stock"}`); st != 200 {
		t.Fatalf("set: %d %s", st, body)
	}
	const checkout = "0b7e5a3c-2f41-4d8e-9c6a-1e2d3f4a5b6c"
	if st, body := call(t, "POST", s.url+"/v1/shops/1/reservations", key,
		`{"checkout_id":"`+checkout+`","lines":[{"item_id":7,"location_id":1,"quantity":2}]}`); st != 201 {
		t.Fatalf("reserve: %d %s", st, body)
	}
	if st, body := call(t, "POST", s.url+"/v1/shops/1/reservations/"+checkout+"/claim", key, ""); st != 200 || !strings.Contains(body, `"status":"claimed"`) {
		t.Fatalf("claim: %d %s", st, body)
	}
	var avail int
	if err := db.DB.QueryRow("SELECT available FROM inventory_levels WHERE shop_id = 1 AND inventory_item_id = 7 AND location_id = 1").Scan(&avail); err != nil || avail != 3 {
		t.Fatalf("available in the MySQL database after the claim: %d, %v (want 3)", avail, err)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, s.stderr.String())
	}
	if logs := s.stderr.String(); !strings.Contains(logs, `"engine":"mysql"`) || strings.Contains(logs, db.Config.Passwd) && db.Config.Passwd != "" {
		t.Fatalf("log (want the engine named, never the password):\n%s", logs)
	}
}
