package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// innodbTrx reads, from SHOW ENGINE INNODB STATUS (uncached, unlike
// INFORMATION_SCHEMA.INNODB_TRX, which is refreshed at most every 100 ms),
// how many row locks the transaction of connection id holds and whether it
// waits for a lock.
func innodbTrx(t *testing.T, q interface {
	QueryRow(string, ...any) *sql.Row
}, id int64) (rowLocks int, waiting, found bool) {
	t.Helper()
	var typ, name, status string
	if err := q.QueryRow("SHOW ENGINE INNODB STATUS").Scan(&typ, &name, &status); err != nil {
		t.Fatal(err)
	}
	thread := regexp.MustCompile(`thread id (\d+),`)
	locks := regexp.MustCompile(`(\d+) row lock\(s\)`)
	for _, block := range strings.Split(status, "---TRANSACTION ")[1:] {
		m := thread.FindStringSubmatch(block)
		if m == nil || m[1] != strconv.FormatInt(id, 10) {
			continue
		}
		if l := locks.FindStringSubmatch(block); l != nil {
			rowLocks, _ = strconv.Atoi(l[1])
		}
		return rowLocks, strings.Contains(block, "LOCK WAIT"), true
	}
	return 0, false, false
}

// rowsLocked is how many rows the transaction on tx has locked.
func rowsLocked(t *testing.T, tx *sql.Tx) int {
	t.Helper()
	var id int64
	if err := tx.QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	n, _, found := innodbTrx(t, tx, id)
	if !found {
		t.Fatalf("no InnoDB transaction for connection %d", id)
	}
	return n
}

