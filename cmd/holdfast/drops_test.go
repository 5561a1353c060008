package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/wire"
)

// TestDropsUsageErrors: a malformed drop is a usage error naming the flag,
// before any database is opened.
func TestDropsUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/db") // never reached
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"drops", "set", "--item", "9", "--location", "1", "--window", "1m"}, "--shop: must be a positive integer"},
		{[]string{"drops", "set", "--shop", "1", "--item", "9", "--location", "1"}, "--window: must be between"},
		{[]string{"drops", "set", "--shop", "1", "--item", "9", "--location", "1", "--window", "48h"}, "--window: must be between"},
		{[]string{"drops", "set", "--shop", "1", "--item", "9", "--location", "1", "--window", "1m", "--starts-at", "2000-01-01T00:00:00Z"}, "--starts-at: must not be"},
		{[]string{"drops", "set", "--shop", "1", "--item", "9", "--location", "1", "--window", "1m", "--starts-at", "soon"}, "--starts-at: want an RFC 3339 time"},
	} {
		code, _, errOut := run(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want an error with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestDropsCommand: set and read a drop through the CLI.
func TestDropsCommand(t *testing.T) {
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
	if code, out, errOut := run(t, "drops", "set", "--shop", "1", "--item", "70", "--location", "1", "--window", "1m"); code != 0 {
		t.Fatalf("set: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, "drops", "get", "--shop", "1", "--item", "70", "--location", "1")
	var d wire.Drop
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.State != "open" || d.WindowSeconds != 60 || len(d.Commitment) != 64 || d.Seed != "" {
		t.Fatalf("get: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "drops", "set", "--shop", "1", "--item", "70", "--location", "1", "--window", "1h"); code == 0 || !strings.Contains(errOut, "started") {
		t.Fatalf("set in the window: %d\n%s%s", code, out, errOut)
	}
}
