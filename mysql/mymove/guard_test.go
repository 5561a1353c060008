package mymove_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// shopTables lists every table of the database with a shop_id column but
// api_keys and holdfast_shop_fences (not a shop's data), from the catalog.
func shopTables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT c.TABLE_NAME FROM information_schema.COLUMNS c
		JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_TYPE = 'BASE TABLE'
		WHERE c.TABLE_SCHEMA = DATABASE() AND c.COLUMN_NAME = 'shop_id'
		  AND c.TABLE_NAME NOT IN ('api_keys', 'holdfast_shop_fences') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if len(out) < 20 {
		t.Fatalf("only %d shop tables: %v", len(out), out)
	}
	return out
}

// fillShop gives shop every table's rows: through the engine where it
// writes them, by hand for the rest (webhooks, a waiter, in-flight marks).
func fillShop(t *testing.T, db *sql.DB, eng *mysql.Client, shop int64) {
	t.Helper()
	ctx := context.Background()
	k := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	n := 100
	if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "fill", ID: "fill-1"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []holdfast.Strategy{holdfast.StrategyPool, holdfast.StrategyCounter} {
		k2 := holdfast.Key{ShopID: shop, ItemID: 2 + int64(len(s)), LocationID: 1}
		if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: k2, Set: &n, Reason: "fill"}); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.SetStrategy(ctx, k2, s, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: k2.ItemID, LocationID: 1, Quantity: 1}}, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: shop, ItemID: 1, Limit: 50, Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := eng.SetLocationOrder(ctx, shop, []int64{1}); err != nil {
		t.Fatal(err)
	}
	if err := eng.SetBundle(ctx, holdfast.Bundle{ShopID: shop, ItemID: 99, Components: []holdfast.BundleComponent{{ItemID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id, BuyerID: "b1", Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Claim(ctx, shop, id); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.SequenceEvents(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO webhook_endpoints (shop_id, url, secret, created_at) VALUES (?, 'https://example.com/h', 's', UTC_TIMESTAMP(6))`,
		`INSERT INTO webhook_dead_letters (endpoint_id, shop_id, ` + "`cursor`" + `, event, attempts, last_error, dead_at)
			SELECT id, shop_id, 1, '{}', 1, 'x', UTC_TIMESTAMP(6) FROM webhook_endpoints WHERE shop_id = ?`,
		`INSERT INTO waiters (shop_id, checkout_id, cart, short, ttl_us, status, created_at, wait_until)
			VALUES (?, UNHEX(REPLACE(UUID(), '-', '')), '[]', '[]', 1, 'waiting', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)`,
		`INSERT INTO waiter_lines (shop_id, inventory_item_id, location_id, seq, checkout_id, quantity)
			SELECT shop_id, 1, 1, seq, checkout_id, 1 FROM waiters WHERE shop_id = ?`,
		`INSERT INTO reserve_inflight (shop_id, checkout_id) VALUES (?, UNHEX(REPLACE(UUID(), '-', '')))`,
		`INSERT INTO buyer_locks (shop_id, inventory_item_id, buyer_hash) VALUES (?, 1, UNHEX(REPEAT('ab', 16)))`,
		`INSERT INTO audit_log (shop_id, action, actor, detail, created_at) VALUES (?, 'test', 'test', '{}', UTC_TIMESTAMP(6))`,
		`INSERT INTO drops (shop_id, inventory_item_id, location_id, starts_at, window_us, seed, state)
			VALUES (?, 1, 1, UTC_TIMESTAMP(6) + INTERVAL 1 DAY, 1000000, UNHEX(REPEAT('ab', 32)), 'open')`,
		`INSERT INTO drop_entries (shop_id, inventory_item_id, location_id, buyer_hash, checkout_id, wait_us)
			VALUES (?, 1, 1, UNHEX(REPEAT('cd', 16)), UNHEX(REPLACE(UUID(), '-', '')), 1000000)`,
		`INSERT INTO preorders (shop_id, inventory_item_id, location_id, cap, expected_at, updated_at)
			VALUES (?, 1, 1, 5, UTC_TIMESTAMP(6) + INTERVAL 30 DAY, UTC_TIMESTAMP(6))`,
		`INSERT INTO preorder_owed (shop_id, inventory_item_id, location_id, checkout_id, units, created_at)
			VALUES (?, 1, -1, UNHEX(REPLACE(UUID(), '-', '')), 1, UTC_TIMESTAMP(6))`,
	} {
		var has bool
		tbl := strings.Fields(q)[2]
		if err := db.QueryRow("SELECT EXISTS (SELECT 1 FROM "+tbl+" WHERE shop_id = ?)", shop).Scan(&has); err != nil {
			t.Fatal(err)
		}
		if has {
			continue
		}
		if _, err := db.Exec(q, shop); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func fenced(err error) bool {
	var me *mysqldriver.MySQLError
	return errors.As(err, &me) && string(me.SQLState[:]) == "HF001"
}

// unguarded is the one shop table without the guard's triggers: the
// in-flight marks, which no transaction leaves behind (migration 22).
const unguarded = "reserve_inflight"

// TestGuardOnEveryShopTable lists every table with a shop_id column and
// proves, on each, that migration 15's guard refuses an insert of a shop
// fenced on the pod — by its mark (holdfast_shop_fences) and by a move's
// lock held in another session — with SQLSTATE HF001, and lets the same
// insert through when the shop is not fenced; then that an update and a
// delete of a marked shop's row are refused (the ledger refuses them
// anyway: append-only). The inserts run from a session whose default
// database is another one: the guard names the lock after the table's
// database. Structurally, each table has the three AFTER triggers, but
// reserve_inflight none (TestInFlightMarkUnguarded).
func TestGuardOnEveryShopTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := mysqltest.DB(t, 8), mysqltest.DB(t, 8)
	eng, err := mysql.New(a.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	const shop = 7
	fillShop(t, a.DB, eng, shop)
	tables := shopTables(t, a.DB)
	// The webhook tables, keyed by (shop_id, id) since migration 20 so a
	// move carries them, are guarded as every other.
	for _, tbl := range []string{"webhook_dead_letters", "webhook_endpoints"} {
		var pk string
		if err := a.DB.QueryRow(`SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'`, tbl).Scan(&pk); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(tables, tbl) || pk != "shop_id,id" {
			t.Errorf("%s: among the shop tables %v, primary key %q; want it there, keyed by shop_id,id", tbl, slices.Contains(tables, tbl), pk)
		}
	}
	for _, tbl := range tables {
		var n int
		if err := a.DB.QueryRow("SELECT COUNT(*) FROM "+tbl+" WHERE shop_id = ?", shop).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("fillShop left %s empty: give the shop a row there", tbl)
		}
		var trig []string
		rows, err := a.DB.Query(`SELECT CONCAT(ACTION_TIMING, ' ', EVENT_MANIPULATION) FROM information_schema.TRIGGERS
			WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME LIKE '%\_guard\__' ORDER BY 1`, tbl)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			trig = append(trig, s)
		}
		rows.Close()
		if tbl == unguarded {
			// Migration 22: marks never outlive their transaction
			// (TestInFlightMarkUnguarded).
			if len(trig) != 0 {
				t.Errorf("%s: guard triggers %v, want none", tbl, trig)
			}
			continue
		}
		if !slices.Equal(trig, []string{"AFTER DELETE", "AFTER INSERT", "AFTER UPDATE"}) {
			t.Errorf("%s: guard triggers %v, want AFTER INSERT, UPDATE and DELETE", tbl, trig)
		}
	}
	// b's webhook endpoint, for the dead letter's foreign key.
	if _, err := b.DB.Exec("INSERT INTO webhook_endpoints SELECT * FROM "+a.Name+".webhook_endpoints WHERE shop_id = ?", shop); err != nil {
		t.Fatal(err)
	}
	ins := func(tbl string) error {
		// From a's session (default database a), into b.
		_, err := a.DB.ExecContext(ctx, "INSERT INTO "+b.Name+"."+tbl+" SELECT * FROM "+tbl+" WHERE shop_id = ? LIMIT 1", shop)
		return err
	}
	lockConn, err := b.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lockConn.Close()
	for _, tbl := range tables {
		if tbl == "webhook_endpoints" || tbl == unguarded {
			continue // b has its row; no guard
		}
		if _, err := b.DB.Exec("INSERT INTO holdfast_shop_fences (shop_id, state, since) VALUES (?, 'gone', UTC_TIMESTAMP(6))", shop); err != nil {
			t.Fatal(err)
		}
		if err := ins(tbl); !fenced(err) {
			t.Errorf("%s: insert of a shop marked gone: %v, want SQLSTATE HF001", tbl, err)
		}
		if _, err := b.DB.Exec("DELETE FROM holdfast_shop_fences WHERE shop_id = ?", shop); err != nil {
			t.Fatal(err)
		}
		var got int
		if err := lockConn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', ?), 0)", shop).Scan(&got); err != nil || got != 1 {
			t.Fatalf("move lock: %d, %v", got, err)
		}
		if err := ins(tbl); !fenced(err) {
			t.Errorf("%s: insert of a shop under a move's lock: %v, want SQLSTATE HF001", tbl, err)
		}
		if err := lockConn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', ?))", shop).Scan(&got); err != nil || got != 1 {
			t.Fatalf("move unlock: %d, %v", got, err)
		}
		if err := ins(tbl); err != nil {
			t.Errorf("%s: insert of a shop not fenced: %v", tbl, err)
		}
	}
	if _, err := b.DB.Exec("INSERT INTO holdfast_shop_fences (shop_id, state, since) VALUES (?, 'incoming', UTC_TIMESTAMP(6))", shop); err != nil {
		t.Fatal(err)
	}
	for _, tbl := range tables {
		if tbl == unguarded {
			continue
		}
		_, uerr := b.DB.Exec("UPDATE "+tbl+" SET shop_id = shop_id WHERE shop_id = ? LIMIT 1", shop)
		_, derr := b.DB.Exec("DELETE FROM "+tbl+" WHERE shop_id = ? LIMIT 1", shop)
		if tbl == "inventory_ledger" {
			if uerr == nil || derr == nil {
				t.Errorf("ledger: update %v, delete %v: want both refused", uerr, derr)
			}
			continue
		}
		if !fenced(uerr) || !fenced(derr) {
			t.Errorf("%s: update %v, delete %v of an incoming shop's row: want SQLSTATE HF001", tbl, uerr, derr)
		}
	}
	// The engine answers the guard's refusal ErrShopMoved.
	beng, err := mysql.New(b.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = beng.Stop(context.Background()) })
	if _, err := beng.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, TTL: time.Minute}); !errors.Is(err, holdfast.ErrShopMoved) {
		t.Errorf("reserve of an incoming shop: %v, want ErrShopMoved", err)
	}
}

