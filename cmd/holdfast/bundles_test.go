package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestBundlesUsageErrors: a malformed definition is a usage error naming
// the flag, before any database is opened.
func TestBundlesUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/db") // never reached
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bundles", "set", "--item", "9", "--component", "1x1"}, "--shop: must be a positive integer"},
		{[]string{"bundles", "set", "--shop", "1", "--component", "1x1"}, "--item: must be a positive integer"},
		{[]string{"bundles", "set", "--shop", "1", "--item", "9"}, "--components: a bundle needs at least one component"},
		{[]string{"bundles", "set", "--shop", "1", "--item", "9", "--component", "1x0"}, "components[0].quantity"},
		{[]string{"bundles", "set", "--shop", "1", "--item", "9", "--component", "one"}, "want ITEMxQTY"},
	} {
		code, _, errOut := run(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want an error with %q", c.args, code, errOut, c.want)
		}
	}
}

// TestBundlesCommand: set, get and delete a bundle through the CLI; a
// nested definition is refused naming its flag.
func TestBundlesCommand(t *testing.T) {
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
	if code, out, errOut := run(t, "bundles", "set", "--shop", "1", "--item", "900", "--component", "42x1", "--component", "43x2"); code != 0 {
		t.Fatalf("set: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := run(t, "bundles", "get", "--shop", "1", "--item", "900")
	var b holdfast.Bundle
	want := holdfast.Bundle{ShopID: 1, ItemID: 900, Components: []holdfast.BundleComponent{{ItemID: 42, Quantity: 1}, {ItemID: 43, Quantity: 2}}}
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || !reflect.DeepEqual(b, want) {
		t.Fatalf("get: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "bundles", "set", "--shop", "1", "--item", "901", "--component", "900x1"); code != 2 || !strings.Contains(errOut, "bundles do not nest") {
		t.Fatalf("nested: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "bundles", "delete", "--shop", "1", "--item", "900"); code != 0 {
		t.Fatalf("delete: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "bundles", "get", "--shop", "1", "--item", "900"); code == 0 || !strings.Contains(errOut, "not a bundle") {
		t.Fatalf("get after delete: %d\n%s%s", code, out, errOut)
	}
}
