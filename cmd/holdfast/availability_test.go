package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/wire"
)

// TestAvailabilityUsageErrors: a malformed availability query is a usage
// error naming the flag, before any database is opened.
func TestAvailabilityUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/db") // never reached
	many := strings.TrimSuffix(strings.Repeat("1,", holdfast.AvailabilityItemsMax+1), ",")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"availability", "--items", "1"}, "--shop: must be a positive integer"},
		{[]string{"availability", "--shop", "1"}, "--items: name at least one item"},
		{[]string{"availability", "--shop", "1", "--items", "1,0"}, "--items[1]: must be a positive integer"},
		{[]string{"availability", "--shop", "1", "--items", many}, "--items: at most 100 items"},
		{[]string{"availability", "--shop", "1", "--items", "1", "--locations", "2,2"}, "--locations[1]: duplicates"},
		{[]string{"availability", "--shop", "1", "--items", "x"}, "--items"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestAvailabilityCommand: availability prints per item and location what
// the engine answers, as a table or as the API's JSON.
func TestAvailabilityCommand(t *testing.T) {
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
	pool, err := pgxpool.New(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for loc, n := range map[int64]int{1: 10, 2: 3} {
		if _, err := hc.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 7, LocationID: loc}, Set: &n, Reason: "stocktake"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hc.SetSafetyStock(ctx, holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}, 4); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "availability", "--shop", "1", "--items", "7,8")
	if code != 2 || !strings.Contains(errOut, "--locations: the shop has no default location order") {
		t.Fatalf("no order: %d\n%s%s", code, out, errOut)
	}
	if err := hc.SetLocationOrder(ctx, 1, []int64{2, 1}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "availability", "--shop", "1", "--items", "7,8")
	if code != 0 {
		t.Fatalf("availability: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"7     2         3", "7     1         6", "7     total     9         whole 6", "8     2         0         not stocked"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = run(t, "availability", "--shop", "1", "--items", "7", "--locations", "1", "--json")
	var a wire.Availability
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil || len(a.Items) != 1 || a.Items[0].Sellable != 6 {
		t.Fatalf("--json: %d\n%s%s", code, out, errOut)
	}
}
