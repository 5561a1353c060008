package pods

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// via runs fn on the engine of the pod that serves shopID and records the
// outcome on the pod's breaker. The pod's answer is returned unchanged;
// only the router's own refusals are *PodError.
func via[T any](r *Router, ctx context.Context, shopID int64, assign bool, fn func(holdfast.Engine) (T, error)) (T, error) {
	return viaBounded(r, ctx, shopID, assign, nil, fn)
}

// viaBounded is via; unbounded, when not nil, says whether the call is
// left out of the pod's MaxInFlight (a reservation its engine combines).
func viaBounded[T any](r *Router, ctx context.Context, shopID int64, assign bool, unbounded func(holdfast.Engine) bool, fn func(holdfast.Engine) (T, error)) (T, error) {
	var zero T
	p, err := r.route(ctx, shopID, assign)
	if err != nil {
		return zero, err
	}
	if err := p.admit(unbounded == nil || !unbounded(p.eng)); err != nil {
		return zero, err
	}
	v, err := fn(p.eng)
	p.done()
	r.observe(p, err)
	if errors.Is(err, holdfast.ErrNotFound) && shopID > 0 {
		// A pod a shop moved away from holds nothing of it once purged: a
		// router that has not followed the switch would answer "not found"
		// for a hold that lives on. Check the placement and ask the shop's
		// pod if it changed; reading twice is safe. The pod purged the shop
		// only after the switch committed, so a map read begun after its
		// answer sees the switch; a cached one may not, however recent
		// (another call's read begun a moment before the switch, perhaps
		// stored after it): the map itself is read.
		if q, rerr := r.routeFromMap(ctx, shopID); rerr == nil && q != p {
			r.stats.moved.Add(1)
			if aerr := q.admit(unbounded == nil || !unbounded(q.eng)); aerr != nil {
				return zero, aerr
			}
			v, err = fn(q.eng)
			q.done()
			r.observe(q, err)
			p = q
		}
	}
	if !errors.Is(err, holdfast.ErrShopMoved) || shopID <= 0 {
		return v, err
	}
	// The pod no longer serves the shop (or fences it for a move): read
	// the placement again and retry where it says — nothing was applied.
	// While the shop is fenced where it is (a move copying it), wait for
	// the switch (or the fence to lift) up to Config.MoveWait, reading
	// the map again every moveWaitStep; then the retriable answer stands.
	r.stats.moved.Add(1)
	var deadline time.Time
	for step := time.Duration(0); ; {
		r.refresh(shopID)
		q, rerr := r.route(ctx, shopID, false)
		if rerr != nil {
			return v, err
		}
		if q == p {
			if r.cfg.MoveWait <= 0 {
				return v, err
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(r.cfg.MoveWait)
			}
			step = min(max(2*step, moveWaitStep), 8*moveWaitStep)
			if time.Until(deadline) < step {
				return v, err
			}
			t := time.NewTimer(step)
			select {
			case <-ctx.Done():
				t.Stop()
				return v, err
			case <-t.C:
			}
			r.refresh(shopID)
			q, rerr = r.route(ctx, shopID, false)
			if rerr != nil {
				return v, err
			}
		}
		if aerr := q.admit(unbounded == nil || !unbounded(q.eng)); aerr != nil {
			return zero, aerr
		}
		v, err = fn(q.eng)
		q.done()
		r.observe(q, err)
		if !errors.Is(err, holdfast.ErrShopMoved) {
			return v, err
		}
		p = q
		if deadline.IsZero() {
			deadline = time.Now().Add(r.cfg.MoveWait)
		}
		if !time.Now().Before(deadline) {
			return v, err
		}
	}
}

// routeFromMap is route for an assigned shop from a read of the map begun
// now, whatever the cache holds (which it updates).
func (r *Router) routeFromMap(ctx context.Context, shopID int64) (*pod, error) {
	now := r.cfg.Now()
	r.stats.misses.Add(1)
	pl, err := r.m.Lookup(ctx, shopID)
	if err != nil {
		return nil, err
	}
	r.cache.put(pl, now)
	p := r.pods[pl.Pod]
	if p == nil {
		return nil, &PodError{Pod: pl.Pod, Err: fmt.Errorf("%w: %w: the map places the shop on a pod this router is not configured with", holdfast.ErrUnavailable, ErrUnknownPod)}
	}
	return p, nil
}

// moveWaitStep paces the map reads of a call waiting out a move's fence
// (doubling up to 8×).
const moveWaitStep = 10 * time.Millisecond

// refresh drops the shop's cached placement unless it was read from the
// map within moveWaitStep: the calls of a fenced shop share a read of the
// map per step instead of each reading it.
func (r *Router) refresh(shopID int64) {
	r.cache.dropReadBefore(shopID, r.cfg.Now().Add(-moveWaitStep))
}

// via0 is via for operations that answer only an error.
func via0(r *Router, ctx context.Context, shopID int64, assign bool, fn func(holdfast.Engine) error) error {
	_, err := via(r, ctx, shopID, assign, func(e holdfast.Engine) (struct{}, error) { return struct{}{}, fn(e) })
	return err
}

