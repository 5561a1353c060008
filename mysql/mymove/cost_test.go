package mymove_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// TestGuardCost measures what migration 15's placement guard (three AFTER
// row triggers on every shop table) costs the engine's hot path: blocks
// of reserve+release cycles on one hot key, alternating between a
// database with the guard and one with its triggers dropped (otherwise
// the same schema), which goes first alternating too.
// HOLDFAST_GUARD_COST=1 (a measurement, not a check: the machine's noise
// decides the figure); HOLDFAST_GUARD_COST=lock: the guard with its move
// lock check only (no probe of holdfast_shop_fences).
func TestGuardCost(t *testing.T) {
	if os.Getenv("HOLDFAST_GUARD_COST") == "" {
		t.Skip("HOLDFAST_GUARD_COST=1 measures the guard's cost")
	}
	ctx := context.Background()
	with, without := mysqltest.DB(t, 4), mysqltest.DB(t, 4)
	rows, err := without.DB.Query("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE '%\\_guard\\__'")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if _, err := without.DB.Exec("DROP TRIGGER " + n); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("dropped %d guard triggers on the database without the guard", len(names))
	if os.Getenv("HOLDFAST_GUARD_COST") == "lock" {
		// The guard's two checks apart: the database "with" the guard
		// keeps only the move lock's (no probe of the fences).
		rows, err := with.DB.Query(`SELECT TRIGGER_NAME, EVENT_MANIPULATION, EVENT_OBJECT_TABLE, ACTION_STATEMENT FROM information_schema.TRIGGERS
			WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE '%\\_guard\\__'`)
		if err != nil {
			t.Fatal(err)
		}
		var redo []string
		for rows.Next() {
			var name, ev, tbl, body string
			_ = rows.Scan(&name, &ev, &tbl, &body)
			body = regexp.MustCompile(` OR EXISTS \(SELECT 1 FROM holdfast_shop_fences f WHERE f\.shop_id = (NEW|OLD)\.shop_id\)`).ReplaceAllString(body, "")
			if strings.Contains(body, "holdfast_shop_fences") {
				t.Fatalf("%s: the fences probe is still in %s", name, body)
			}
			redo = append(redo, "DROP TRIGGER "+name, "CREATE TRIGGER "+name+" AFTER "+ev+" ON "+tbl+" FOR EACH ROW "+body)
		}
		rows.Close()
		for _, q := range redo {
			if _, err := with.DB.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		t.Logf("the guard keeps its move-lock check only (%d triggers)", len(redo)/2)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	var engs [2]*mysql.Client
	for i, d := range []*mysqltest.Database{without, with} {
		c, err := mysql.New(d.DB, holdfast.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		n := 1_000_000
		if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		engs[i] = c
	}
	const block, blocks = 200, 10
	var sum [2]time.Duration
	for i := range 2 * blocks {
		idx := i % 2
		if (i/2)%2 == 1 {
			idx = 1 - idx
		}
		c := engs[idx]
		start := time.Now()
		for range block {
			id := uuid.New()
			if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Release(ctx, 1, id); err != nil {
				t.Fatal(err)
			}
		}
		sum[idx] += time.Since(start)
	}
	off, on := sum[0]/(blocks*block), sum[1]/(blocks*block)
	t.Logf("GUARD mariadb reserve+release cycle: without the guard %v, with it %v (ratio %.3f), %d cycles each", off, on, float64(on)/float64(off), blocks*block)
}
