package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestStockCommands: stock set applies a matching --expect and refuses a
// stale one with the current value, changing nothing; stock import sets
// its entries from --file, and a retry answers the first outcome.
func TestStockCommands(t *testing.T) {
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx) //nolint:errcheck
	t.Setenv("DATABASE_URL", c.URL("postgres"))
	if code, out, errOut := run(t, "migrate"); code != 0 {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	key := []string{"--shop", "1", "--item", "42", "--location", "1"}
	set := func(args ...string) (int, string, string) {
		return run(t, append(append([]string{"stock", "set"}, key...), args...)...)
	}
	if code, out, errOut := set("--available", "5", "--reason", "count", "--expect", "0"); code != 0 || !strings.Contains(out, `"available":5`) {
		t.Fatalf("set expecting 0 of a new key: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := set("--available", "9", "--reason", "sync", "--expect", "4"); code == 0 || !strings.Contains(errOut, "expected available 4, current 5") {
		t.Fatalf("stale --expect: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := set("--available", "9", "--reason", "sync", "--expect", "-2"); code != 2 || !strings.Contains(errOut, "--expect") {
		t.Fatalf("bad --expect: %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "import.json")
	body := `{"import_id":"erp-1","reason":"sync","entries":[{"item_id":43,"location_id":1,"available":2},{"item_id":42,"location_id":1,"available":7,"expected_available":5}]}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "stock", "import", "--shop", "1", "--file", file)
	if code != 0 || !strings.Contains(out, `"replayed":false`) || !strings.Contains(out, `"available":7`) {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := run(t, "stock", "import", "--shop", "1", "--file", file); code != 0 || !strings.Contains(out, `"replayed":true`) {
		t.Fatalf("import retried: %d %s %s", code, out, errOut)
	}
}
