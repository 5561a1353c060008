package faulttest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/internal/history"
)

// The engine's operations through the Env: each records its outcome in the
// book and the history and checks what it was told.

// Reserve reserves through the engine and records the outcome.
func (e *Env) Reserve(ctx context.Context, client int, shop int64, co uuid.UUID, lines []holdfast.Line, ttl time.Duration) (*holdfast.Hold, error) {
	now := e.Clock.Now()
	started := time.Now()
	st := e.strict(shop, lines)
	call := e.call()
	h, err := e.Client.Reserve(ctx, holdfast.ReserveParams{ShopID: shop, CheckoutID: co, Lines: lines, TTL: ttl})
	res := history.Classify(err)
	e.untyped("reserve", err)
	e.mu.Lock()
	en, num := e.entry(shop, co, lines)
	out := history.Output{Result: res}
	switch res {
	case history.ResOK:
		out.Exp = micros(h.ExpiresAt)
		out.Replayed = h.Replayed
		if !en.Acked {
			// Later replays may have read an expiry that a concurrent
			// extend has since shortened: only the first answer and
			// extends set it.
			en.Exp = h.ExpiresAt
		}
		if !en.Acked && en.endedAt.IsZero() {
			// A claim or release of the checkout may have been answered
			// before this reservation's own answer was recorded (the
			// client goroutine was slow to come back): keep that outcome,
			// or the book would think the hold still held.
			en.Status = holdfast.StatusHeld
		}
		en.Acked = true
		if en.Status != holdfast.StatusHeld && !en.endedAt.IsZero() && en.endedAt.Before(started) && !en.Doubt {
			e.mu.Unlock()
			e.Violation("reserve of checkout %v succeeded after it was acknowledged %s", co, en.Status)
			e.mu.Lock()
		}
	case history.ResUnknown, history.ResUntyped:
		if en.Acked {
			en.Doubt = true
		}
	case history.ResClaimed, history.ResReleased, history.ResExpired:
		out.Late = true
	}
	e.mu.Unlock()
	e.recordCart(client, history.Input{Op: history.OpReserve, CO: num, Now: micros(now), TTL: ttl.Microseconds(), Life: e.Cfg.HoldLifetimeMax.Microseconds(),
		Strict: !e.lenient(st, shop, lines)}, shop, lines, call, out)
	return h, err
}

// end records a claim or release, and checks the answer against what the
// client was told before: a claim or release that finds an acknowledged,
// unexpired hold gone (when no other operation on the checkout overlapped
// it) is a lost hold.
func (e *Env) end(ctx context.Context, client int, op history.Op, shop int64, co uuid.UUID) (*holdfast.Hold, error) {
	now := e.Clock.Now()
	e.mu.Lock()
	en, num := e.entry(shop, co, nil)
	snap := *en
	overlapped := en.inflight > 0
	en.inflight++
	en.starts++
	myStart := en.starts
	lines := en.Lines
	for sw := range e.sweeps {
		sw.cos[num] = true
	}
	e.mu.Unlock()

	st := e.strict(shop, lines)
	call := e.call()
	var h *holdfast.Hold
	var err error
	if op == history.OpClaim {
		h, err = e.Client.Claim(ctx, shop, co)
	} else {
		h, err = e.Client.Release(ctx, shop, co)
	}
	res := history.Classify(err)
	e.untyped(string(op), err)

	e.mu.Lock()
	en.inflight--
	overlapped = overlapped || en.starts != myStart
	certain := snap.Acked && snap.Status == holdfast.StatusHeld && !snap.Doubt && !en.Doubt && !overlapped
	out := history.Output{Result: res}
	var lost string
	switch res {
	case history.ResOK:
		out.Status = h.Status
		if certain && op == history.OpClaim && h.Status != holdfast.StatusClaimed {
			lost = fmt.Sprintf("claim of acknowledged hold %v answered %s", co, h.Status)
		}
		en.Status = h.Status
		if en.endedAt.IsZero() {
			en.endedAt = time.Now()
		}
	case history.ResUnknown, history.ResUntyped:
		en.Doubt = true
	case history.ResExpired, history.ResNotFound, history.ResReleased, history.ResClaimed:
		if certain && en.Exp.After(e.Clock.Now()) {
			lost = fmt.Sprintf("%s of acknowledged, unexpired hold %v (expires %v, clock %v): %v", op, co, en.Exp, now, err)
		}
	}
	e.mu.Unlock()
	if lost != "" {
		e.Violation("%s", lost)
	}
	e.checked(1)
	e.recordCart(client, history.Input{Op: op, CO: num, Now: micros(now), Strict: !e.lenient(st, shop, lines)}, shop, lines, call, out)
	return h, err
}

// Claim claims through the engine and records the outcome.
func (e *Env) Claim(ctx context.Context, client int, shop int64, co uuid.UUID) (*holdfast.Hold, error) {
	return e.end(ctx, client, history.OpClaim, shop, co)
}

// Release releases through the engine and records the outcome.
func (e *Env) Release(ctx context.Context, client int, shop int64, co uuid.UUID) (*holdfast.Hold, error) {
	return e.end(ctx, client, history.OpRelease, shop, co)
}

