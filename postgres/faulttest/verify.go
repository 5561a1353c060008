package faulttest

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// The Env's final checks, after the faults: the invariant, every
// acknowledged hold against the database, the claims against the ledger,
// and no leaked unit.

// Verify checks, after the faults have stopped: the invariant over the
// whole database; that every acknowledged hold is where the client was told
// it is and every unexpired held checkout is claimable (it claims them
// all); and that no unit leaked: once every hold has expired and been swept
// and the buffers replenished, each key holds nothing and its buffer is
// full (pooled = min(cap, available) for pool keys, = available otherwise).
// It returns the number of assertions run.
func (e *Env) Verify(ctx context.Context) int {
	e.T.Helper()
	n := 0
	e.checkInvariant(ctx, "after the scenario")
	n++
	now := e.Clock.Now()
	e.mu.Lock()
	book := make(map[uuid.UUID]Entry, len(e.book))
	for co, en := range e.book {
		book[co] = *en
	}
	e.mu.Unlock()
	claimed := 0
	const verifier = 1 << 20 // the history's client id of Verify's calls
	for co, en := range book {
		e.mu.Lock()
		num := e.coNum[co]
		e.mu.Unlock()
		call := e.call()
		readAt := e.Clock.Now()
		h, err := e.Checker.Hold(ctx, en.Shop, co)
		n++
		if out := (history.Output{Result: history.Classify(err)}); out.Result == history.ResOK || out.Result == history.ResNotFound {
			if h != nil {
				out.Status, out.Exp = h.Status, micros(h.ExpiresAt)
			}
			e.recordCart(verifier, history.Input{Op: history.OpHold, CO: num, Now: micros(readAt)}, en.Shop, en.Lines, call, out)
		}
		if errors.Is(err, holdfast.ErrNotFound) {
			if en.Acked {
				e.Violation("acknowledged checkout %v has no hold or outcome", co)
			}
			continue
		}
		if err != nil {
			e.T.Fatalf("read hold %v: %v", co, err)
		}
		if en.Acked && !en.Doubt && en.Status != holdfast.StatusHeld && h.Status != en.Status {
			e.Violation("checkout %v was acknowledged %s, database says %s", co, en.Status, h.Status)
		}
		if en.Acked && !en.Doubt && en.Status == holdfast.StatusHeld && en.Exp.After(now) && h.Status != holdfast.StatusHeld {
			e.Violation("acknowledged hold %v (expires %v, clock %v) is %s", co, en.Exp, now, h.Status)
		}
		if h.Status != holdfast.StatusHeld {
			continue
		}
		st := e.strict(en.Shop, h.Lines)
		call = e.call()
		ch, err := e.Checker.Claim(ctx, en.Shop, co)
		n++
		out := history.Output{Result: history.Classify(err)}
		if ch != nil {
			out.Status = ch.Status
		}
		e.recordCart(verifier, history.Input{Op: history.OpClaim, CO: num, Now: micros(now), Strict: !e.lenient(st, en.Shop, h.Lines)}, en.Shop, en.Lines, call, out)
		switch {
		case err == nil:
			claimed++
		case errors.Is(err, holdfast.ErrOverCommitted):
			if !e.overCommitted(ctx, en.Shop, h.Lines) {
				e.Violation("claim of held %v: over-committed, but no key of it is: %v", co, err)
			}
		default:
			e.Violation("claim of held checkout %v (expires %v, clock %v) failed: %v", co, h.ExpiresAt, now, err)
		}
	}
	e.checkInvariant(ctx, "after claiming every held checkout")
	n++
	n += e.checkClaimLedger(ctx)

	// Expire everything that is left, sweep, replenish: nothing may be held
	// and every buffer must be full.
	e.Clock.Advance(e.Checker.Config().HoldLifetimeMax + time.Hour)
	for {
		k, err := e.Checker.SweepOnce(ctx)
		if err != nil {
			e.T.Fatalf("sweep: %v", err)
		}
		if k == 0 {
			break
		}
	}
	if _, err := e.Checker.Replenish(ctx); err != nil {
		e.T.Fatalf("replenish: %v", err)
	}
	for _, ki := range e.Keys {
		l, err := e.Checker.Level(ctx, ki.Key)
		if err != nil {
			e.T.Fatalf("level: %v", err)
		}
		n++
		want := l.Available
		if l.Strategy == holdfast.StrategyPool {
			want = min(l.PoolCap, l.Available)
		}
		if l.Held != 0 || l.Pooled != want {
			e.Violation("unit leak on key %+v (%s): after sweep and replenish held %d pooled %d available %d cap %d; want held 0 pooled %d",
				ki.Key, l.Strategy, l.Held, l.Pooled, l.Available, l.PoolCap, want)
		}
	}
	e.checkInvariant(ctx, "after sweep and replenish")
	n++
	e.checked(n)
	if e.Hist != nil {
		started := time.Now()
		res, err := e.Hist.CheckNamed(e.T.Name(), history.CheckTimeoutDefault)
		e.checked(1)
		n++
		if err != nil {
			e.Violation("%v", err)
		}
		e.T.Logf("history: %d operations, linearizability %s (checked in %v)", e.Hist.Len(), res, time.Since(started).Round(time.Millisecond))
	}
	return n
}

// checkClaimLedger checks that every claimed checkout deducted each of its
// lines exactly once in the audit trail, and that no other checkout
// deducted anything: never a double claim, never a claim without its hold.
func (e *Env) checkClaimLedger(ctx context.Context) int {
	e.T.Helper()
	rows, err := e.Admin.Query(ctx, `
WITH h AS (
    SELECT checkout_id::text AS ref, status, jsonb_array_length(lines) AS nlines,
           (SELECT coalesce(sum((l->>'quantity')::int), 0) FROM jsonb_array_elements(lines) l) AS qty
    FROM holds
), g AS (
    SELECT reference AS ref, count(*) AS n, coalesce(sum(-delta), 0) AS qty
    FROM inventory_ledger WHERE reason LIKE 'claim%' GROUP BY reference
)
SELECT h.ref, h.status, coalesce(g.n, 0)::int, coalesce(g.qty, 0)::int, h.nlines, h.qty::int
FROM h LEFT JOIN g USING (ref)
WHERE (h.status = 'claimed' AND (coalesce(g.n, 0) <> h.nlines OR coalesce(g.qty, 0) <> h.qty))
   OR (h.status <> 'claimed' AND coalesce(g.n, 0) > 0)`)
	if err != nil {
		e.T.Fatalf("claim ledger check: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ref, status string
		var n, qty, nlines, want int
		if err := rows.Scan(&ref, &status, &n, &qty, &nlines, &want); err != nil {
			e.T.Fatal(err)
		}
		e.Violation("checkout %s (%s): %d claim entries deducting %d in the ledger; its hold has %d lines of %d units",
			ref, status, n, qty, nlines, want)
	}
	if err := rows.Err(); err != nil {
		e.T.Fatal(err)
	}
	return 1
}

func (e *Env) overCommitted(ctx context.Context, shop int64, lines []holdfast.Line) bool {
	for _, l := range lines {
		lv, err := e.Checker.Level(ctx, holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID})
		if err == nil && lv.Available < l.Quantity {
			return true
		}
	}
	return false
}

func (e *Env) checkInvariant(ctx context.Context, when string) {
	e.T.Helper()
	rep, err := e.Checker.CheckInvariant(ctx)
	if err != nil {
		e.T.Fatalf("invariant check %s: %v", when, err)
	}
	if !rep.OK() {
		e.Violation("invariant broken %s: %s", when, rep)
	}
}
