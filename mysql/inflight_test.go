package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
)

// TestSoldOutHintWaitsForInFlightAttempt (#10 item 4, docs/FAULTS.md
// finding 7), as the PostgreSQL engine's test of the same name: a
// checkout's first attempt (ReserveTx in a transaction the test holds
// open) has written its in-flight mark and is stalled before its take on
// its buyer's lock row, which another test transaction holds, while another
// checkout holds all the stock. The key is recently sold out on the client,
// so the retry reads the sold-out hint, and the stock is short in it. Then
// the other hold is released and the first attempt gets the units. The
// retry must not be told sold out while its first attempt is in flight: it
// waits and answers the first attempt's hold (Replayed) once that commits,
// or reserves by itself when it rolls back.
func TestSoldOutHintWaitsForInFlightAttempt(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		name := "first-commits"
		if !commit {
			name = "first-rolls-back"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			secret := []byte("0123456789abcdef0123456789abcdef")
			e := newEnv(t, 8, holdfast.Config{Strategy: holdfast.StrategyCounter, BuyerSecret: secret})
			ctx := context.Background()
			// The hint lasts a second from the sold-out answer: a round
			// whose retry would start later tested nothing and runs again
			// on a key of its own.
			for item := int64(1); ; item++ {
				if item > 5 {
					t.Fatal("the retry never started within the sold-out hint's second")
				}
				if runHintRace(t, e, ctx, secret, item, commit) {
					break
				}
			}
			e.checkInvariant()
		})
	}
}

// runHintRace runs the scenario on one key; false means the hint had lapsed
// before the retry started (nothing tested; the round is ended cleanly).
func runHintRace(t *testing.T, e *env, ctx context.Context, secret []byte, item int64, commit bool) bool {
	t.Helper()
	k := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}
	line := []holdfast.Line{{ItemID: item, LocationID: 1, Quantity: 2}}
	e.stock(k, 2)
	if err := e.c.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: 1, ItemID: item, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	other := uuid.New()
	if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: other, Lines: line}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reserve(1, holdfast.Line{ItemID: item, LocationID: 1, Quantity: 1}); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("sold out: %v", err)
	}
	soldOut := time.Now()

	// l holds the buyer's lock row for the item: the first attempt stalls
	// on it after its in-flight mark, before its take.
	hash := holdfast.BuyerHash(secret, 1, "buyer")
	if _, err := e.db.DB.ExecContext(ctx, "INSERT IGNORE INTO buyer_locks (shop_id, inventory_item_id, buyer_hash) VALUES (1, ?, ?)", item, hash); err != nil {
		t.Fatal(err)
	}
	l, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Rollback() //nolint:errcheck
	var one int
	if err := l.QueryRowContext(ctx, "SELECT 1 FROM buyer_locks WHERE shop_id = 1 AND inventory_item_id = ? AND buyer_hash = ? FOR UPDATE", item, hash).Scan(&one); err != nil {
		t.Fatal(err)
	}
	first, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback() //nolint:errcheck
	id := uuid.New()
	type result struct {
		h   *holdfast.Hold
		err error
	}
	firstDone := make(chan result, 1)
	go func() {
		h, err := e.c.ReserveTx(ctx, first, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: line, BuyerID: "buyer"})
		firstDone <- result{h, err}
	}()
	pollUntil(t, "the first attempt to wait for the buyer's lock", func() bool {
		select {
		case f := <-firstDone:
			t.Fatalf("first attempt answered: %+v %v", f.h, f.err)
		default:
		}
		return running(t, e.db.DB, "Take a buyer's lock row") == 1
	})

	// The retry must read the sold-out hint: it is kept fresh for this
	// key, so a loaded machine that takes longer than the hint's
	// second to get here still tests the race (no wall-clock window).
	mysql.HoldSoldOutHint(e.c, k)
	retryDone := make(chan result, 1)
	go func() {
		h, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: line, BuyerID: "buyer"})
		retryDone <- result{h, err}
	}()
	var early *result
	// The retry waits on the first attempt's in-flight mark (the
	// hint's probe found it locked and sent it the normal way).
	pollUntil(t, "the retry to wait for the first attempt, or answer", func() bool {
		select {
		case r := <-retryDone:
			early = &r
			return true
		default:
			return running(t, e.db.DB, "in-flight mark") == 1
		}
	})
	if early != nil {
		t.Fatalf("item %d: the retry answered while its first attempt was in flight (%v after the sold-out answer): %+v %v",
			item, time.Since(soldOut), early.h, early.err)
	}
	// The stock comes back, then the first attempt proceeds and gets it.
	if _, err := e.c.Release(ctx, 1, other); err != nil {
		t.Fatal(err)
	}
	if err := l.Rollback(); err != nil {
		t.Fatal(err)
	}
	f := <-firstDone
	if f.err != nil {
		t.Fatalf("first attempt: %v", f.err)
	}
	if commit {
		if err := first.Commit(); err != nil {
			t.Fatal(err)
		}
	} else if err := first.Rollback(); err != nil {
		t.Fatal(err)
	}
	r := <-retryDone
	if r.err != nil || r.h.Status != holdfast.StatusHeld || r.h.Replayed != commit {
		t.Fatalf("item %d: retry after the first attempt (committed %v): %+v %v", item, commit, r.h, r.err)
	}
	if lv := e.level(k); lv.Held != 2 || lv.Sellable != 0 {
		t.Fatalf("item %d: level %+v", item, lv)
	}
	return true
}

