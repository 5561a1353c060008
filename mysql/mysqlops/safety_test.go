package mysqlops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqlops"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestDoctorSafetyStock: on MariaDB too, the doctor lists the keys with a
// safety stock, those at it, and warns about one whose stock beyond its
// holds is below it.
func TestDoctorSafetyStock(t *testing.T) {
	ctx := context.Background()
	d := mysqltest.DB(t, 10)
	eng, err := mysql.New(d.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysqlops.DoctorConfig{Engine: eng, Samples: 1}
	rep, err := mysqlops.Doctor(ctx, d.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if find(rep, "safety", health.SeverityOK, "no key keeps a safety stock") == nil {
		t.Fatalf("no safety stock:\n%s", rep.Text())
	}
	set := func(item int64, available, safety, hold int) {
		t.Helper()
		k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
		if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &available, Reason: "stocktake"}); err != nil {
			t.Fatal(err)
		}
		if hold > 0 {
			if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: hold}}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := eng.SetSafetyStock(ctx, k, safety); err != nil {
			t.Fatal(err)
		}
	}
	set(1, 10, 2, 0) // room to sell
	set(2, 5, 5, 0)  // at its safety stock
	set(3, 5, 3, 4)  // raised over a hold: 1 beyond the hold, safety 3
	rep, err = mysqlops.Doctor(ctx, d.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := find(rep, "safety", health.SeverityOK, "3 keys keep a safety stock (10 units withheld from sale); 2 at it")
	if f == nil || !strings.Contains(f.Message, "1/2/1 available 5, held 0, safety 5") || !strings.Contains(f.Message, "1/3/1 available 5, held 4, safety 3") || strings.Contains(f.Message, "1/1/1") {
		t.Fatalf("safety:\n%s", rep.Text())
	}
	if b := find(rep, "safety.below", health.SeverityWarn, "1/3/1"); b == nil || strings.Contains(b.Message, "1/2/1") {
		t.Fatalf("safety.below:\n%s", rep.Text())
	}
	if find(rep, "invariant", health.SeverityOK, "") == nil {
		t.Fatalf("invariant:\n%s", rep.Text())
	}
}
