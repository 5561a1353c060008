package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestAuditCommands: cancel-holds cancels an item's holds with a reason;
// audit lists the cancel, the stock change and a key created by the
// command line, naming cli or library as who; bad input is a usage error
// naming the flag.
func TestAuditCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cancel-holds", "--shop", "1", "--item", "7"}, "--reason: is required"},
		{[]string{"cancel-holds", "--shop", "1", "--reason", "x"}, "name at least one of"},
		{[]string{"audit"}, "--shop is required"},
		{[]string{"audit", "--shop", "1", "--action", "Bad!"}, "--action: must be an audit action"},
	} {
		t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/db") // never reached
		if code, _, errOut := run(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
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
	n := 10
	if _, err := hc.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 1}, Set: &n, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if _, err := hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "cancel-holds", "--shop", "1", "--item", "7", "--reason", "recall")
	if code != 0 || !strings.Contains(out, "cancelled "+id.String()) || !strings.Contains(out, "units back: 2×7@1") {
		t.Fatalf("cancel-holds: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "keys", "create", "--shop", "1", "--name", "sync"); code != 0 {
		t.Fatalf("keys create: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = run(t, "audit", "--shop", "1", "--json")
	if code != 0 {
		t.Fatalf("audit: %d\n%s%s", code, out, errOut)
	}
	var p holdfast.AuditPage
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	var got []string
	for _, e := range p.Entries {
		got = append(got, e.Action+" "+e.Actor)
	}
	if strings.Join(got, ", ") != "key.create cli, hold.cancel cli, stock.set library" {
		t.Fatalf("audit entries: %v", got)
	}
	if code, out, _ := run(t, "audit", "--shop", "1", "--action", "hold.cancel"); code != 0 || !strings.Contains(out, `"reason":"recall"`) || strings.Count(out, "\n") != 2 {
		t.Fatalf("audit --action hold.cancel: %d\n%s", code, out)
	}
}
