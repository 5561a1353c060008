package pgops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestDoctorSafetyStock: the doctor lists the keys with a safety stock,
// those at it, and warns about one whose stock beyond its holds is below it.
func TestDoctorSafetyStock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if f := one(t, doctor(t, db.Pool, pgops.DoctorConfig{Engine: c}), "safety"); f.Severity != health.SeverityOK || f.Message != "no key keeps a safety stock" {
		t.Fatalf("no safety stock: %+v", f)
	}
	set := func(item int64, available, safety, hold int) {
		t.Helper()
		k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
		if _, err := c.SetAvailable(ctx, k, available, "stocktake", ""); err != nil {
			t.Fatal(err)
		}
		if hold > 0 {
			if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: hold}}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.SetSafetyStock(ctx, k, safety); err != nil {
			t.Fatal(err)
		}
	}
	set(1, 10, 2, 0) // room to sell
	set(2, 5, 5, 0)  // at its safety stock
	set(3, 5, 3, 4)  // raised over a hold: 1 beyond the hold, safety 3
	rep := doctor(t, db.Pool, pgops.DoctorConfig{Engine: c})
	f := one(t, rep, "safety")
	if f.Severity != health.SeverityOK || !strings.Contains(f.Message, "3 keys keep a safety stock (10 units withheld from sale); 2 at it") ||
		!strings.Contains(f.Message, "1/2/1 available 5, held 0, safety 5") || !strings.Contains(f.Message, "1/3/1 available 5, held 4, safety 3") ||
		strings.Contains(f.Message, "1/1/1") {
		t.Fatalf("safety: %+v", f)
	}
	below := one(t, rep, "safety.below")
	if below.Severity != health.SeverityWarn || !strings.Contains(below.Message, "1 keys") || !strings.Contains(below.Message, "1/3/1") || strings.Contains(below.Message, "1/2/1") {
		t.Fatalf("safety.below: %+v", below)
	}
	if f := one(t, rep, "invariant"); f.Severity != health.SeverityOK {
		t.Fatalf("invariant: %+v", f)
	}
}
