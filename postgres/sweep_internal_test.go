package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// tuplesFetched is how many rows index scans have fetched from table in tx
// so far (pg_stat_xact_user_tables.idx_tup_fetch).
func tuplesFetched(t *testing.T, ctx context.Context, tx pgx.Tx, table string) int64 {
	t.Helper()
	var n int64
	if err := tx.QueryRow(ctx, "SELECT coalesce(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables WHERE relname = $1", table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMaintenanceReadsOnlyDue (issue #15 item 4): the sweeper's expiry scan
// and the purges read only the rows that are due, through their indexes,
// however many are not — with nothing due, a call reads nothing. Their
// cutoffs come from clock_timestamp(), which is volatile: compared directly
// in the WHERE clause it is a filter evaluated on every row of the index
// (at a million held holds, 350 ms per sweeper call once it had caught
// up); a scalar subquery makes it an index condition. And the outcome
// purge's DELETE must not find its batch by reading every ended outcome
// (it did, 25 ms a call at 150,000, with statistics from before they
// ended).
func TestMaintenanceReadsOnlyDue(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	// set writes the rows on a test clock (to end waits without waiting);
	// c, on the database clock, reads them.
	clock := pgtest.NewClock(time.Now())
	set, err := New(db.Pool, holdfast.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	const n = 60
	if _, err := set.SetAvailable(ctx, k, 2*n, "test", ""); err != nil {
		t.Fatal(err)
	}
	// n held holds (none due), n outcomes (recent), stock change records,
	// sequenced events, and ended and waiting waits: none old enough.
	var ids []uuid.UUID
	for range 2 * n {
		id := uuid.New()
		if _, err := set.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Statistics taken before any hold ended (as on a young database, or
	// after a burst of expiries): the planner believes there are no
	// outcomes.
	if _, err := db.Pool.Exec(ctx, "ANALYZE holds"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[n:] {
		if _, err := set.Release(ctx, 1, id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := set.ChangeStock(ctx, holdfast.StockChange{Key: holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 1}, Set: &i, Reason: "test", ID: fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Waits on a key whose one unit is held.
	if _, err := set.SetAvailable(ctx, holdfast.Key{ShopID: 1, ItemID: 3, LocationID: 1}, 1, "test", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 1}}}); err != nil {
		t.Fatal(err)
	}
	wait := func() {
		t.Helper()
		_, err := set.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 1}}, Wait: time.Minute})
		if !errors.Is(err, holdfast.ErrWaitlisted) {
			t.Fatalf("wait: %v, want ErrWaitlisted", err)
		}
	}
	for range n {
		wait()
	}
	clock.Advance(2 * time.Minute) // those n run out, and end
	if got, err := set.ServeWaitlist(ctx); got != n || err != nil {
		t.Fatalf("serve waitlist: ended %d, %v; want %d", got, err, n)
	}
	for range n {
		wait()
	}
	for {
		q, err := set.SequenceEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if q == 0 {
			break
		}
	}

	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	// Index paths only: the tables are small enough here that the planner
	// would read them whole whatever the conditions.
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		stmt, table string
		args        []any
	}{
		{"sweep_expire", "holds", []any{c.now(), c.cfg.SweepBatch}},
		{"purge_outcomes", "holds", []any{c.now(), c.cfg.OutcomeRetention.Microseconds(), c.cfg.SweepBatch}},
		{"purge_events", "holdfast_events", []any{c.now(), c.cfg.EventRetention.Microseconds(), c.cfg.SweepBatch, c.cfg.EventRetentionMax.Microseconds()}},
		{"purge_stock_changes", "stock_changes", []any{c.now(), c.cfg.OutcomeRetention.Microseconds(), c.cfg.SweepBatch}},
		{"waitlist_purge", "waiters", []any{c.now(), c.cfg.OutcomeRetention.Microseconds(), c.cfg.SweepBatch}},
		{"waitlist_expire", "waiters", []any{c.now(), c.cfg.SweepBatch}},
	} {
		var rows int64
		var present int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+s.table).Scan(&present); err != nil || present < n/2 {
			t.Fatalf("%s: %d rows in %s (err %v), want at least %d to read past", s.stmt, present, s.table, err, n/2)
		}
		before := tuplesFetched(t, ctx, tx, s.table)
		r, err := tx.Query(ctx, c.q(ctx, holdfast.RouteSweep, s.stmt), s.args...)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			rows++
		}
		if r.Close(); r.Err() != nil {
			t.Fatalf("%s: %v", s.stmt, r.Err())
		}
		rows += r.CommandTag().RowsAffected()
		if rows != 0 {
			t.Fatalf("%s: %d rows due, want none", s.stmt, rows)
		}
		// A few at most: planning may probe an index's end for its
		// estimates (get_actual_variable_range), once per range condition
		// on an indexed column (purge_events has two on created_at: the
		// retention and its hard cap), more when the end holds dead tuples.
		if got := tuplesFetched(t, ctx, tx, s.table) - before; got > 4 {
			t.Errorf("%s read %d of %d rows of %s with none due, want none", s.stmt, got, present, s.table)
		}
	}
}
