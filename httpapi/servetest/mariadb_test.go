package servetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast/mariadbcluster"
)

// TestServeMariaDB: the one-flag path. `holdfast serve --engine mariadb`
// with DATABASE_URL unset starts a private MariaDB; `holdfast keys create
// --engine mariadb` with the same --data-dir reaches it; the key reserves
// and claims over HTTP, the level shows the claim; a revoked key stops
// working; webhooks answer 501 not_supported; SIGTERM shuts down cleanly
// (exit 0) and takes the private server's URL file with it.
func TestServeMariaDB(t *testing.T) {
	t.Parallel()
	if _, _, err := mariadbcluster.FindBinaries(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	s := serve(t, "", "--engine", "mariadb", "--data-dir", dir)
	urlFile := filepath.Join(dir, "mariadb-serve.url")
	if _, err := os.Stat(urlFile); err != nil {
		t.Fatalf("no URL file for holdfast keys: %v", err)
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

	admin := lastLine(keys("create", "--admin"))
	if st, body := call(t, "GET", s.url+"/v1/shops/1/webhooks", admin, ""); st != 501 || !strings.Contains(body, `"not_supported"`) {
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
