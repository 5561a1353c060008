package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/enginetest"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestConformance runs the conformance suite, the behaviour every engine
// owes its callers, against the MySQL engine: each subtest on a fresh
// migrated database of the private MariaDB server.
func TestConformance(t *testing.T) {
	enginetest.Run(t, enginetest.Harness{
		Strategies: []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool},
		Combining:  []holdfast.Strategy{holdfast.StrategyBatch},
		New:        newConformanceEngine,
	})
}

// newConformanceEngine is a Client on a fresh database with an injected
// clock, its buffers refilled by Replenish and its tables counted for the
// suite's "rejected calls write nothing" checks.
func newConformanceEngine(t *testing.T, cfg holdfast.Config, opts enginetest.Options) *enginetest.Instance {
	t.Helper()
	conns := max(opts.Conns, 20)
	if opts.ExactConns {
		conns = opts.Conns
	}
	db := mysqltest.DB(t, conns)
	clock := pgtest.NewClock(time.Time{})
	cfg.Now = clock.Now
	if opts.RealClock {
		cfg.Now = opts.Now
	}
	c, err := mysql.New(db.DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return &enginetest.Instance{
		Engine: c,
		Clock:  clock,
		Refill: func(ctx context.Context) error { _, err := c.Replenish(ctx); return err },
		// The database's clock gives every row a statement writes the
		// statement's start time: distinct times are claim statements.
		ClaimTransactions: func(ctx context.Context) (int, error) {
			var n int
			err := db.DB.QueryRowContext(ctx, `SELECT COUNT(DISTINCT created_at) FROM inventory_ledger WHERE claim`).Scan(&n)
			return n, err
		},
		EventRows: func(ctx context.Context, shop int64) (int, error) {
			var n int
			err := db.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM holdfast_events WHERE shop_id = ?`, shop).Scan(&n)
			return n, err
		},
		Grep: containsText(db.DB),
		Rows: func(ctx context.Context) (map[string]int, error) {
			out := map[string]int{}
			for _, tbl := range []string{"inventory_levels", "inventory_locks", "reservation_units", "inventory_counters", "holds", "reserved_quantities", "inventory_ledger", "stock_changes", "waiters", "waiter_lines", "holdfast_events", "audit_log", "bundle_components", "bundle_shops", "drops", "drop_entries", "preorders", "preorder_owed"} {
				var n int
				if err := db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl).Scan(&n); err != nil {
					return nil, err
				}
				out[tbl] = n
			}
			return out, nil
		},
	}
}
