package mysql_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/mysql"
	"github.com/holdfast/holdfast/mysql/mysqltest"
)

// claimStatements counts the statements that wrote claims' ledger entries:
// one INSERT per claim on the plain path, one per batch when combined (the
// database clock gives every row of a statement its start time).
func claimStatements(t *testing.T, db *mysqltest.Database) (stmts, entries int) {
	t.Helper()
	if err := db.DB.QueryRow(`SELECT COUNT(DISTINCT created_at), COUNT(*) FROM inventory_ledger WHERE claim`).Scan(&stmts, &entries); err != nil {
		t.Fatal(err)
	}
	return stmts, entries
}

func setAvailable(ctx context.Context, c *mysql.Client, k holdfast.Key, n int, reason string) (*holdfast.Level, error) {
	return c.ChangeStock(ctx, holdfast.StockChange{Key: k, Set: &n, Reason: reason})
}

// TestClaimsCombined: concurrent claims of one client over two keys (one-
// and two-line holds) are combined into fewer transactions than claims,
// and each answers as a claim on its own would: claimed, not replayed,
// its lines; a second claim replays. The ledger has each claimed line's
// entry under its checkout, marked as a claim, and each key's entries
// chain (available_after of one entry is the previous one's plus its
// delta) down to the level's available; every claim wrote its hold.claimed
// event and no stock.changed one; the invariant holds. (postgres/'s test
// of the same name, on MariaDB.)
func TestClaimsCombined(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 40)
	c, err := mysql.New(db.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	ctx := context.Background()
	const shop, stock, holds = 1, 1000, 120
	keys := []holdfast.Key{{ShopID: shop, ItemID: 1, LocationID: 1}, {ShopID: shop, ItemID: 2, LocationID: 1}}
	for _, k := range keys {
		if _, err := setAvailable(ctx, c, k, stock, "stock"); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]uuid.UUID, holds)
	want := map[int64]int{}
	for i := range ids {
		ids[i] = uuid.New()
		lines := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1 + i%3}}
		if i%2 == 1 {
			lines = append(lines, holdfast.Line{ItemID: 2, LocationID: 1, Quantity: 1})
		}
		for _, l := range lines {
			want[l.ItemID] += l.Quantity
		}
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: ids[i], Lines: lines}); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, holds)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < holds; i += 32 {
				h, err := c.Claim(ctx, shop, ids[i])
				switch {
				case err != nil:
					errs <- err
				case h.Status != holdfast.StatusClaimed || h.Replayed || h.EndedAt == nil || len(h.Lines) != 1+i%2:
					t.Errorf("claim %d answered %+v", i, h)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claim: %v", err)
	}
	if h, err := c.Claim(ctx, shop, ids[0]); err != nil || !h.Replayed || h.Status != holdfast.StatusClaimed {
		t.Fatalf("second claim: %+v %v", h, err)
	}

	stmts, entries := claimStatements(t, db)
	if entries != holds+holds/2 {
		t.Fatalf("%d claim entries in the ledger; want %d", entries, holds+holds/2)
	}
	if stmts >= holds {
		t.Fatalf("claims were not combined: %d ledger statements for %d claims", stmts, holds)
	}
	t.Logf("%d claims in %d ledger statements", holds, stmts)

	var bad int
	if err := db.DB.QueryRow(`
SELECT COUNT(*) FROM (
    SELECT available_after, delta,
           LAG(available_after) OVER (PARTITION BY shop_id, inventory_item_id, location_id ORDER BY id) AS prev
    FROM inventory_ledger) g
WHERE prev IS NOT NULL AND available_after <> prev + delta`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d ledger entries do not chain from the one before", bad)
	}
	var mismatched int
	if err := db.DB.QueryRow(`
SELECT COUNT(*) FROM holds h
LEFT JOIN (SELECT reference, COUNT(*) AS n, -SUM(delta) AS qty FROM inventory_ledger WHERE claim GROUP BY reference) g
       ON g.reference = LOWER(CONCAT_WS('-', HEX(SUBSTR(h.checkout_id, 1, 4)), HEX(SUBSTR(h.checkout_id, 5, 2)),
                                        HEX(SUBSTR(h.checkout_id, 7, 2)), HEX(SUBSTR(h.checkout_id, 9, 2)), HEX(SUBSTR(h.checkout_id, 11, 6))))
WHERE NOT (g.n <=> JSON_LENGTH(h.cart))
   OR NOT (g.qty <=> (SELECT SUM(j.q) FROM JSON_TABLE(h.cart, '$[*]' COLUMNS (q INT PATH '$.quantity')) j))`).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Fatalf("%d claimed holds whose ledger entries are not their lines", mismatched)
	}
	for _, k := range keys {
		lvl, err := c.Level(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var last int
		if err := db.DB.QueryRow(`SELECT available_after FROM inventory_ledger
WHERE shop_id = ? AND inventory_item_id = ? AND location_id = ? ORDER BY id DESC LIMIT 1`, k.ShopID, k.ItemID, k.LocationID).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if lvl.Available != stock-want[k.ItemID] || last != lvl.Available || lvl.Held != 0 {
			t.Fatalf("key %v: available %d (last ledger entry %d), held %d; want available %d, held 0", k, lvl.Available, last, lvl.Held, stock-want[k.ItemID])
		}
	}
	var claimed, stockChanged int
	if err := db.DB.QueryRow(`SELECT COUNT(CASE WHEN type = 'hold.claimed' THEN 1 END),
       COUNT(CASE WHEN type = 'stock.changed' AND reason = 'claim' THEN 1 END) FROM holdfast_events`).Scan(&claimed, &stockChanged); err != nil {
		t.Fatal(err)
	}
	if claimed != holds || stockChanged != 0 {
		t.Fatalf("%d hold.claimed and %d claim stock.changed events; want %d and 0", claimed, stockChanged, holds)
	}
	rep, err := c.CheckInvariant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("invariant: %s", rep)
	}
}