// Operations that create a shop's data (Reserve, ChangeStock, SetStrategy,
// SetBuyerLimit, SetSafetyStock, SetLocationOrder) place an unassigned
// shop first; every other per-shop operation of an unassigned shop is
// answered by a pod that holds nothing of it.

// Reserve implements holdfast.Engine on the shop's pod.
func (r *Router) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	return viaBounded(r, ctx, p.ShopID, true, func(e holdfast.Engine) bool { return combines(e, p) },
		func(e holdfast.Engine) (*holdfast.Hold, error) { return e.Reserve(ctx, p) })
}

// Claim implements holdfast.Engine on the shop's pod.
func (r *Router) Claim(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.Claim(ctx, shopID, checkoutID) })
}

// Release implements holdfast.Engine on the shop's pod.
func (r *Router) Release(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.Release(ctx, shopID, checkoutID) })
}

// Extend implements holdfast.Engine on the shop's pod.
func (r *Router) Extend(ctx context.Context, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.Extend(ctx, shopID, checkoutID, ttl) })
}

// Edit implements holdfast.Engine on the shop's pod.
func (r *Router) Edit(ctx context.Context, p holdfast.EditParams) (*holdfast.Hold, error) {
	return via(r, ctx, p.ShopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.Edit(ctx, p) })
}

// ClaimLines implements holdfast.Engine on the shop's pod.
func (r *Router) ClaimLines(ctx context.Context, shopID int64, checkoutID uuid.UUID, lines []holdfast.Line) (*holdfast.Hold, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.ClaimLines(ctx, shopID, checkoutID, lines) })
}

// Hold implements holdfast.Engine on the shop's pod.
func (r *Router) Hold(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.Hold, error) { return e.Hold(ctx, shopID, checkoutID) })
}

// ChangeStock implements holdfast.Engine on the shop's pod.
func (r *Router) ChangeStock(ctx context.Context, ch holdfast.StockChange) (*holdfast.Level, error) {
	return via(r, ctx, ch.ShopID, true, func(e holdfast.Engine) (*holdfast.Level, error) { return e.ChangeStock(ctx, ch) })
}

// SetStrategy implements holdfast.Engine on the shop's pod.
func (r *Router) SetStrategy(ctx context.Context, k holdfast.Key, s holdfast.Strategy, poolCap int) (*holdfast.Level, error) {
	return via(r, ctx, k.ShopID, true, func(e holdfast.Engine) (*holdfast.Level, error) { return e.SetStrategy(ctx, k, s, poolCap) })
}

// Level implements holdfast.Engine on the shop's pod.
func (r *Router) Level(ctx context.Context, k holdfast.Key) (*holdfast.Level, error) {
	return via(r, ctx, k.ShopID, false, func(e holdfast.Engine) (*holdfast.Level, error) { return e.Level(ctx, k) })
}

// Events implements holdfast.Engine on the shop's pod.
func (r *Router) Events(ctx context.Context, shopID int64, after int64, limit int) ([]holdfast.Event, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) ([]holdfast.Event, error) { return e.Events(ctx, shopID, after, limit) })
}

// Holds implements holdfast.Engine on the shop's pod.
func (r *Router) Holds(ctx context.Context, q holdfast.HoldQuery) (*holdfast.HoldPage, error) {
	return via(r, ctx, q.ShopID, false, func(e holdfast.Engine) (*holdfast.HoldPage, error) { return e.Holds(ctx, q) })
}

// Ledger implements holdfast.Engine on the shop's pod.
func (r *Router) Ledger(ctx context.Context, q holdfast.LedgerQuery) (*holdfast.LedgerPage, error) {
	return via(r, ctx, q.ShopID, false, func(e holdfast.Engine) (*holdfast.LedgerPage, error) { return e.Ledger(ctx, q) })
}

// Keys implements holdfast.Engine on the shop's pod.
func (r *Router) Keys(ctx context.Context, q holdfast.KeyQuery) ([]holdfast.Level, error) {
	return via(r, ctx, q.ShopID, false, func(e holdfast.Engine) ([]holdfast.Level, error) { return e.Keys(ctx, q) })
}

// SetBuyerLimit implements holdfast.Engine on the shop's pod.
func (r *Router) SetBuyerLimit(ctx context.Context, l holdfast.BuyerLimit) error {
	return via0(r, ctx, l.ShopID, true, func(e holdfast.Engine) error { return e.SetBuyerLimit(ctx, l) })
}

// BuyerLimit implements holdfast.Engine on the shop's pod.
func (r *Router) BuyerLimit(ctx context.Context, shopID, itemID int64) (*holdfast.BuyerLimit, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) (*holdfast.BuyerLimit, error) { return e.BuyerLimit(ctx, shopID, itemID) })
}

// RemoveBuyerLimit implements holdfast.Engine on the shop's pod.
func (r *Router) RemoveBuyerLimit(ctx context.Context, shopID, itemID int64) error {
	return via0(r, ctx, shopID, false, func(e holdfast.Engine) error { return e.RemoveBuyerLimit(ctx, shopID, itemID) })
}

