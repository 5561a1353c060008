package pgops_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func doctor(t *testing.T, pool *pgxpool.Pool, cfg pgops.DoctorConfig) *health.Report {
	t.Helper()
	rep, err := pgops.Doctor(context.Background(), pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		t.Log("\n" + rep.Text())
	}
	return rep
}

// TestDoctorHealthy: a fresh database with a little traffic has no critical
// finding and the invariant holds.
func TestDoctorHealthy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, k, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	rep := doctor(t, db.Pool, pgops.DoctorConfig{Engine: c})
	if rep.Worst() == health.SeverityCritical {
		t.Fatalf("critical findings on a healthy database:\n%s", rep.Text())
	}
	if f := one(t, rep, "invariant"); f.Severity != health.SeverityOK || !strings.Contains(f.Message, "1 keys") {
		t.Fatalf("invariant: %+v", f)
	}
	if f := one(t, rep, "schema"); f.Severity != health.SeverityOK {
		t.Fatalf("schema: %+v", f)
	}
	for _, g := range health.Groups { // the groups both engines' doctors name alike
		if len(rep.Find(g)) == 0 {
			t.Errorf("no %s finding (health.Groups):\n%s", g, rep.Text())
		}
	}
	if f := one(t, rep, "storage"); !strings.Contains(f.Message, "17 of 17") {
		t.Fatalf("storage: %+v", f)
	}
	for _, f := range rep.Findings {
		if f.Severity != health.SeverityOK && (f.Meaning == "" || f.Action == "") {
			t.Errorf("finding without meaning or action: %+v", f)
		}
	}
}

// TestDoctorSettings checks each setting finding against what SHOW says in
// the same database, then fixes the timeouts for the test's database (ALTER
// DATABASE touches no other test) and sees the findings clear.
func TestDoctorSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	show := func(pool *pgxpool.Pool, name string) string {
		var v string
		if err := pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(pool *pgxpool.Pool, rep *health.Report) {
		t.Helper()
		for _, name := range []string{"lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout"} {
			f := one(t, rep, "setting."+name)
			v := show(pool, name)
			want := health.SeverityOK
			if v == "0" {
				want = health.SeverityWarn
			}
			if f.Severity != want || !strings.Contains(f.Message, name+" = "+v) {
				t.Errorf("SHOW %s = %s, finding %+v", name, v, f)
			}
		}
		f := one(t, rep, "setting.log_lock_waits")
		if v := show(pool, "log_lock_waits"); (v == "on") != (f.Severity == health.SeverityOK) || !strings.Contains(f.Message, v) {
			t.Errorf("SHOW log_lock_waits = %s, finding %+v", v, f)
		}
		f = one(t, rep, "setting.autovacuum_naptime")
		if v := show(pool, "autovacuum_naptime"); !strings.Contains(f.Message, "= "+v) {
			t.Errorf("SHOW autovacuum_naptime = %s, finding %+v", v, f)
		}
		f = one(t, rep, "setting.autovacuum_max_workers")
		if v := show(pool, "autovacuum_max_workers"); !strings.Contains(f.Message, "= "+v) {
			t.Errorf("SHOW autovacuum_max_workers = %s, finding %+v", v, f)
		}
		f = one(t, rep, "setting.checkpoints")
		if v := show(pool, "full_page_writes"); (v == "off") != strings.Contains(f.Message, "full_page_writes = off") {
			t.Errorf("SHOW full_page_writes = %s, finding %+v", v, f)
		}
		f = one(t, rep, "setting.pg_stat_statements")
		loaded := strings.Contains(show(pool, "shared_preload_libraries"), "pg_stat_statements")
		if loaded {
			track := show(pool, "pg_stat_statements.track")
			if (track == "all") != (f.Severity == health.SeverityOK) {
				t.Errorf("pg_stat_statements.track = %s, finding %+v", track, f)
			}
		} else if f.Severity != health.SeverityWarn {
			t.Errorf("pg_stat_statements not loaded, finding %+v", f)
		}
	}
	rep := doctor(t, db.Pool, pgops.DoctorConfig{})
	check(db.Pool, rep)

	// Put the recommended timeouts on the test's database, turn log_lock_waits
	// off there (superuser only: skipped on a server where the test role is
	// not), and look again from new connections.
	exec(t, db.Pool, fmt.Sprintf("ALTER DATABASE %s SET idle_in_transaction_session_timeout = '15s'", db.Name))
	exec(t, db.Pool, fmt.Sprintf("ALTER DATABASE %s SET lock_timeout = '1s'", db.Name))
	lockWaitsOff := true
	if _, err := db.Pool.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET log_lock_waits = off", db.Name)); err != nil {
		t.Logf("cannot change log_lock_waits here: %v", err)
		lockWaitsOff = false
	}
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rep = doctor(t, pool, pgops.DoctorConfig{})
	check(pool, rep)
	if f := one(t, rep, "setting.idle_in_transaction_session_timeout"); f.Severity != health.SeverityOK || !strings.Contains(f.Message, "15s") {
		t.Fatalf("after ALTER DATABASE: %+v", f)
	}
	if f := one(t, rep, "setting.lock_timeout"); f.Severity != health.SeverityOK {
		t.Fatalf("after ALTER DATABASE: %+v", f)
	}
	if lockWaitsOff {
		if f := one(t, rep, "setting.log_lock_waits"); f.Severity != health.SeverityWarn {
			t.Fatalf("log_lock_waits off: %+v", f)
		}
	}
}

