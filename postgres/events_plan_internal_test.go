package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestSequencerReadsOnlyPending (issue #29 item 5): a sequencer pass finds
// its batch through the holdfast_events_pending index and updates the
// batch's rows by their ctids, however many events are already sequenced.
// Its fence check, planned as a hash anti-join against the never-analysed
// holdfast_shop_fences (which the planner expects to remove most rows),
// made every pass read the whole table in a sequential scan and sort it
// (or, with the pending events' statistics, read and sort all of them):
// 156 ms a pass at 378,000 events, on every sequencer tick of `holdfast
// serve`; and the UPDATE joined by (shop_id, id) was a hash join over a
// sequential scan at 40,000 events. Checked on the custom and the generic
// plan (pgx prepares the statement; PostgreSQL goes generic after five
// executions), with statistics that count the pending events.
func TestSequencerReadsOnlyPending(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	ctx := context.Background()
	c, err := New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// 36,000 sequenced events and 4,000 waiting for their cursors.
	const sequenced, pending = 36_000, 4_000
	if _, err := db.Pool.Exec(ctx, `
INSERT INTO holdfast_events (shop_id, seq, type, checkout_id, lines)
SELECT 1, CASE WHEN i <= $1 THEN i END, 'hold.created', gen_random_uuid(),
       '[{"item_id": 1, "location_id": 1, "quantity": 1}]'
FROM generate_series(1, $1::int + $2::int) i`, sequenced, pending); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "INSERT INTO holdfast_event_shops (shop_id, last_seq) VALUES (1, $1)", sequenced); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "ANALYZE holdfast_events"); err != nil {
		t.Fatal(err)
	}
	stmt := c.q(ctx, holdfast.RouteSweep, "events_sequence")
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		p := explainPrepared(t, db, mode, "int", stmt, holdfast.EventSequenceBatch)
		// A sort by id means the batch read every pending event (or
		// every event) to take the first of them.
		if strings.Contains(p, "Seq Scan on holdfast_events ") || strings.Contains(p, "Sort Key: holdfast_events.id") ||
			!strings.Contains(p, "holdfast_events_pending") {
			t.Errorf("%s: the sequencer's pass reads more of holdfast_events than its batch:\n%s", mode, p)
		}
	}
	// And the pass itself: every pending event gets its cursor, in order.
	n, err := c.SequenceEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var last, nulls int64
	if err := db.Pool.QueryRow(ctx, "SELECT (SELECT last_seq FROM holdfast_event_shops WHERE shop_id = 1), (SELECT count(*) FROM holdfast_events WHERE seq IS NULL AND type <> 'key.sold_out' AND type <> 'key.back_in_stock')").Scan(&last, &nulls); err != nil {
		t.Fatal(err)
	}
	if n < pending || last < sequenced+pending || nulls != 0 {
		t.Errorf("sequenced %d events, last cursor %d, %d hold events without one; want %d, %d, 0", n, last, nulls, pending, sequenced+pending)
	}
}

// explainPrepared is stmt's plan (EXPLAIN, costs off) as PostgreSQL plans
// it under plan_cache_mode mode, prepared with the given parameter types
// and executed with args.
func explainPrepared(t *testing.T, db *pgtest.Database, mode, types, stmt string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
		t.Fatal(err)
	}
	// PREPARE outlives the transaction: a name of its own per call.
	name := "explained_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := tx.Exec(ctx, "PREPARE "+name+"("+types+") AS "+stmt); err != nil {
		t.Fatal(err)
	}
	params := make([]string, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case nil:
			params[i] = "NULL"
		case string:
			params[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
		default:
			params[i] = fmt.Sprint(a)
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE "+name+"("+strings.Join(params, ", ")+")")
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DEALLOCATE "+name); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// TestSweepReadsOnlyItsBatch: a sweep finds its batch in expiry order
// through holds_expiry and stops at it, however many holds wait expired —
// with one shop, whose statistics made the planner expect the fence check
// to remove nearly every row: as an anti-join it read and sorted every
// expired hold (180 ms a batch of 500 at 1.2 million in the service soak,
// 2026-12-04, which fell further behind each minute). Custom and generic
// plans.
func TestSweepReadsOnlyItsBatch(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	ctx := context.Background()
	c, err := New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const expired = 40_000
	if _, err := db.Pool.Exec(ctx, `
INSERT INTO holds (checkout_id, shop_id, status, lines, created_at, expires_at, deadline)
SELECT gen_random_uuid(), 1, 'held', '[{"item_id": 1, "location_id": 1, "quantity": 1}]',
       now() - interval '1 hour', now() - interval '1 minute' * (i % 50) - interval '1 second', now() + interval '1 hour'
FROM generate_series(1, $1::int) i`, expired); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "ANALYZE holds"); err != nil {
		t.Fatal(err)
	}
	stmt := c.q(ctx, holdfast.RouteSweep, "sweep_expire")
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		p := explainPrepared(t, db, mode, "timestamptz, int", stmt, nil, holdfast.SweepBatchDefault)
		if strings.Contains(p, "Sort Key: holds.expires_at") || strings.Contains(p, "Bitmap") ||
			!strings.Contains(p, "Index Scan using holds_expiry") {
			t.Errorf("%s: the sweep reads more of holds than its batch:\n%s", mode, p)
		}
	}
	n, err := c.SweepOnce(ctx)
	if err != nil || n != holdfast.SweepBatchDefault {
		t.Fatalf("SweepOnce: %d, %v; want a full batch of %d", n, err, holdfast.SweepBatchDefault)
	}
}
