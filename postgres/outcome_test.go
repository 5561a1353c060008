package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
)

// commitGate makes COMMIT of any transaction that wrote an audit entry
// wait, on the server, for a gate the test holds: a deferred constraint
// trigger on inventory_ledger takes a shared advisory lock at commit time,
// ignoring cancel requests.
// It is the exact interleaving of a late COMMIT: sent, the server still
// committing, the caller's deadline firing meanwhile.
type commitGate struct {
	t    *testing.T
	e    *env
	conn *pgx.Conn
}

const commitGateLock = 7_707_707

func newCommitGate(t *testing.T, e *env) *commitGate {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, stmt := range []string{
		// The wait survives the cancel request a client sends when it
		// gives up (as a server stuck in a slow fsync or a synchronous
		// replication wait does): the commit goes through afterwards.
		`CREATE FUNCTION test_commit_gate() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN
		   LOOP
		     BEGIN
		       PERFORM pg_advisory_xact_lock_shared(7707707);
		       RETURN NULL;
		     EXCEPTION WHEN query_canceled THEN
		       NULL;
		     END;
		   END LOOP;
		 END $$`,
		`CREATE CONSTRAINT TRIGGER test_commit_gate AFTER INSERT ON inventory_ledger
		 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_commit_gate()`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	return &commitGate{t: t, e: e, conn: conn}
}

func (g *commitGate) close() {
	if _, err := g.conn.Exec(context.Background(), "SELECT pg_advisory_lock($1)", commitGateLock); err != nil {
		g.t.Fatal(err)
	}
}

func (g *commitGate) open() {
	if _, err := g.conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", commitGateLock); err != nil {
		g.t.Fatal(err)
	}
}

// waiters is how many sessions wait at the gate.
func (g *commitGate) waiters() int {
	var n int
	if err := g.conn.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted", commitGateLock).Scan(&n); err != nil {
		g.t.Fatal(err)
	}
	return n
}

// waitFor polls cond with a generous bound (no wall-clock assumption
// beyond "eventually").
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLateCommitIsOutcomeUnknown (#10 item 1): adjust +50 → COMMIT sent →
// the caller's deadline fires while the server is still committing → the
// server commits. The caller must hear ErrOutcomeUnknown (not a context
// error that reads as "retry"), and a retry with the same change id must
// answer the first outcome and apply nothing: stock +50, not +100.
func TestLateCommitIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	// Long timeouts: the commit waits at the gate, not on lock_timeout.
	e := newEnv(t, holdfast.Config{LockTimeout: time.Minute, StatementTimeout: time.Minute, IdleInTransactionTimeout: time.Minute}, 0)
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	g := newCommitGate(t, e)
	g.close()

	for _, withID := range []bool{true, false} {
		ch := holdfast.StockChange{Key: k, Delta: 50, Reason: "restock", Reference: "po-1"}
		if withID {
			ch.ID = "restock-po-1"
		}
		before := e.level(k).Available
		ctx, cancel := context.WithCancel(context.Background())
		var err error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err = e.c.ChangeStock(ctx, ch)
		}()
		waitFor(t, "the COMMIT to wait at the gate", func() bool { return g.waiters() == 1 })
		cancel()
		wg.Wait()
		if !errors.Is(err, holdfast.ErrOutcomeUnknown) || errors.Is(err, context.Canceled) || errors.Is(err, holdfast.ErrUnavailable) {
			t.Fatalf("id %v: late commit answered %v, want only ErrOutcomeUnknown", withID, err)
		}
		// The server finishes the commit the caller gave up on.
		g.open()
		waitFor(t, "the abandoned COMMIT to finish", func() bool { return e.level(k).Available == before+50 })
		g.close()
		if !withID {
			continue
		}
		// The retry answers the first outcome and applies nothing.
		g.open()
		lvl, err := e.c.ChangeStock(context.Background(), ch)
		if err != nil || !lvl.Replayed || lvl.Available != before+50 {
			t.Fatalf("retry: %+v %v", lvl, err)
		}
		if l := e.level(k); l.Available != before+50 {
			t.Fatalf("retry applied the change again: %+v", l)
		}
		other := ch
		other.Delta = 51
		if _, err := e.c.ChangeStock(context.Background(), other); !errors.Is(err, holdfast.ErrIdempotencyConflict) {
			t.Fatalf("other change under the same id: %v", err)
		}
		g.close()
	}
	g.open()
}

// TestStockChangeIDReplayedTxAndPurge: what the conformance suite's
// IdempotentStockChanges does not assert for every engine — of concurrent
// retries of an identified stock change exactly one answers fresh and the
// others Replayed (the MySQL engine does not set Replayed); malformed ids
// (longer than StockChangeIDMaxLen, control characters) are refused; an
// identified change made through the Tx twin commits its record with the
// caller's transaction; and past the retention window PurgeOnce drops the
// record, so the id is free again.
func TestStockChangeIDReplayedTxAndPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, holdfast.Config{}, 0)
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	e.stock(k, 10)
	ch := holdfast.StockChange{Key: k, Delta: 5, Reason: "restock", ID: "r-1"}
	var wg sync.WaitGroup
	replays := make(chan bool, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lvl, err := e.c.ChangeStock(ctx, ch)
			if err != nil || lvl.Available != 15 {
				t.Errorf("concurrent retry: %+v %v", lvl, err)
				return
			}
			replays <- lvl.Replayed
		}()
	}
	wg.Wait()
	close(replays)
	first := 0
	for r := range replays {
		if !r {
			first++
		}
	}
	if first != 1 {
		t.Fatalf("%d attempts answered as the first, want 1", first)
	}
	// Bad ids change nothing.
	for _, id := range []string{string(make([]byte, holdfast.StockChangeIDMaxLen+1)), "a\nb"} {
		if _, err := e.c.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 1, Reason: "x", ID: id}); !errors.Is(err, holdfast.ErrInvalidArgument) {
			t.Fatalf("bad id %q: %v", id, err)
		}
	}
	if l := e.level(k); l.Available != 15 {
		t.Fatalf("level: %+v", l)
	}
	// The Tx twin: the record commits with the caller's transaction.
	set := 3
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	txCh := holdfast.StockChange{Key: k, Set: &set, Reason: "count", ID: "c-1"}
	if _, err := e.c.ChangeStockTx(ctx, tx, txCh); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if lvl, err := e.c.ChangeStock(ctx, txCh); err != nil || !lvl.Replayed || lvl.Available != 3 {
		t.Fatalf("replay of a Tx change: %+v %v", lvl, err)
	}
	// Past the retention window the record is purged and the id is free.
	e.clock.Advance(holdfast.OutcomeRetentionDefault + time.Minute)
	if _, err := e.c.PurgeOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if lvl, err := e.c.ChangeStock(ctx, ch); err != nil || lvl.Replayed || lvl.Available != 8 {
		t.Fatalf("after purge: %+v %v", lvl, err)
	}
}