// SetSafetyStock implements holdfast.Engine on the shop's pod.
func (r *Router) SetSafetyStock(ctx context.Context, k holdfast.Key, safety int) (*holdfast.Level, error) {
	return via(r, ctx, k.ShopID, true, func(e holdfast.Engine) (*holdfast.Level, error) { return e.SetSafetyStock(ctx, k, safety) })
}

// SetLocationOrder implements holdfast.Engine on the shop's pod.
func (r *Router) SetLocationOrder(ctx context.Context, shopID int64, locations []int64) error {
	return via0(r, ctx, shopID, true, func(e holdfast.Engine) error { return e.SetLocationOrder(ctx, shopID, locations) })
}

// Availability implements holdfast.Engine on the shop's pod (a read: an
// unassigned shop is answered by a pod that holds nothing of it).
func (r *Router) Availability(ctx context.Context, q holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	return via(r, ctx, q.ShopID, false, func(e holdfast.Engine) (*holdfast.Availability, error) { return e.Availability(ctx, q) })
}

// LocationOrder implements holdfast.Engine on the shop's pod.
func (r *Router) LocationOrder(ctx context.Context, shopID int64) ([]int64, error) {
	return via(r, ctx, shopID, false, func(e holdfast.Engine) ([]int64, error) { return e.LocationOrder(ctx, shopID) })
}

// CheckInvariant implements holdfast.Engine over every pod: the reports
// merged (keys summed; violations, over-committed keys and defects
// appended, defects prefixed with their pod). A pod that did not answer
// makes it a *PartialError with the merged report of the others: the
// invariant is not vouched for on a pod that was not checked.
func (r *Router) CheckInvariant(ctx context.Context) (*holdfast.InvariantReport, error) {
	var mu sync.Mutex
	out := &holdfast.InvariantReport{}
	err := r.fanOut(ctx, "check invariant", func(ctx context.Context, name string, e holdfast.Engine) error {
		rep, err := e.CheckInvariant(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		out.Keys += rep.Keys
		out.Violations = append(out.Violations, rep.Violations...)
		out.OverCommitted = append(out.OverCommitted, rep.OverCommitted...)
		for _, d := range rep.Defects {
			out.Defects = append(out.Defects, fmt.Sprintf("pod %s: %s", name, d))
		}
		return nil
	})
	return out, err
}

// SweepOnce implements holdfast.Engine over every pod: the holds expired,
// summed, and a *PartialError naming pods that did not sweep (their own
// sweepers catch up when they are back).
func (r *Router) SweepOnce(ctx context.Context) (int, error) {
	return r.sum(ctx, "sweep", holdfast.Engine.SweepOnce)
}

// ServeWaitlist implements holdfast.Engine over every pod, as SweepOnce.
func (r *Router) ServeWaitlist(ctx context.Context) (int, error) {
	return r.sum(ctx, "serve waitlist", holdfast.Engine.ServeWaitlist)
}

// SequenceEvents runs the sequencing pass of every pod whose engine has one
// (webhook.Sequencer), summed, partial as SweepOnce.
func (r *Router) SequenceEvents(ctx context.Context) (int, error) {
	type sequencer interface {
		SequenceEvents(ctx context.Context) (int, error)
	}
	return r.sum(ctx, "sequence events", func(e holdfast.Engine, ctx context.Context) (int, error) {
		if s, ok := e.(sequencer); ok {
			return s.SequenceEvents(ctx)
		}
		return 0, nil
	})
}

func (r *Router) sum(ctx context.Context, op string, fn func(holdfast.Engine, context.Context) (int, error)) (int, error) {
	var mu sync.Mutex
	total := 0
	err := r.fanOut(ctx, op, func(ctx context.Context, _ string, e holdfast.Engine) error {
		n, err := fn(e, ctx)
		mu.Lock()
		total += n
		mu.Unlock()
		return err
	})
	return total, err
}

// Config is the first pod's engine configuration (when its engine offers
// one): the bounds the HTTP layer validates requests by. Configure every
// pod's engine alike.
func (r *Router) Config() holdfast.Config {
	for _, p := range r.order {
		if c, ok := p.eng.(interface{ Config() holdfast.Config }); ok {
			return c.Config()
		}
	}
	return holdfast.Config{}
}

// combines reports whether e says it would combine p (httpapi.Combiner).
func combines(e holdfast.Engine, p holdfast.ReserveParams) bool {
	c, ok := e.(interface {
		Combinable(holdfast.ReserveParams) bool
	})
	return ok && c.Combinable(p)
}

// Combinable answers as the shop's pod's engine would (httpapi.Combiner),
// from the cached placement only: a shop not in the cache is not
// combinable, which costs it a connection slot, never correctness.
func (r *Router) Combinable(p holdfast.ReserveParams) bool {
	e, ok := r.cache.get(p.ShopID)
	if !ok {
		return false
	}
	pp := r.pods[e.pl.Pod]
	return pp != nil && combines(pp.eng, p)
}
