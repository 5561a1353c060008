package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestMergeCommand: holdfast merge moves a checkout's lines into another
// and prints the destination; a retry prints the same; bad ids are usage
// errors; a destination that ended fails naming it.
func TestMergeCommand(t *testing.T) {
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
	hf, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := 10
	if _, err := hf.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 42, LocationID: 1}, Set: &n, Reason: "count"}); err != nil {
		t.Fatal(err)
	}
	guest, customer := uuid.New(), uuid.New()
	for id, q := range map[uuid.UUID]int{guest: 2, customer: 1} {
		if _, err := hf.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 42, LocationID: 1, Quantity: q}}}); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"merge", "--shop", "1", "--from", guest.String(), "--into", customer.String()}
	code, out, errOut := run(t, args...)
	if code != 0 || !strings.Contains(out, `"quantity":3`) || !strings.Contains(out, customer.String()) {
		t.Fatalf("merge: %d %s %s", code, out, errOut)
	}
	if code, again, errOut := run(t, args...); code != 0 || again != out {
		t.Fatalf("merge retried: %d %s %s, want %s", code, again, errOut, out)
	}
	if code, _, errOut := run(t, "merge", "--shop", "1", "--from", "x", "--into", customer.String()); code != 2 || !strings.Contains(errOut, "--from") {
		t.Fatalf("bad --from: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, "merge", "--shop", "1", "--from", customer.String(), "--into", customer.String()); code != 2 || !strings.Contains(errOut, "--into") {
		t.Fatalf("--into = --from: %d %s", code, errOut)
	}
}
