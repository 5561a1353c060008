package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/mysql"
)

// The HTTP service asks the engine which reservations it combines.
var _ httpapi.Combiner = (*mysql.Client)(nil)

// TestStatementsCarryTag: a call made with holdfast.WithTag sends its
// statements with the caller's tag in their comment, as on PostgreSQL — a
// plain Reserve and a ReserveTx in the caller's transaction alike — and an
// untagged call's comment names the route only. Three reservations wait on
// a counter row that an open ReserveTx holds; the process list shows what
// each is executing.
func TestStatementsCarryTag(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 10, holdfast.Config{Strategy: holdfast.StrategyCounter})
	defer e.checkInvariant()
	ctx := context.Background()
	k := holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}
	e.stock(k, 10)
	one := []holdfast.Line{{ItemID: 5, LocationID: 1, Quantity: 1}}

	// The blocker: an open ReserveTx holds the key's counter row.
	blocker, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := e.c.ReserveTx(ctx, blocker, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one}); err != nil {
		t.Fatal(err)
	}

	// The waiters: a tagged Reserve, a tagged ReserveTx, an untagged Reserve.
	inTx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer inTx.Rollback()
	// The ReserveTx waiter keeps the counter row locked until inTx
	// commits: it answers on a channel of its own.
	done, txDone := make(chan error, 2), make(chan error, 1)
	go func() {
		_, err := e.c.Reserve(holdfast.WithTag(ctx, "plain-flow:42"), holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one})
		done <- err
	}()
	go func() {
		_, err := e.c.ReserveTx(holdfast.WithTag(ctx, "order-tx.7"), inTx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one})
		txDone <- err
	}()
	go func() {
		_, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: one})
		done <- err
	}()

	// Poll the process list (with a generous bound) until all three are
	// seen waiting; each retries its wait after innodb_lock_wait_timeout.
	want := map[string]string{
		"plain":    "/* app='holdfast',route='reserve',tag='plain-flow:42' */ ",
		"tx":       "/* app='holdfast',route='reserve',tag='order-tx.7' */ ",
		"untagged": "/* app='holdfast',route='reserve' */ ",
	}
	seen := map[string]string{}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	giveUp := time.After(time.Minute)
	for len(seen) < len(want) {
		infos, err := processList(ctx, e.db.DB, e.db.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			for name, prefix := range want {
				if strings.HasPrefix(info, prefix) {
					seen[name] = info
				}
			}
		}
		select {
		case <-poll.C:
		case err := <-done:
			t.Fatalf("a waiter finished while the counter row was held (%v); seen %q", err, seen)
		case err := <-txDone:
			t.Fatalf("the ReserveTx waiter finished while the counter row was held (%v); seen %q", err, seen)
		case <-giveUp:
			t.Fatalf("statements seen in the process list within a minute: %q, want the prefixes %q", seen, want)
		}
	}
	for name, info := range seen {
		t.Logf("%s: %.120s", name, info)
	}

	// Let them through: every waiter gets its hold.
	if err := blocker.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-txDone; err != nil {
		t.Fatalf("ReserveTx waiter: %v", err)
	}
	if err := inTx.Commit(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("waiter: %v", err)
		}
	}
	if l := e.level(k); l.Held != 4 || l.Sellable != 6 {
		t.Fatalf("after the waiters: %+v", l)
	}
}

// processList is the statements the other connections to database name
// are executing (other tests share the server).
func processList(ctx context.Context, db *sql.DB, name string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT INFO FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID() AND INFO IS NOT NULL", name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var info string
		if err := rows.Scan(&info); err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, rows.Err()
}

// TestCombinable: one-line reservations on batch keys are combinable, as
// the client last saw each key's strategy (its default for keys it has not
// seen); carts and other strategies are not.
func TestCombinable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	line := func(item int64) []holdfast.Line { return []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 1}} }

	batch := newEnv(t, 5, holdfast.Config{Strategy: holdfast.StrategyBatch})
	if !batch.c.Combinable(holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line(1)}) {
		t.Fatal("one line on an unseen key of a batch client: not combinable")
	}
	cart := append(line(1), line(2)...)
	if batch.c.Combinable(holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: cart}) {
		t.Fatal("a two-line cart: combinable")
	}
	// A key set to the counter, seen by a reservation: not combinable.
	k := holdfast.Key{ShopID: 1, ItemID: 3, LocationID: 1}
	batch.stock(k, 5)
	batch.strategy(k, holdfast.StrategyCounter, 0)
	if _, err := batch.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line(3)}); err != nil {
		t.Fatal(err)
	}
	if batch.c.Combinable(holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line(3)}) {
		t.Fatal("one line on a counter key of a batch client: combinable")
	}
	batch.checkInvariant()

	counter := newEnv(t, 5, holdfast.Config{Strategy: holdfast.StrategyCounter})
	if counter.c.Combinable(holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line(1)}) {
		t.Fatal("one line on an unseen key of a counter client: combinable")
	}
	// A key set to batch, seen by a reservation: combinable.
	counter.stock(k, 5)
	counter.strategy(k, holdfast.StrategyBatch, 0)
	if _, err := counter.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line(3)}); err != nil {
		t.Fatal(err)
	}
	if !counter.c.Combinable(holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: line(3)}) {
		t.Fatal("one line on a batch key of a counter client: not combinable")
	}
	counter.checkInvariant()
}
