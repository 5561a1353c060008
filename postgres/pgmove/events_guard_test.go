package pgmove_test

import (
	"context"
	"testing"

	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestEventsGuardPerStatement (issue #29 item 5, migrations 25 and 26):
// holdfast_events' guard — per transaction on insert (25), per statement on
// update and delete (26) — refuses what the row guard refused: an event of
// a fenced shop (a fence row, or the mover's advisory lock held), inserted,
// updated (the sequencer) or deleted (the purge), with HF001 and nothing of
// the statement applied, even beside another shop's rows; and it takes the
// shop's lock until the commit, so a mover's fence waits for the events in
// flight.
func TestEventsGuardPerStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	exec := func(sql string, args ...any) error {
		_, err := db.Pool.Exec(ctx, sql, args...)
		return err
	}
	const insert = `INSERT INTO holdfast_events (shop_id, type) SELECT unnest($1::bigint[]), 'stock.changed'`
	refused := func(what string, err error) {
		t.Helper()
		if postgres.SQLState(err) != "HF001" {
			t.Errorf("%s: %v, want SQLSTATE HF001", what, err)
		}
	}
	count := func(shop int64) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM holdfast_events WHERE shop_id = $1", shop).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A shop gone from this pod.
	if err := exec("INSERT INTO holdfast_shop_fences (shop_id, state) VALUES (7, 'gone')"); err != nil {
		t.Fatal(err)
	}
	if err := exec(insert, []int64{8}); err != nil {
		t.Fatalf("an unfenced shop's event: %v", err)
	}
	refused("insert beside another shop's event", exec(insert, []int64{8, 7, 8}))
	if n := count(8); n != 1 {
		t.Errorf("shop 8 has %d events after the refused statement, want 1 (nothing of it applied)", n)
	}

	// A shop whose mover holds its lock (pgmove's fence_lock.sql).
	if err := exec(insert, []int64{9, 9}); err != nil {
		t.Fatal(err)
	}
	mover, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mover.Exec(ctx, "SELECT pg_advisory_lock(1752139015, hashtext('9'))"); err != nil {
		t.Fatal(err)
	}
	refused("insert under the mover's lock", exec(insert, []int64{9}))
	refused("sequencing under the mover's lock", exec("UPDATE holdfast_events SET seq = id WHERE shop_id = 9"))
	refused("purge under the mover's lock", exec("DELETE FROM holdfast_events WHERE shop_id = 9"))
	if _, err := mover.Exec(ctx, "SELECT pg_advisory_unlock(1752139015, hashtext('9'))"); err != nil {
		t.Fatal(err)
	}
	mover.Release()
	if n := count(9); n != 2 {
		t.Errorf("shop 9 has %d events, want the 2 from before the lock", n)
	}
	if err := exec("UPDATE holdfast_events SET seq = id WHERE shop_id = 9"); err != nil {
		t.Errorf("sequencing once the lock is gone: %v", err)
	}

	// The lock is held from the statement to the commit.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, insert, []int64{10}); err != nil {
		t.Fatal(err)
	}
	var got bool
	if err := db.Pool.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(1752139015, hashtext('10'))").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got {
		t.Error("a mover took shop 10's lock while an event of it was in flight")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(1752139015, hashtext('10'))").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if !got {
		t.Error("shop 10's lock still held after the commit")
	}
}
