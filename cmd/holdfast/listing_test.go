package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pgcluster"
	"github.com/holdfast/holdfast/postgres"
)

// TestListingUsageErrors: malformed holds and ledger queries are usage
// errors naming the flag, before any database is opened.
func TestListingUsageErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:1/db") // never reached
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"holds"}, "--shop: must be a positive integer"},
		{[]string{"holds", "--shop", "-1"}, "--shop: must be a positive integer"},
		{[]string{"holds", "--shop", "1", "--item", "0"}, "--item and --location must be positive"},
		{[]string{"holds", "--shop", "1", "--status", "pending"}, "--status: must be held, claimed, released or expired"},
		{[]string{"holds", "--shop", "1", "--limit", "0"}, "--limit: must be between 1 and 500"},
		{[]string{"holds", "--shop", "1", "--limit", "501"}, "--limit: must be between 1 and 500"},
		{[]string{"holds", "--shop", "1", "--cursor", "nope"}, "--cursor: not a cursor of this listing"},
		{[]string{"holds", "--shop", "x"}, `--shop "x": must be a whole number`},
		{[]string{"ledger", "--shop", "1", "--item", "1"}, "--location: must be a positive integer"},
		{[]string{"ledger", "--item", "1", "--location", "1"}, "--shop: must be a positive integer"},
		{[]string{"ledger", "--shop", "1", "--item", "1", "--location", "1", "--cursor", "h1.AAAA"}, "--cursor: not a cursor of this listing"},
		{[]string{"ledger", "--shop", "1", "--item", "1", "--location", "1", "extra"}, "unexpected arguments"},
	}
	for _, c := range cases {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestHoldsAndLedgerCommands: holds and ledger print what the engine
// lists, page by page with their cursors, or all pages with --all.
func TestHoldsAndLedgerCommands(t *testing.T) {
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
	var ids []uuid.UUID
	for range 3 {
		id := uuid.New()
		if _, err := hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 7, LocationID: 1, Quantity: 2}}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := hc.Claim(ctx, 1, ids[0]); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := run(t, "holds", "--shop", "1", "--limit", "2")
	if code != 0 || strings.Count(out, "\n") != 4 || !strings.Contains(out, "next: h1.") {
		t.Fatalf("holds --limit 2: %d\n%s%s", code, out, errOut)
	}
	next := strings.TrimPrefix(strings.TrimSpace(out[strings.LastIndex(out, "next: "):]), "next: ")
	code, out2, errOut := run(t, "holds", "--shop", "1", "--limit", "2", "--cursor", next)
	if code != 0 || strings.Count(out2, "\n") != 2 || strings.Contains(out2, "next:") {
		t.Fatalf("holds, second page: %d\n%s%s", code, out2, errOut)
	}
	for _, id := range ids {
		if strings.Count(out+out2, id.String()) != 1 {
			t.Errorf("checkout %s not listed once over the two pages:\n%s%s", id, out, out2)
		}
	}
	if code, out, _ := run(t, "holds", "--shop", "1", "--status", "claimed", "--json"); code != 0 || !strings.Contains(out, ids[0].String()) || strings.Contains(out, ids[1].String()) {
		t.Errorf("holds --status claimed --json: %d\n%s", code, out)
	}
	if code, out, _ := run(t, "holds", "--shop", "1", "--limit", "1", "--all"); code != 0 || strings.Count(out, "CHECKOUT") != 3 || strings.Count(out, "next:") != 2 {
		t.Errorf("holds --all: %d\n%s", code, out)
	}
	code, out, errOut = run(t, "ledger", "--shop", "1", "--item", "7", "--location", "1")
	if code != 0 || !strings.Contains(out, "claim") || !strings.Contains(out, ids[0].String()) || !strings.Contains(out, "stocktake") || !strings.Contains(out, "-2") {
		t.Errorf("ledger: %d\n%s%s", code, out, errOut)
	}
}