// TestClaimsCombinedOverCommitted: a combined batch whose deduction would
// take an over-committed key below zero fails whole, and its claims are
// answered on their own: the key's claims succeed while its units last and
// the rest answer ErrOverCommitted, changing nothing; the other key's
// claims in the same batch all succeed.
func TestClaimsCombinedOverCommitted(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 40)
	c, err := mysql.New(db.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	ctx := context.Background()
	const shop, per = 1, 8
	over := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	fine := holdfast.Key{ShopID: shop, ItemID: 2, LocationID: 1}
	var ids []uuid.UUID
	for _, k := range []holdfast.Key{over, fine} {
		if _, err := setAvailable(ctx, c, k, 100, "stock"); err != nil {
			t.Fatal(err)
		}
		for range per {
			id := uuid.New()
			ids = append(ids, id)
			if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: id,
				Lines: []holdfast.Line{{ItemID: k.ItemID, LocationID: k.LocationID, Quantity: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const left = 3 // available on the over-committed key: below its 8 held
	if _, err := setAvailable(ctx, c, over, left, "shrink"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ok := map[int64]int{}
	refused := 0
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := c.Claim(ctx, shop, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok[h.Lines[0].ItemID]++
			case errors.Is(err, holdfast.ErrOverCommitted) && i < per:
				refused++
			default:
				t.Errorf("claim %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if ok[over.ItemID] != left || refused != per-left || ok[fine.ItemID] != per {
		t.Fatalf("claimed %d of the over-committed key (want %d), refused %d (want %d), claimed %d of the other (want %d)",
			ok[over.ItemID], left, refused, per-left, ok[fine.ItemID], per)
	}
	if lvl, err := c.Level(ctx, over); err != nil || lvl.Available != 0 || lvl.Held != per-left {
		t.Fatalf("over-committed key after the claims: %+v %v; want available 0, held %d", lvl, err, per-left)
	}
	rep, err := c.CheckInvariant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("invariant: %s", rep)
	}
}

// TestClaimsCombinedEndWaits: a combined batch ends the waits its claims
// made unservable before it answers them, as a claim on its own does: once
// every claim has returned, a wait for more units than are left is
// unservable, without a pass of the waitlist server.
func TestClaimsCombinedEndWaits(t *testing.T) {
	t.Parallel()
	db := mysqltest.DB(t, 40)
	c, err := mysql.New(db.DB, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	ctx := context.Background()
	const shop, stock, holders = 1, 40, 39
	k := holdfast.Key{ShopID: shop, ItemID: 1, LocationID: 1}
	if _, err := setAvailable(ctx, c, k, stock, "stock"); err != nil {
		t.Fatal(err)
	}
	one := []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}
	ids := make([]uuid.UUID, holders)
	for i := range ids {
		ids[i] = uuid.New()
		if _, err := c.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: ids[i], Lines: one}); err != nil {
			t.Fatal(err)
		}
	}
	w := uuid.New()
	_, err = c.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: w, Wait: 10 * time.Minute,
		Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: stock - holders + 1}}})
	if we := (*holdfast.WaitlistedError)(nil); !errors.As(err, &we) {
		t.Fatalf("the wait: %v, want *WaitlistedError", err)
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Claim(ctx, shop, id); err != nil {
				t.Errorf("claim: %v", err)
			}
		}()
	}
	wg.Wait()
	stmts, _ := claimStatements(t, db)
	if stmts >= holders {
		t.Fatalf("claims were not combined: %d ledger statements for %d claims", stmts, holders)
	}
	if _, err := c.Hold(ctx, shop, w); !errors.Is(err, holdfast.ErrWaitUnservable) {
		t.Fatalf("the wait once its units were claimed (%d claims in %d statements): %v, want ErrWaitUnservable", holders, stmts, err)
	}
}