// TestDoctorStorageOptions damages two partitions' storage options in the
// test's own database.
func TestDoctorStorageOptions(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	exec(t, db.Pool, "ALTER TABLE reservation_units_p3 RESET (fillfactor)")
	exec(t, db.Pool, "ALTER TABLE reservation_units_p5 SET (autovacuum_enabled = false)")
	exec(t, db.Pool, "ALTER TABLE inventory_counters SET (autovacuum_vacuum_threshold = 50)")
	rep := doctor(t, db.Pool, pgops.DoctorConfig{})
	f := one(t, rep, "storage.reservation_units_p3")
	if f.Severity != health.SeverityWarn || f.Message != "fillfactor not set (want 70)" || !strings.Contains(f.Action, "ALTER TABLE reservation_units_p3 SET (") {
		t.Fatalf("p3: %+v", f)
	}
	f = one(t, rep, "storage.reservation_units_p5")
	if f.Severity != health.SeverityCritical || !strings.Contains(f.Message, "autovacuum_enabled = false") {
		t.Fatalf("p5: %+v", f)
	}
	f = one(t, rep, "storage.inventory_counters")
	if f.Severity != health.SeverityWarn || !strings.Contains(f.Message, "autovacuum_vacuum_threshold = 50 (want 1000)") {
		t.Fatalf("inventory_counters: %+v", f)
	}
	if f := one(t, rep, "storage"); !strings.Contains(f.Message, "14 of 17") {
		t.Fatalf("summary: %+v", f)
	}
	if got := len(rep.Find("storage")); got != 4 {
		t.Fatalf("want 4 storage findings, got %s", findings(rep, "storage"))
	}
	if rep.Worst() != health.SeverityCritical {
		t.Fatal("autovacuum disabled on a partition is not critical")
	}
}

// TestDoctorIdleInTransaction: a session left idle in a transaction is
// reported with its caller.
func TestDoctorIdleInTransaction(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	conn := connect(t, db, "shop-checkout")
	exec(t, conn, "BEGIN")
	exec(t, conn, "/* app='shop',route='checkout',tag='payment' */ SELECT 1")

	rep := doctor(t, db.Pool, pgops.DoctorConfig{IdleInTransactionWarn: time.Hour, IdleInTransactionCritical: 2 * time.Hour})
	if f := one(t, rep, "transactions.idle"); f.Severity != health.SeverityOK || !strings.Contains(f.Message, "1 sessions idle") {
		t.Fatalf("below the thresholds: %+v", f)
	}
	rep = doctor(t, db.Pool, pgops.DoctorConfig{IdleInTransactionWarn: time.Nanosecond, IdleInTransactionCritical: time.Hour})
	if f := one(t, rep, "transactions.idle"); f.Severity != health.SeverityWarn {
		t.Fatalf("warn threshold: %+v", f)
	}
	rep = doctor(t, db.Pool, pgops.DoctorConfig{IdleInTransactionWarn: time.Nanosecond, IdleInTransactionCritical: time.Nanosecond})
	f := one(t, rep, "transactions.idle")
	want := fmt.Sprintf(`pid %d application="shop-checkout" route="checkout" tag="payment" idle in transaction`, conn.PgConn().PID())
	if f.Severity != health.SeverityCritical || !strings.Contains(f.Message, want) {
		t.Fatalf("critical threshold: %+v\nwant %s", f, want)
	}
	if rep.Worst() != health.SeverityCritical {
		t.Fatal("worst is not critical")
	}
}