// TestOneRowLockPerUnit proves seed decision 1: with the key columns
// leading reservation_units' primary key, a reservation of q pool units,
// held open in the caller's transaction, has locked exactly q rows (the
// clustered index records), not 2q. The same take on the layout the seed
// started from (an AUTO_INCREMENT primary key and a secondary index on the
// key) locks 2q: that is what this test catches if the schema regresses.
func TestOneRowLockPerUnit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 7, LocationID: 3}
	e.stock(k, 100)
	e.strategy(k, holdfast.StrategyPool, 50)
	// A neighbouring key's pool rows, so a lock that spilled over the
	// key's range would show.
	e.stock(holdfast.Key{ShopID: 1, ItemID: 8, LocationID: 3}, 100)
	e.strategy(holdfast.Key{ShopID: 1, ItemID: 8, LocationID: 3}, holdfast.StrategyPool, 50)
	for _, q := range []int{1, 3, 10} {
		tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 7, LocationID: 3, Quantity: q}}}); err != nil {
			t.Fatal(err)
		}
		if got := rowsLocked(t, tx); got != q {
			t.Errorf("a reservation of %d units locked %d rows; want %d (one per unit)", q, got, q)
		}
		_ = tx.Rollback()
	}

	// The contrast: the seed's first prototype layout.
	if _, err := e.db.DB.Exec(`CREATE TABLE units_autoinc (
		id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
		shop_id BIGINT NOT NULL, inventory_item_id BIGINT NOT NULL, location_id BIGINT NOT NULL,
		KEY units_autoinc_key (shop_id, inventory_item_id, location_id)) ENGINE = InnoDB`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.DB.Exec(`INSERT INTO units_autoinc (shop_id, inventory_item_id, location_id)
		SELECT shop_id, inventory_item_id, location_id FROM reservation_units`); err != nil {
		t.Fatal(err)
	}
	tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.Query(`SELECT id FROM units_autoinc WHERE shop_id = 1 AND inventory_item_id = 7 AND location_id = 3
		ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	got := rowsLocked(t, tx)
	t.Logf("3 units: composite primary key locks 3 rows, AUTO_INCREMENT primary key + secondary index locks %d", got)
	if got != 6 {
		t.Errorf("contrast layout locked %d rows for 3 units; the reference measured 6", got)
	}
}

// TestEmptyRangeSkipLocked proves seed decision 2: a take with FOR UPDATE
// SKIP LOCKED on an empty pool range, in a transaction begun as holdfast
// begins its own (mysql.TxOptions: READ COMMITTED), does not block a
// concurrent replenishment insert into that range; under REPEATABLE READ the
// same take locks the gap (here the supremum) and the insert waits.
func TestEmptyRangeSkipLocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{})
	ctx := context.Background()
	const take = `SELECT id FROM reservation_units WHERE shop_id = 1 AND inventory_item_id = 2 AND location_id = 1
		ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED`
	const refill = `INSERT INTO reservation_units (shop_id, inventory_item_id, location_id) VALUES (1, 2, 1)`

	run := func(opts *sql.TxOptions) (blocked bool) {
		a, err := e.db.DB.BeginTx(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Rollback() //nolint:errcheck
		rows, err := a.Query(take)
		if err != nil {
			t.Fatal(err)
		}
		if rows.Next() {
			t.Fatal("range not empty")
		}
		rows.Close()
		// The replenisher, on a connection of its own that waits long
		// enough for the poll below to see it waiting.
		conn, err := e.db.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var id int64
		if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 120"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := conn.ExecContext(ctx, refill)
			done <- err
		}()
		// Either the insert finishes, or InnoDB reports it waiting for a
		// lock; poll with a generous bound, no timing assumed.
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				return false
			default:
			}
			if _, waiting, _ := innodbTrx(t, e.db.DB, id); waiting {
				_ = a.Rollback() // let it through
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				return true
			}
			time.Sleep(20 * time.Millisecond) // polling interval, not a wait for an outcome
		}
		t.Fatal("the insert neither finished nor waited within 60s")
		return false
	}

	if blocked := run(mysql.TxOptions()); blocked {
		t.Errorf("under holdfast's isolation (READ COMMITTED) an empty-range SKIP LOCKED take blocked the refill insert")
	}
	if _, err := e.db.DB.Exec("DELETE FROM reservation_units"); err != nil {
		t.Fatal(err)
	}
	if blocked := run(&sql.TxOptions{Isolation: sql.LevelRepeatableRead}); !blocked {
		t.Errorf("under REPEATABLE READ the take did not block the insert: the contrast this test relies on is gone")
	}
}

// TestTxNeedsReadCommitted: a …Tx operation that must refill a buffer
// refuses a caller's transaction that is not READ COMMITTED (its reads
// would come from an old snapshot), changing nothing, and works in one
// begun with TxOptions.
func TestTxNeedsReadCommitted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	e.strategy(k, holdfast.StrategyPool, 2)
	p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 5}}}
	tx, err := e.db.DB.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.c.ReserveTx(ctx, tx, p)
	var ae *holdfast.ArgumentError
	if !errors.As(err, &ae) || ae.Field != "tx" {
		t.Fatalf("REPEATABLE READ: %v", err)
	}
	_ = tx.Rollback()
	tx, err = e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, p); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Held != 5 {
		t.Fatalf("level: %+v", l)
	}
	e.checkInvariant()
}

// TestCartOneRoundTrip proves seed decision 4: the statements a pool
// reservation sends do not grow with the cart's lines, because all lines'
// units are fetched by one UNION ALL statement and deleted by one more.
// Counted by the server (the session's Questions) in the caller's
// transaction.
func TestCartOneRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{Strategy: holdfast.StrategyPool})
	ctx := context.Background()
	var lines []holdfast.Line
	for item := int64(1); item <= 6; item++ {
		e.stock(holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 100)
		lines = append(lines, holdfast.Line{ItemID: item, LocationID: 1, Quantity: 2})
	}
	statements := func(lines []holdfast.Line) int {
		conn, err := e.db.DB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		questions := func() int {
			var name string
			var n int
			if err := conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Questions'").Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		tx, err := conn.BeginTx(ctx, mysql.TxOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		before := questions()
		if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: lines}); err != nil {
			t.Fatal(err)
		}
		after := questions()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return after - before - 1 // the first SHOW counts itself
	}
	// A shop's bundle definitions are read once per engine.BundleCacheTTL
	// (here by an availability read of another item), not by every take.
	if _, err := e.c.Availability(ctx, holdfast.AvailabilityQuery{ShopID: 1, Items: []int64{99}, Locations: []int64{1}}); err != nil {
		t.Fatal(err)
	}
	one, six := statements(lines[:1]), statements(lines)
	t.Logf("statements per reservation: 1 line %d, 6 lines %d", one, six)
	if six != one {
		t.Errorf("a 6-line cart sent %d statements, a 1-line cart %d: the take is not one round trip", six, one)
	}
	e.checkInvariant()
}

// TestTxTwins: the …Tx operations commit and roll back with the caller's
// transaction, so the application's order row and the claim are one fact.
func TestTxTwins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 4, holdfast.Config{})
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	if _, err := e.db.DB.Exec("CREATE TABLE orders (checkout_id BINARY(16) PRIMARY KEY) ENGINE = InnoDB"); err != nil {
		t.Fatal(err)
	}
	p := holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 4}}}
	// Rolled back: nothing held.
	tx, _ := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if _, err := e.c.ReserveTx(ctx, tx, p); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	if l := e.level(k); l.Held != 0 || l.Sellable != 10 {
		t.Fatalf("after rollback: %+v", l)
	}
	if _, err := e.c.Hold(ctx, 1, p.CheckoutID); !errors.Is(err, holdfast.ErrNotFound) {
		t.Fatalf("hold after rollback: %v", err)
	}
	// A failed operation leaves the caller's transaction usable.
	tx, _ = e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if _, err := e.c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 11}}}); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("short: %v", err)
	}
	if _, err := e.c.ReserveTx(ctx, tx, p); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Claim with the order row; then a claim rolled back with its order.
	tx, _ = e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if _, err := tx.Exec("INSERT INTO orders VALUES (?)", p.CheckoutID[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ClaimTx(ctx, tx, 1, p.CheckoutID); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	if h, err := e.c.Hold(ctx, 1, p.CheckoutID); err != nil || h.Status != holdfast.StatusHeld {
		t.Fatalf("after rolled-back claim: %+v %v", h, err)
	}
	tx, _ = e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if _, err := tx.Exec("INSERT INTO orders VALUES (?)", p.CheckoutID[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ExtendTx(ctx, tx, 1, p.CheckoutID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ClaimTx(ctx, tx, 1, p.CheckoutID); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Available != 6 || l.Held != 0 {
		t.Fatalf("after claim: %+v", l)
	}
	// ReleaseTx and ChangeStockTx.
	h, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 2})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ = e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if _, err := e.c.ReleaseTx(ctx, tx, 1, h.CheckoutID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.ChangeStockTx(ctx, tx, holdfast.StockChange{Key: k, Delta: 4, Reason: "restock"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if l := e.level(k); l.Available != 10 || l.Held != 0 {
		t.Fatalf("after release and restock: %+v", l)
	}
	e.checkInvariant()
	_ = fmt.Sprint()
}

// TestTakeLocksOnlyItsRows: while one reservation holds pool rows of a key
// open, a reservation of another key of the same shop goes through without
// waiting: the take finds and deletes its rows by primary key and never
// touches (or waits for) rows other transactions hold. (A DELETE joined to
// JSON_TABLE without STRAIGHT_JOIN scanned the shop's range and deadlocked
// in TestRandomizedRaces.)
func TestTakeLocksOnlyItsRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6, holdfast.Config{Strategy: holdfast.StrategyPool})
	ctx := context.Background()
	// Few rows per shop: the optimizer then prefers scanning the shop's
	// range to reading JSON_TABLE first, unless told otherwise.
	for item := int64(1); item <= 3; item++ {
		e.stock(holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, 2)
	}
	// Rows of items 1 and 3, around item 2's range, locked as a take in
	// flight holds them between its SELECT … FOR UPDATE SKIP LOCKED and its
	// DELETE.
	for _, item := range []int64{1, 3} {
		tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		rows, err := tx.Query(`SELECT id FROM reservation_units WHERE shop_id = 1 AND inventory_item_id = ? AND location_id = 1
			ORDER BY id LIMIT 2 FOR UPDATE SKIP LOCKED`, item)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	if _, err := e.db.DB.Exec("ANALYZE TABLE reservation_units"); err != nil {
		t.Fatal(err)
	}
	conn, err := e.db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A lock wait would time out at once and show as an error below.
	if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	obs := &counting{}
	c2, err := mysql.New(e.db.DB, holdfast.Config{Strategy: holdfast.StrategyPool, Observer: obs, RetryMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 2, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatalf("a take waited on other keys' rows: %v", err)
	}
	if r := obs.snapshot(); len(r) != 0 {
		t.Fatalf("retries: %v", r)
	}
	if got := rowsLocked(t, tx); got != 2 {
		t.Errorf("locked %d rows for 2 units", got)
	}
}

// TestLockingJoinsUsePrimaryKeys: every statement that locks rows through a
// join with JSON_TABLE reads JSON_TABLE first and finds each row by key,
// whatever the optimizer's statistics say (see take_pool_delete.sql).
func TestLockingJoinsUsePrimaryKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, holdfast.Config{})
	for item := int64(1); item <= 3; item++ {
		k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
		e.stock(k, 2)
		e.strategy(k, holdfast.StrategyPool, 0)
	}
	cases := []struct {
		file  string
		args  []any
		table string
		key   string
	}{
		{"take_pool_delete", []any{`[[2,1,5]]`, 1}, "u", "PRIMARY"},
		{"sweep_expire", []any{`[[1,"00"]]`, nil}, "h", "PRIMARY"},
		{"sweep_lines", []any{`[[1,"00"]]`}, "r", "reserved_quantities_checkout"},
		{"claim_batch_pick", []any{nil, `[[1,"00"]]`}, "h", "PRIMARY"},
		{"claim_batch_end", []any{`[[1,"00"]]`, time.Now()}, "h", "PRIMARY"},
		{"claim_batch_deduct", []any{`[[1,1,1,1]]`, nil}, "v", "PRIMARY"},
	}
	// Statistics of small tables: what made the optimizer scan.
	if _, err := e.reserve(1, holdfast.Line{ItemID: 1, LocationID: 1, Quantity: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.DB.Exec("ANALYZE TABLE reservation_units, holds, reserved_quantities"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		text, err := os.ReadFile("sql/" + tc.file + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		rows, err := e.db.DB.Query("EXPLAIN "+string(text), tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		cols, _ := rows.Columns()
		var plan []map[string]string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := map[string]string{}
			for i, c := range cols {
				row[c] = vals[i].String
			}
			plan = append(plan, row)
		}
		rows.Close()
		if len(plan) != 2 || plan[0]["table"] != "j" || plan[1]["table"] != tc.table ||
			plan[1]["key"] != tc.key || (plan[1]["type"] != "eq_ref" && plan[1]["type"] != "ref") {
			t.Errorf("%s: plan %v; want JSON_TABLE first, then %s by %s", tc.file, plan, tc.table, tc.key)
		}
	}
}
