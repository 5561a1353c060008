package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/wire"
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
		{[]string{"ledger", "--shop", "1", "--item", "1", "--location", "1", "--cursor", "h1.AAAA"}, "--cursor: the cursor is of a shop's holds, not of this listing"},
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
	// --json prints the HTTP listing's wire shapes: times with 6 fraction
	// digits (wire.Time) even when they end in zeros, no field the HTTP
	// page lacks.
	// (The ledger is append-only: its guard is lifted for this one update.)
	if _, err := pool.Exec(ctx, `ALTER TABLE inventory_ledger DISABLE TRIGGER USER;
		UPDATE inventory_ledger SET created_at = '2026-12-02 03:10:45.7100+00';
		ALTER TABLE inventory_ledger ENABLE TRIGGER USER`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE holds SET created_at = '2026-12-02 03:10:45.5+00'"); err != nil {
		t.Fatal(err)
	}
	sixDigits := regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*)?Z"`)
	for _, c := range []struct {
		args []string
		into any
	}{
		{[]string{"holds", "--shop", "1", "--json"}, &wire.HoldPage{}},
		{[]string{"ledger", "--shop", "1", "--item", "7", "--location", "1", "--json"}, &wire.LedgerPage{}},
	} {
		code, out, errOut := run(t, c.args...)
		if code != 0 {
			t.Fatalf("%q: %d\n%s%s", c.args, code, out, errOut)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(c.into); err != nil {
			t.Errorf("%q is not the HTTP page's shape: %v\n%s", c.args, err, out)
		}
		for _, ts := range sixDigits.FindAllString(out, -1) {
			if !regexp.MustCompile(`\.\d{6}Z"$`).MatchString(ts) {
				t.Errorf("%q prints time %s; HTTP prints 6 fraction digits", c.args, ts)
			}
		}
	}

	code, out, errOut = run(t, "ledger", "--shop", "1", "--item", "7", "--location", "1")
	if code != 0 || !strings.Contains(out, "claim") || !strings.Contains(out, ids[0].String()) || !strings.Contains(out, "stocktake") || !strings.Contains(out, "-2") {
		t.Errorf("ledger: %d\n%s%s", code, out, errOut)
	}
}