// running is how many of the engine's statements whose text contains what
// are in progress on db's database (a statement waiting for a row lock is
// in progress; InnoDB's INNODB_TRX missed MariaDB's waiting insert).
func running(t *testing.T, db *sql.DB, what string) int {
	t.Helper()
	var n int
	err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE CONCAT('%', ?, '%')`, what).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pollUntil polls cond every few milliseconds, failing after a generous
// bound.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSoldOutHintWaitsForCombinedAttempt: the same for a first attempt
// served by the combiner (StrategyBatch), which writes its batch's
// in-flight marks first. A test transaction T holds the counter rows of
// the key K (sold out: another checkout holds its 2 units) and of a key K2
// in stock. On a second client, which has not seen K sold out, a filler
// reservation on K2 waits for T on the plain path, so the first attempt on
// K is combined, and its batch stalls on K's counter row after its marks.
// The retry, on the client that recently answered K sold out, reads the
// hint, short, and must wait. Then T releases the other hold and commits:
// the first attempt gets the 2 units, and the retry answers its hold.
func TestSoldOutHintWaitsForCombinedAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 12, holdfast.Config{Strategy: holdfast.StrategyBatch})
	c2, err := mysql.New(e.db.DB, holdfast.Config{Now: e.clock.Now, Strategy: holdfast.StrategyBatch})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for item := int64(1); ; item += 2 {
		if item > 10 {
			t.Fatal("the retry never started within the sold-out hint's second")
		}
		if runCombinedHintRace(t, e, c2, ctx, item) {
			break
		}
	}
	e.checkInvariant()
}

func runCombinedHintRace(t *testing.T, e *env, c2 *mysql.Client, ctx context.Context, item int64) bool {
	t.Helper()
	k, k2 := holdfast.Key{ShopID: 1, ItemID: item, LocationID: 1}, holdfast.Key{ShopID: 1, ItemID: item + 1, LocationID: 1}
	line := func(k holdfast.Key, q int) []holdfast.Line {
		return []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: q}}
	}
	e.stock(k, 2)
	e.stock(k2, 5)
	// Fill both counters (a reservation refills its key's buffer).
	for _, kk := range []holdfast.Key{k, k2} {
		id := uuid.New()
		if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: line(kk, 1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Release(ctx, 1, id); err != nil {
			t.Fatal(err)
		}
	}
	other := uuid.New()
	if _, err := e.c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: other, Lines: line(k, 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reserve(1, line(k, 1)...); !errors.Is(err, holdfast.ErrInsufficientStock) {
		t.Fatalf("sold out: %v", err)
	}
	soldOut := time.Now()

	tx, err := e.db.DB.BeginTx(ctx, mysql.TxOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx, "SELECT 1 FROM inventory_counters WHERE shop_id = 1 AND inventory_item_id IN (?, ?) AND location_id = 1 FOR UPDATE", k.ItemID, k2.ItemID)
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	type result struct {
		h   *holdfast.Hold
		err error
	}
	fillerDone, firstDone, retryDone := make(chan result, 1), make(chan result, 1), make(chan result, 1)
	reserve := func(c *mysql.Client, done chan result, id uuid.UUID, lines []holdfast.Line) {
		h, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: id, Lines: lines})
		done <- result{h, err}
	}
	go reserve(c2, fillerDone, uuid.New(), line(k2, 1))
	pollUntil(t, "the filler to wait for K2's counter row", func() bool {
		select {
		case f := <-fillerDone:
			t.Fatalf("filler answered: %+v %v", f.h, f.err)
		default:
		}
		return running(t, e.db.DB, "Take q units from a counter row") == 1
	})
	id := uuid.New()
	go reserve(c2, firstDone, id, line(k, 2))
	pollUntil(t, "the first attempt's batch to wait for K's counter row", func() bool {
		select {
		case f := <-firstDone:
			t.Fatalf("first attempt answered: %+v %v", f.h, f.err)
		default:
		}
		return running(t, e.db.DB, "Lock one counter row of a combined batch") == 1
	})
	// The retry must read the sold-out hint: it is kept fresh for this
	// key, so a loaded machine that takes longer than the hint's
	// second to get here still tests the race (no wall-clock window).
	mysql.HoldSoldOutHint(e.c, k)
	go reserve(e.c, retryDone, id, line(k, 2))
	var early *result
	pollUntil(t, "the retry to wait for the first attempt, or answer", func() bool {
		select {
		case r := <-retryDone:
			early = &r
			return true
		default:
			return running(t, e.db.DB, "in-flight mark") == 1
		}
	})
	if early != nil {
		t.Fatalf("item %d: the retry answered while its first attempt was in flight (%v after the sold-out answer): %+v %v",
			item, time.Since(soldOut), early.h, early.err)
	}
	if _, err := e.c.ReleaseTx(ctx, tx, 1, other); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if f := <-fillerDone; f.err != nil {
		t.Fatalf("filler: %v", f.err)
	}
	f := <-firstDone
	if f.err != nil || f.h.Replayed {
		t.Fatalf("first attempt: %+v %v", f.h, f.err)
	}
	r := <-retryDone
	if r.err != nil || r.h.Status != holdfast.StatusHeld || !r.h.Replayed {
		t.Fatalf("item %d: retry after the first attempt: %+v %v, want its hold", item, r.h, r.err)
	}
	if lv := e.level(k); lv.Held != 2 || lv.Sellable != 0 {
		t.Fatalf("item %d: level %+v", item, lv)
	}
	t.Logf("item %d: combined grants on the first attempt's client: %d", item, mysql.CombinedGrants(c2))
	return true
}