// TestDoctorOpenSnapshot holds a REPEATABLE READ snapshot open while a pool
// key's units are deleted elsewhere: VACUUM cannot remove them, and the
// doctor names the session that holds them.
func TestDoctorOpenSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	// Slow shared CI machines: the shrink of a big pool must not time out.
	c, err := postgres.New(db.Pool, holdfast.Config{StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 7, ItemID: 1, LocationID: 1}
	part := poolKey(t, c, db.Pool, k, 1200)
	// Only this test's VACUUMs: an autoanalyze that began while the
	// snapshot below was open counts its tuples as dead and, finishing
	// after the last VACUUM, reports them dead again (seen on a loaded
	// machine: the final check read 1,200 dead after VACUUM had read 0).
	exec(t, db.Pool, "ALTER TABLE "+part+" SET (autovacuum_enabled = false)")

	conn := connect(t, db, "report-job")
	exec(t, conn, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	exec(t, conn, "/* app='reports',route='export' */ SELECT count(*) FROM inventory_levels")

	if _, err := c.SetAvailable(ctx, k, 0, "stocktake", "sold elsewhere"); err != nil {
		t.Fatal(err)
	}
	exec(t, db.Pool, "VACUUM "+part)
	st := tableStat(t, db.Pool, part, func(s pgops.TableStat) bool { return s.VacuumCount >= 1 })
	if st.Dead < 1200 {
		t.Fatalf("vacuum removed tuples an open snapshot can see: %+v", st)
	}

	rep := doctor(t, db.Pool, pgops.DoctorConfig{TransactionWarn: time.Nanosecond, TransactionCritical: time.Nanosecond})
	pid := conn.PgConn().PID()
	f := one(t, rep, "vacuum.xmin_horizon")
	if f.Severity != health.SeverityCritical || !strings.Contains(f.Message, fmt.Sprintf(`session pid %d application="report-job" route="export"`, pid)) {
		t.Fatalf("xmin horizon: %+v", f)
	}
	f = one(t, rep, "transactions.oldest")
	if f.Severity != health.SeverityCritical || !strings.Contains(f.Message, fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("oldest transaction: %+v", f)
	}
	b, err := pgops.ReadBloat(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if b.XminHorizonAge < 1 {
		t.Fatalf("xmin horizon age %d with an open snapshot and later writes", b.XminHorizonAge)
	}
	f = one(t, rep, "bloat."+part)
	if f.Severity != health.SeverityCritical || !strings.Contains(f.Message, "100.0% dead") {
		t.Fatalf("bloat: %+v", f)
	}

	// With the snapshot gone, vacuum removes them and the findings clear.
	// Vacuumed again until they go: on a server other tests share, a
	// snapshot of theirs that holds every database's horizon (a logical
	// replication slot being created, as the shop-move tests do) can keep
	// one VACUUM from removing them (seen in a fresh-clone run under load,
	// 2026-12-03: 1,200 dead 30 s after the only VACUUM).
	exec(t, conn, "COMMIT")
	waitFor(t, "vacuum of "+part+" once the snapshot is gone", 30*time.Second, func() (bool, string) {
		exec(t, db.Pool, "VACUUM "+part)
		ts, err := pgops.TableStats(ctx, db.Pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ts {
			if s.Table == part {
				return s.VacuumCount >= 2 && s.Dead == 0, fmt.Sprintf("%+v", s)
			}
		}
		return false, "table not listed"
	})
	rep = doctor(t, db.Pool, pgops.DoctorConfig{})
	if f := one(t, rep, "vacuum.xmin_horizon"); f.Severity != health.SeverityOK {
		t.Fatalf("after commit: %+v", f)
	}
	if fs := rep.Find("bloat." + part); len(fs) != 0 {
		t.Fatalf("after vacuum: %+v", fs)
	}
}

// TestDoctorKeys: over-committed keys, empty pools and inline
// replenishment.
func TestDoctorKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	over := holdfast.Key{ShopID: 3, ItemID: 9, LocationID: 1}
	if _, err := c.SetAvailable(ctx, over, 5, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 3, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 9, LocationID: 1, Quantity: 4}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetAvailable(ctx, over, 2, "stocktake", "damaged"); err != nil {
		t.Fatal(err)
	}

	// A pool key whose pool a buyer drained: cap 3, 10 in stock, 3 reserved
	// in one go; the buyer-facing refill happens on the next reserve.
	drained := holdfast.Key{ShopID: 4, ItemID: 1, LocationID: 1}
	if _, err := c.SetAvailable(ctx, drained, 10, "stocktake", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetStrategy(ctx, drained, holdfast.StrategyPool, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 4, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 3}}}); err != nil {
		t.Fatal(err)
	}
	lvl, err := c.Level(ctx, drained)
	if err != nil {
		t.Fatal(err)
	}

	rep := doctor(t, db.Pool, pgops.DoctorConfig{Engine: c})
	f := one(t, rep, "invariant.over_committed")
	if f.Severity != health.SeverityWarn || !strings.Contains(f.Message, "3/9/1 held 4 > available 2") {
		t.Fatalf("over-committed: %+v", f)
	}
	if f := one(t, rep, "invariant"); f.Severity != health.SeverityOK {
		t.Fatalf("invariant: %+v", f)
	}
	f = one(t, rep, "pool.fill")
	if lvl.Pooled == 0 {
		if f.Severity != health.SeverityWarn || !strings.Contains(f.Message, "4/1/1 pooled 0 of cap 3") {
			t.Fatalf("drained pool (level %+v): %+v", lvl, f)
		}
	} else if !strings.Contains(f.Message, "1 pool keys") {
		t.Fatalf("pool (level %+v): %+v", lvl, f)
	}

	// Inline replenishment: the next buyer finds the pool empty.
	if lvl.Pooled == 0 {
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 4, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
		rep = doctor(t, db.Pool, pgops.DoctorConfig{Engine: c})
		f = one(t, rep, "replenish.inline")
		if f.Severity != health.SeverityWarn || !strings.Contains(f.Message, "4/1/1 ×1") {
			t.Fatalf("inline replenishment: %+v", f)
		}
	}
}
