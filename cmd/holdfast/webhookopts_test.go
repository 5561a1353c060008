package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWebhookKey (#24 item 7): the webhook secret key is created once in
// the data dir (mode 0600) and read back the same by every command after;
// --webhook-key overrides it; a malformed key or network list is refused.
func TestWebhookKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var f webhookFlags
	first, err := f.options(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, webhookKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 || len(first.SecretKey) != 32 {
		t.Fatalf("key file %v, %v; key %d bytes: want a 0600 file and 32 bytes", st, err, len(first.SecretKey))
	}
	again, err := f.options(dir)
	if err != nil || !bytes.Equal(again.SecretKey, first.SecretKey) {
		t.Fatalf("second read: %x, %v; want the same key %x", again.SecretKey, err, first.SecretKey)
	}
	given := webhookFlags{keyHex: strings.Repeat("ab", 32), allow: "127.0.0.0/8, ::1"}
	o, err := given.options(dir)
	if err != nil || o.SecretKey[0] != 0xab || len(o.AllowNetworks) != 2 || o.AllowNetworks[1].String() != "::1/128" {
		t.Fatalf("--webhook-key and --webhook-allow-networks: %+v, %v", o, err)
	}
	for _, bad := range []webhookFlags{{keyHex: "abcd"}, {allow: "127.0.0.0/33"}, {allow: "localhost"}} {
		if _, err := bad.options(dir); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}