// Extend extends through the engine and records the outcome.
func (e *Env) Extend(ctx context.Context, client int, shop int64, co uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	now := e.Clock.Now()
	e.mu.Lock()
	en, num := e.entry(shop, co, nil)
	if en.extending > 0 {
		en.extOverlap = true
	}
	en.extending++
	lines := en.Lines
	for sw := range e.sweeps {
		sw.cos[num] = true
	}
	e.mu.Unlock()

	call := e.call()
	h, err := e.Client.Extend(ctx, shop, co, ttl)
	res := history.Classify(err)
	e.untyped("extend", err)
	e.mu.Lock()
	en.extending--
	out := history.Output{Result: res}
	switch res {
	case history.ResOK:
		out.Exp = micros(h.ExpiresAt)
		switch {
		case en.extOverlap:
			// Concurrent extends: the one applied last may not be the
			// one answered last; keep the lower bound.
			if h.ExpiresAt.Before(en.Exp) {
				en.Exp = h.ExpiresAt
			}
		case !en.Doubt:
			en.Exp = h.ExpiresAt
		}
	case history.ResClaimed, history.ResReleased, history.ResExpired:
		out.Late = true
	case history.ResUnknown, history.ResUntyped:
		// It may have moved the expiry either way.
		if c := now.Add(ttl); c.Before(en.Exp) {
			en.Exp = c
		}
	}
	if en.extending == 0 {
		en.extOverlap = false
	}
	e.mu.Unlock()
	e.recordCart(client, history.Input{Op: history.OpExtend, CO: num, Now: micros(now), TTL: ttl.Microseconds()}, shop, lines, call, out)
	return h, err
}

// Adjust adjusts a key's stock through the engine and records the outcome.
func (e *Env) Adjust(ctx context.Context, client int, k holdfast.Key, delta int) (*holdfast.Level, error) {
	call := e.call()
	l, err := e.Client.Adjust(ctx, k, delta, "faulttest adjust", "")
	res := history.Classify(err)
	e.untyped("adjust", err)
	out := history.Output{Result: res}
	if res == history.ResOK {
		out.Available, out.Held = l.Available, l.Held
	}
	e.record(client, e.keyIndex(k), history.Input{Op: history.OpAdjust, Delta: delta}, call, out)
	return l, err
}

// Level reads a key's level through the engine and records it.
func (e *Env) Level(ctx context.Context, client int, k holdfast.Key) (*holdfast.Level, error) {
	call := e.call()
	l, err := e.Client.Level(ctx, k)
	res := history.Classify(err)
	e.untyped("level", err)
	if res == history.ResOK {
		e.record(client, e.keyIndex(k), history.Input{Op: history.OpLevel}, call, history.Output{Result: res, Available: l.Available, Held: l.Held})
	}
	return l, err
}

// SweepAll expires every hold past the clock, with nothing else running,
// and records it as one sweep in the history.
func (e *Env) SweepAll(ctx context.Context, client int) {
	e.T.Helper()
	call := e.call()
	now := e.Clock.Now()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := e.Checker.SweepOnce(ctx)
		if err != nil {
			e.T.Fatalf("sweep: %v", err)
		}
		if n > 0 {
			continue
		}
		// A backend that was terminated may still be rolling back and
		// holding a hold's row lock (the sweeper skips locked rows):
		// sweep until none is left past its expiry.
		var left int
		if err := e.Admin.QueryRow(ctx, "SELECT count(*) FROM holds WHERE status = 'held' AND expires_at < $1", now).Scan(&left); err != nil {
			e.T.Fatalf("count expired: %v", err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("%d expired holds left unswept", left)
		}
	}
	if e.Hist != nil {
		e.Hist.Add(client, history.Input{Op: history.OpSweep, Key: -1, Now: micros(now)}, call, history.Output{Result: history.ResOK})
	}
}

// Sweep runs one SweepOnce while other operations may run, and records it
// as a concurrent sweep (Input.Partial): it expires every hold past the
// clock except, possibly, those whose rows a claim, release or extend that
// overlapped it held locked (the sweep skips locked rows).
func (e *Env) Sweep(ctx context.Context, client int) (int, error) {
	now := e.Clock.Now()
	rec := &sweepRec{cos: map[int]bool{}}
	e.mu.Lock()
	for co, en := range e.book {
		if en.inflight > 0 || en.extending > 0 {
			rec.cos[e.coNum[co]] = true
		}
	}
	e.sweeps[rec] = true
	e.mu.Unlock()
	call := e.call()
	n, err := e.Client.SweepOnce(ctx)
	e.untyped("sweep", err)
	e.mu.Lock()
	delete(e.sweeps, rec)
	e.mu.Unlock()
	if e.Hist != nil {
		in := history.Input{Op: history.OpSweep, Key: -1, Now: micros(now), Partial: true}
		if len(rec.cos) > history.SkipMax {
			in.SkipAll = true
		} else {
			for _, co := range slices.Sorted(maps.Keys(rec.cos)) {
				in.Skip[in.NSkip] = co
				in.NSkip++
			}
		}
		e.Hist.Add(client, in, call, history.Output{Result: history.Classify(err)})
	}
	return n, err
}

// SetStrategy switches a key's strategy and pool cap through the engine.
// While it runs, and forever after it ends with an unknown outcome, the
// key's "insufficient stock" and "hold expired" answers are judged
// leniently (units move between buffers).
func (e *Env) SetStrategy(ctx context.Context, k holdfast.Key, s holdfast.Strategy, poolCap int) error {
	i := e.keyIndex(k)
	e.mu.Lock()
	if i >= 0 {
		e.Keys[i].changing++
		e.Keys[i].gen++
	}
	e.mu.Unlock()
	_, err := e.Client.SetStrategy(ctx, k, s, poolCap)
	e.untyped("set strategy", err)
	e.mu.Lock()
	if i >= 0 {
		e.Keys[i].changing--
		e.Keys[i].gen++
		switch history.Classify(err) {
		case history.ResOK:
			e.Keys[i].Strategy = s
		case history.ResUnknown, history.ResUntyped:
			e.Keys[i].uncertain = true
		}
	}
	e.mu.Unlock()
	return err
}
