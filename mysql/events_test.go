package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestEventsAtomicWithChange (#17): on MySQL/MariaDB too the event is
// written by the change's own transaction (the trigger): it is there
// inside the caller's transaction before COMMIT, and a connection killed
// before COMMIT leaves neither the hold nor its event. An explicit event
// (InsertEventTx) commits with its transaction and is sequenced like the
// others; a retention purge removes old sequenced events.
func TestEventsAtomicWithChange(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 6)
	ctx := context.Background()
	clock := pgtest.NewClock(time.Time{})
	c, err := mysql.New(db.DB, holdfast.Config{Now: clock.Now, EventRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	n := 5
	if _, err := c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: "stocktake"}); err != nil {
		t.Fatal(err)
	}
	events := func() int {
		t.Helper()
		var n int
		if err := db.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM holdfast_events").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := events()

	conn, err := db.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	if _, err := c.ReserveTx(ctx, tx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 2}}}); err != nil {
		t.Fatal(err)
	}
	var inside int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM holdfast_events").Scan(&inside); err != nil || inside != before+1 {
		t.Fatalf("inside the reservation's transaction: %d events (%v), want %d", inside, err, before+1)
	}
	var connID int64
	if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&connID); err != nil {
		t.Fatal(err)
	}
	// The connection dies between the change and its COMMIT.
	if _, err := db.DB.ExecContext(ctx, "KILL ?", connID); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err == nil {
		t.Fatal("COMMIT on a killed connection succeeded")
	}
	conn.Close()
	if got := events(); got != before {
		t.Fatalf("after the connection died: %d events, want %d", got, before)
	}

	// An explicit event commits with its transaction.
	tx, err = db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InsertEventTx(ctx, tx, 1, "waitlist.held", &id, []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	evs, err := c.Events(ctx, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != holdfast.EventStockChanged || evs[1].Type != "waitlist.held" || *evs[1].CheckoutID != id || evs[1].Cursor != 2 {
		t.Fatalf("feed: %+v", evs)
	}

	clock.Advance(2 * time.Hour)
	if n, err := c.PurgeEventsOnce(ctx); err != nil || n != 2 {
		t.Fatalf("purge past the retention: %d, %v; want 2", n, err)
	}
	// A cursor before the purged events is answered with the oldest
	// cursor still available (#24), never an empty page.
	var ce *holdfast.CursorExpiredError
	if _, err := c.Events(ctx, 1, 0, 0); !errors.As(err, &ce) || ce.Oldest != 2 {
		t.Fatalf("feed after=0 after the purge: %v, want a *CursorExpiredError with oldest cursor 2", err)
	}
	if evs, err := c.Events(ctx, 1, 2, 0); err != nil || len(evs) != 0 {
		t.Fatalf("feed after the oldest cursor: %+v, %v", evs, err)
	}
}
