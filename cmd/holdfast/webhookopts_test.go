package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/mysql/mysqlcluster"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestWebhookKey (#24 item 7): the webhook secret key is created once in
// the data dir (mode 0600) and read back the same by every command after;
// --webhook-key overrides it; a malformed key or network list is refused.
func TestWebhookKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var f webhookFlags
	first, err := f.options(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, webhookKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 || len(first.SecretKey) != 32 {
		t.Fatalf("key file %v, %v; key %d bytes: want a 0600 file and 32 bytes", st, err, len(first.SecretKey))
	}
	again, err := f.options(dir, true)
	if err != nil || !bytes.Equal(again.SecretKey, first.SecretKey) {
		t.Fatalf("second read: %x, %v; want the same key %x", again.SecretKey, err, first.SecretKey)
	}
	given := webhookFlags{keyHex: strings.Repeat("ab", 32), allow: "127.0.0.0/8, ::1"}
	o, err := given.options(dir, true)
	if err != nil || o.SecretKey[0] != 0xab || len(o.AllowNetworks) != 2 || o.AllowNetworks[1].String() != "::1/128" {
		t.Fatalf("--webhook-key and --webhook-allow-networks: %+v, %v", o, err)
	}
	for _, bad := range []webhookFlags{{keyHex: "abcd"}, {allow: "127.0.0.0/33"}, {allow: "localhost"}} {
		if _, err := bad.options(dir, true); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}

// TestWebhooksAddUsesServesKey: webhooks add never makes a key of its own
// (one would seal a secret the delivering serve cannot open): with the
// database of a serve elsewhere (DATABASE_URL) and no key it refuses in one
// line naming --webhook-key-file, and creates nothing; with the serve's key
// file it registers the endpoint — on PostgreSQL and on MariaDB.
func TestWebhooksAddUsesServesKey(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOLDFAST_ENGINE", "")
	t.Setenv("HOLDFAST_DATA_DIR", "")
	t.Setenv("HOLDFAST_WEBHOOK_KEY", "")
	pg, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	my, err := mysqlcluster.Start(ctx, mysqlcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = my.Stop(context.Background()) })
	admin, err := sql.Open("mysql", my.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE hooks"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{pg.URL("postgres"), my.URL("hooks")} {
		serveDir := t.TempDir() // serve's --data-dir: serve made its key
		var serve webhookFlags
		if _, err := serve.options(serveDir, true); err != nil {
			t.Fatal(err)
		}
		t.Chdir(t.TempDir()) // elsewhere
		t.Setenv("DATABASE_URL", u)
		add := []string{"webhooks", "add", "--shop", "1", "--url", "https://example.com/hook"}
		code, out, errOut := run(t, add...)
		oneLineFailure(t, "webhooks add without serve's key", code, errOut, 1, "no webhook key in .holdfast/"+webhookKeyFile, "--webhook-key-file")
		if out != "" {
			t.Errorf("webhooks add without a key printed %q", out)
		}
		if _, err := os.Stat(defaultDataDir); err == nil {
			t.Fatalf("webhooks add without a key created %s", defaultDataDir)
		}
		code, out, errOut = run(t, append(add, "--webhook-key-file", filepath.Join(serveDir, webhookKeyFile))...)
		if code != 0 || !strings.Contains(out, "registered webhook") {
			t.Fatalf("webhooks add --webhook-key-file (serve's): exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if _, err := os.Stat(defaultDataDir); err == nil {
			t.Fatalf("webhooks add created %s", defaultDataDir)
		}
	}
}
