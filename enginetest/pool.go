package enginetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// poolExactConns is testPoolExact's concurrency, and its pool's size.
const poolExactConns = 4

// poolPhaseDeadline bounds each phase of testPoolExact: well above a lock
// wait timeout, far below the test's own timeout, so a phase whose calls
// wait for a connection that never comes fails with the phase's name.
const poolPhaseDeadline = 30 * time.Second

// testPoolExact runs every operation (reserve with buyer limits, allocated
// lines, waits, edit, extend, claim, partial claim, late claim, release,
// stock changes, settings, sweeps, the waitlist server, reads) with as many
// concurrent calls as the pool has connections, on a fresh engine: nothing
// cached, as after a restart (issue 24 item 3). An operation that takes a
// second connection from the pool inside its transaction makes every call
// hold one connection and wait for another: the phase times out.
func testPoolExact(t *testing.T, h *Harness) {
	t.Parallel()
	const n = poolExactConns
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: n, ExactConns: true})
	const shop = 1
	const shared, grown, alloc, waited, late = 100, 101, 102, 103, 104
	// Setup, one call at a time: stock and limits. No buyer id is used
	// before the first phase, so the engine has read no buyer secret yet.
	for i := int64(1); i <= n; i++ {
		e.stock(key(shop, i), 20)
		e.setBuyerLimit(shop, i, 5, 0)
	}
	for _, item := range []int64{shared, grown, late} {
		e.stock(key(shop, item), 4*n)
		e.setBuyerLimit(shop, item, 3, 0)
	}
	e.setBuyerLimit(shop, alloc, 3, 0)
	e.stock(holdfast.Key{ShopID: shop, ItemID: alloc, LocationID: 2}, n)
	e.stock(holdfast.Key{ShopID: shop, ItemID: alloc, LocationID: 3}, n)
	if err := e.e.SetLocationOrder(ctxb(), shop, []int64{2, 3}); err != nil {
		t.Fatal(err)
	}
	e.stock(key(shop, waited), n)

	buyer := func(i int) string { return fmt.Sprintf("pool-buyer-%d", i) }
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
	}
	phase := func(name string, fn func(ctx context.Context, i int) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctxb(), poolPhaseDeadline)
		defer cancel()
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = fn(ctx, i)
			})
		}
		close(start)
		wg.Wait()
		var msgs []string
		for i, err := range errs {
			if err != nil {
				msgs = append(msgs, fmt.Sprintf("call %d: %v", i, err))
			}
		}
		if len(msgs) > 0 {
			t.Fatalf("phase %q, %d concurrent calls on a pool of %d connections: %d failed:\n%s", name, n, n, len(msgs), strings.Join(msgs, "\n"))
		}
	}
	held := func(h *holdfast.Hold, err error) error {
		if err != nil {
			return err
		}
		if h.Status != holdfast.StatusHeld {
			return fmt.Errorf("answered %+v, want held", h)
		}
		return nil
	}

	// First reservations of new buyers on limited items: the buyer secret
	// and every (shop, item, buyer) are new.
	phase("reserve with buyer limits", func(ctx context.Context, i int) error {
		return held(e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: ids[i], BuyerID: buyer(i), TTL: 30 * time.Minute,
			Lines: []holdfast.Line{{ItemID: int64(i + 1), LocationID: 1, Quantity: 1}, {ItemID: shared, LocationID: 1, Quantity: 1}}}))
	})
	phase("retry the reservations", func(ctx context.Context, i int) error {
		return held(e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: ids[i], BuyerID: buyer(i), TTL: 30 * time.Minute,
			Lines: []holdfast.Line{{ItemID: int64(i + 1), LocationID: 1, Quantity: 1}, {ItemID: shared, LocationID: 1, Quantity: 1}}}))
	})
	phase("extend", func(ctx context.Context, i int) error {
		return held(e.e.Extend(ctx, shop, ids[i], 40*time.Minute))
	})
	phase("edit onto a new limited item", func(ctx context.Context, i int) error {
		return held(e.e.Edit(ctx, holdfast.EditParams{ShopID: shop, CheckoutID: ids[i], Revision: 2,
			Lines: []holdfast.Line{{ItemID: int64(i + 1), LocationID: 1, Quantity: 2}, {ItemID: shared, LocationID: 1, Quantity: 1}, {ItemID: grown, LocationID: 1, Quantity: 1}}}))
	})
	allocIDs := make([]uuid.UUID, n)
	phase("reserve allocated lines with buyer limits", func(ctx context.Context, i int) error {
		allocIDs[i] = uuid.New()
		return held(e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: allocIDs[i], BuyerID: buyer(i),
			Lines: []holdfast.Line{{ItemID: alloc, Quantity: 1}}}))
	})
	phase("claim, partial claim or release", func(ctx context.Context, i int) error {
		var err error
		switch i % 3 {
		case 0:
			_, err = e.e.Claim(ctx, shop, ids[i])
		case 1:
			_, err = e.e.Release(ctx, shop, ids[i])
		default:
			_, err = e.e.ClaimLines(ctx, shop, ids[i], []holdfast.Line{{ItemID: int64(i + 1), LocationID: 1, Quantity: 1}})
		}
		if err == nil {
			_, err = e.e.Release(ctx, shop, allocIDs[i])
		}
		return err
	})
	phase("stock changes and settings", func(ctx context.Context, i int) error {
		k := key(shop, int64(i+1))
		if _, err := e.e.ChangeStock(ctx, holdfast.StockChange{Key: k, Delta: 1, Reason: "restock"}); err != nil {
			return err
		}
		if _, err := e.e.SetSafetyStock(ctx, k, 1); err != nil {
			return err
		}
		if err := e.e.SetBuyerLimit(ctx, holdfast.BuyerLimit{ShopID: shop, ItemID: int64(i + 1), Limit: 6}); err != nil {
			return err
		}
		_, err := e.e.SetStrategy(ctx, k, h.Strategies[(i+1)%len(h.Strategies)], 0)
		return err
	})

	// Waits: every unit of the waited key held, one per call, then a wait
	// per call; releasing the units and serving the waitlist grants them.
	holders := make([]uuid.UUID, n)
	phase("reserve the waited key", func(ctx context.Context, i int) error {
		holders[i] = uuid.New()
		return held(e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: holders[i], Lines: one(waited, 1)}))
	})
	waiters := make([]uuid.UUID, n)
	phase("wait", func(ctx context.Context, i int) error {
		waiters[i] = uuid.New()
		_, err := e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: waiters[i], Lines: one(waited, 1), Wait: 10 * time.Minute})
		if !errors.Is(err, holdfast.ErrWaitlisted) {
			return fmt.Errorf("got %v, want ErrWaitlisted", err)
		}
		return nil
	})
	phase("release held units and serve the waitlist", func(ctx context.Context, i int) error {
		if _, err := e.e.Release(ctx, shop, holders[i]); err != nil {
			return err
		}
		_, err := e.e.ServeWaitlist(ctx)
		return err
	})
	phase("read the granted waits", func(ctx context.Context, i int) error {
		for {
			h, err := e.e.Hold(ctx, shop, waiters[i])
			if err == nil && h.Status == holdfast.StatusHeld {
				return nil
			}
			if err != nil && !errors.Is(err, holdfast.ErrWaitlisted) {
				return err
			}
			if _, err := e.e.ServeWaitlist(ctx); err != nil {
				return err
			}
		}
	})

	// Late claims: holds of buyers on a limited item expire and are swept;
	// claiming them takes their units afresh under the limits.
	lates := make([]uuid.UUID, n)
	phase("reserve for late claims", func(ctx context.Context, i int) error {
		lates[i] = uuid.New()
		return held(e.e.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: lates[i], BuyerID: buyer(i), Lines: one(late, 1), TTL: time.Minute}))
	})
	e.Clock.Advance(3 * time.Hour)
	phase("sweep", func(ctx context.Context, i int) error {
		_, err := e.e.SweepOnce(ctx)
		return err
	})
	phase("late claim", func(ctx context.Context, i int) error {
		h, err := e.e.Claim(ctx, shop, lates[i])
		if err != nil {
			return err
		}
		if h.Status != holdfast.StatusClaimed {
			return fmt.Errorf("late claim answered %+v", h)
		}
		return nil
	})
	phase("reads", func(ctx context.Context, i int) error {
		if _, err := e.e.Level(ctx, key(shop, int64(i+1))); err != nil {
			return err
		}
		if _, err := e.e.Holds(ctx, holdfast.HoldQuery{ShopID: shop}); err != nil {
			return err
		}
		if _, err := e.e.Events(ctx, shop, 0, 10); err != nil {
			return err
		}
		if _, err := e.e.BuyerLimit(ctx, shop, shared); err != nil {
			return err
		}
		_, err := e.e.Keys(ctx, holdfast.KeyQuery{ShopID: shop})
		return err
	})
}