// TestInFlightMarkUnguarded pins what the in-flight marks do without the
// guard's triggers (migration 22): for a shop fenced on the pod — marked
// gone, marked incoming, or under a move's lock held by another session —
// a plain reservation that would answer without writing a guarded row (sold
// out, a replay of its hold) is still refused ErrShopMoved, in the
// client's transaction and in a caller's (whose transaction goes on); a
// reservation of a batch key (combined) is refused and writes nothing;
// with the fence lifted they answer as before; and no mark is ever left
// committed.
func TestInFlightMarkUnguarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := mysqltest.DB(t, 8)
	eng, err := mysql.New(d.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	const shop = 7
	soldOut := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	batch := holdfast.Key{ShopID: shop, ItemID: 2, LocationID: 1}
	for _, k := range []holdfast.Key{soldOut, batch} {
		n := 1
		if k == batch {
			n = 100
		}
		if _, err := eng.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "fill"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := eng.SetStrategy(ctx, batch, holdfast.StrategyBatch, 0); err != nil {
		t.Fatal(err)
	}
	line := func(k holdfast.Key) []holdfast.Line {
		return []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}
	}
	first := holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: line(soldOut), TTL: time.Minute}
	if _, err := eng.Reserve(ctx, first); err != nil {
		t.Fatal(err)
	}
	var trig int
	if err := d.DB.QueryRow(`SELECT COUNT(*) FROM information_schema.TRIGGERS
		WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'reserve_inflight'`).Scan(&trig); err != nil || trig != 0 {
		t.Fatalf("reserve_inflight has %d triggers (%v), want none", trig, err)
	}
	lockConn, err := d.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lockConn.Close()
	fences := []struct {
		name      string
		on, off   string
		onLockCon bool
	}{
		{"gone", "INSERT INTO holdfast_shop_fences (shop_id, state, since) VALUES (?, 'gone', UTC_TIMESTAMP(6))", "DELETE FROM holdfast_shop_fences WHERE shop_id = ?", false},
		{"incoming", "INSERT INTO holdfast_shop_fences (shop_id, state, since) VALUES (?, 'incoming', UTC_TIMESTAMP(6))", "DELETE FROM holdfast_shop_fences WHERE shop_id = ?", false},
		{"move lock", "SELECT GET_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', ?), 0)", "SELECT RELEASE_LOCK(CONCAT('holdfast_move_', CRC32(DATABASE()), '_', ?))", true},
	}
	exec := func(q string, lock bool) {
		t.Helper()
		var err error
		if lock {
			var got sql.NullInt64
			err = lockConn.QueryRowContext(ctx, q, shop).Scan(&got)
			if err == nil && got.Int64 != 1 {
				err = errors.New("lock not taken or released")
			}
		} else {
			_, err = d.DB.ExecContext(ctx, q, shop)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	units := func() int {
		t.Helper()
		var n int
		if err := d.DB.QueryRow("SELECT units FROM inventory_counters WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ?", shop, batch.ItemID, batch.LocationID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, f := range fences {
		exec(f.on, f.onLockCon)
		before := units()
		p := holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: line(soldOut), TTL: time.Minute}
		if _, err := eng.Reserve(ctx, p); !errors.Is(err, holdfast.ErrShopMoved) {
			t.Errorf("%s: a sold-out reservation: %v, want ErrShopMoved", f.name, err)
		}
		if _, err := eng.Reserve(ctx, first); !errors.Is(err, holdfast.ErrShopMoved) {
			t.Errorf("%s: a replay: %v, want ErrShopMoved", f.name, err)
		}
		tx, err := d.DB.BeginTx(ctx, mysql.TxOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eng.ReserveTx(ctx, tx, p); !errors.Is(err, holdfast.ErrShopMoved) {
			t.Errorf("%s: a sold-out reservation in a caller's transaction: %v, want ErrShopMoved", f.name, err)
		}
		var one int
		if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Errorf("%s: the caller's transaction after the refusal: %v", f.name, err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("%s: commit of the caller's transaction: %v", f.name, err)
		}
		b := holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: line(batch), TTL: time.Minute}
		if _, err := eng.Reserve(ctx, b); !errors.Is(err, holdfast.ErrShopMoved) {
			t.Errorf("%s: a batch key's reservation: %v, want ErrShopMoved", f.name, err)
		}
		if after := units(); after != before {
			t.Errorf("%s: the batch key's counter went %d → %d under the fence", f.name, before, after)
		}
		exec(f.off, f.onLockCon)
	}
	var holds int
	if err := d.DB.QueryRow("SELECT COUNT(*) FROM holds WHERE shop_id = ?", shop).Scan(&holds); err != nil || holds != 1 {
		t.Errorf("%d holds (%v), want the first one only", holds, err)
	}
	// Not fenced: the same answers as ever.
	var ise *holdfast.InsufficientStockError
	if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: line(soldOut), TTL: time.Minute}); !errors.As(err, &ise) {
		t.Errorf("a sold-out reservation of a shop not fenced: %v, want sold out", err)
	}
	if h, err := eng.Reserve(ctx, first); err != nil || !h.Replayed {
		t.Errorf("a replay of a shop not fenced: %+v, %v", h, err)
	}
	if _, err := eng.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: uuid.New(), Lines: line(batch), TTL: time.Minute}); err != nil {
		t.Errorf("a batch key's reservation of a shop not fenced: %v", err)
	}
	var marks int
	if err := d.DB.QueryRow("SELECT COUNT(*) FROM reserve_inflight").Scan(&marks); err != nil || marks != 0 {
		t.Errorf("%d in-flight marks left committed (%v)", marks, err)
	}
}
