package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Pre-orders (holdfast preorder.go, docs/DESIGN.md "Pre-orders"): the
// headroom is a companion key's stock, so the engine only splits short
// lines between the key and its companion, shows companion lines as the
// pre-ordered part of their key's line, records claimed companion lines as
// owed, and converts owed lines when stock arrives.

// SetPreorder sets or turns off a key's pre-orders: under the companion
// key's lock it moves the companion's available by the change of the cap,
// refusing a cap below the units outstanding (held + owed).
func (c *Client[TTx]) SetPreorder(ctx context.Context, p holdfast.Preorder) (*holdfast.Preorder, error) {
	if err := holdfast.ValidatePreorder(p); err != nil {
		return nil, err
	}
	if p.Cap == 0 {
		p.ExpectedAt = time.Time{}
	}
	p.ExpectedAt = p.ExpectedAt.UTC().Truncate(time.Microsecond)
	var zero TTx
	err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		// The companion's lock first: it serialises the changes of the
		// setting (a key without one has no row to lock) with the holds
		// and claims of its units.
		pk := holdfast.PreorderKey(p.Key)
		comp, err := c.d.LockedLevel(ctx, tx, holdfast.RouteAdjust, pk)
		if err != nil {
			return err
		}
		was, _, err := c.d.LockPreorder(ctx, tx, p.Key)
		if err != nil {
			return err
		}
		owed := was - comp.Available
		if out := comp.Held + owed; p.Cap < out {
			return holdfast.NewArgumentError("cap", "must be at least the %d units pre-ordered now (%d held, %d owed)", out, comp.Held, owed)
		}
		if d := p.Cap - was; d != 0 {
			if _, err := c.d.ChangeStockAttempt(ctx, tx, true, holdfast.StockChange{Key: pk, Delta: d, Reason: holdfast.PreorderReason}); err != nil {
				return err
			}
		}
		if err := c.d.WritePreorder(ctx, tx, p); err != nil {
			return err
		}
		return c.audit(ctx, tx, p.ShopID, holdfast.AuditStockPreorder, map[string]any{
			"item_id": p.ItemID, "location_id": p.LocationID, "cap": p.Cap, "expected_at": p.ExpectedAt})
	})
	if err != nil {
		return nil, err
	}
	c.kickWaitlist()
	return c.Preorder(ctx, p.Key)
}

// Preorder reads a key's pre-order setting and counts (Cap 0: none).
func (c *Client[TTx]) Preorder(ctx context.Context, k holdfast.Key) (*holdfast.Preorder, error) {
	if err := holdfast.ValidateKey(k); err != nil {
		return nil, err
	}
	var zero TTx
	got, err := c.d.ReadPreorders(ctx, zero, true, k.ShopID, []int64{k.ItemID}, []int64{k.LocationID})
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		return &holdfast.Preorder{Key: k}, nil
	}
	return &got[0], nil
}

// preorderIfShort serves a reservation the plain path answered short by
// pre-ordering: when a short line's key has a pre-order setting, the
// reservation runs again with each such line split into the units its key
// has (by the shortfall's sellable) and the rest on the companion key,
// re-split at most PreorderRounds times when the stock moved under it. An
// idempotency conflict may be the replay of such a split: it is answered
// by comparing the stored hold as the buyer sees it.
func (c *Client[TTx]) preorderIfShort(ctx context.Context, tx TTx, own bool, p holdfast.ReserveParams, h *holdfast.Hold, err error) (*holdfast.Hold, error) {
	var ise *holdfast.InsufficientStockError
	conflict := errors.Is(err, holdfast.ErrIdempotencyConflict)
	if !conflict && !errors.As(err, &ise) {
		return h, err
	}
	req, verr := ValidateReserve(c.cfg, p)
	if verr != nil || holdfast.HasAllocation(req.Lines) {
		return h, err
	}
	items, locs := make([]int64, len(req.Lines)), make([]int64, len(req.Lines))
	for i, l := range req.Lines {
		items[i], locs[i] = l.ItemID, l.LocationID
	}
	settings, rerr := c.d.ReadPreorders(ctx, tx, own, req.Shop, items, locs)
	if rerr != nil || len(settings) == 0 {
		return h, err
	}
	set := make(map[holdfast.Key]holdfast.Preorder, len(settings))
	for _, s := range settings {
		set[s.Key] = s
	}
	if conflict {
		return c.preorderReplay(ctx, tx, own, req, set, err)
	}
	if req.BuyerHash, rerr = c.buyerHash(ctx, req); rerr != nil {
		return nil, rerr
	}
	sellable := map[holdfast.Key]int{}
	pre := false
	for _, s := range ise.Lines {
		k := holdfast.Key{ShopID: req.Shop, ItemID: s.ItemID, LocationID: s.LocationID}
		sellable[k] = s.Sellable
		_, ok := set[k]
		pre = pre || ok
	}
	if !pre {
		return h, err
	}
	orig := req.Lines
	for range holdfast.PreorderRounds {
		split := splitPreorder(req.Shop, orig, sellable, set)
		r2 := *req
		r2.Lines = split
		raw, merr := json.Marshal(split)
		if merr != nil {
			return nil, merr
		}
		r2.LinesRaw = raw
		h2, err2 := c.reserveSplit(ctx, tx, own, &r2)
		if err2 == nil {
			return c.preorderView(h2, set), nil
		}
		if errors.Is(err2, holdfast.ErrIdempotencyConflict) {
			return c.preorderReplay(ctx, tx, own, req, set, err2)
		}
		var ise2 *holdfast.InsufficientStockError
		if !errors.As(err2, &ise2) {
			return nil, err2
		}
		headroomShort := false
		for _, s := range ise2.Lines {
			k := holdfast.Key{ShopID: req.Shop, ItemID: s.ItemID, LocationID: s.LocationID}
			if holdfast.IsPreorderKey(k) {
				headroomShort = true
				continue
			}
			sellable[k] = s.Sellable
		}
		if headroomShort {
			return nil, preorderShort(req.Shop, orig, sellable, set, ise2)
		}
		err = err2
	}
	return nil, err
}

// splitPreorder splits each line whose key is short and has a pre-order
// setting into the units its key has and the rest on its companion.
func splitPreorder(shop int64, lines []holdfast.Line, sellable map[holdfast.Key]int, set map[holdfast.Key]holdfast.Preorder) []holdfast.Line {
	out := make([]holdfast.Line, 0, len(lines)+1)
	for _, l := range lines {
		k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
		s, short := sellable[k]
		if _, ok := set[k]; !ok || !short || s >= l.Quantity {
			out = append(out, l)
			continue
		}
		if s > 0 {
			out = append(out, holdfast.Line{ItemID: l.ItemID, LocationID: l.LocationID, Quantity: s})
		}
		out = append(out, holdfast.Line{ItemID: l.ItemID, LocationID: -l.LocationID, Quantity: l.Quantity - max(s, 0)})
	}
	slices.SortFunc(out, holdfast.CompareLines)
	return out
}

// preorderShort is the answer to a cart whose pre-ordered part found no
// headroom: the original lines, each short one with what it could have had
// (its stock and its headroom).
func preorderShort(shop int64, lines []holdfast.Line, sellable map[holdfast.Key]int, set map[holdfast.Key]holdfast.Preorder, ise *holdfast.InsufficientStockError) error {
	head := map[holdfast.Key]int{}
	for _, s := range ise.Lines {
		if s.LocationID < 0 {
			head[holdfast.Key{ShopID: shop, ItemID: s.ItemID, LocationID: -s.LocationID}] = s.Sellable
		}
	}
	var short []holdfast.Shortfall
	for _, l := range lines {
		k := holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: l.LocationID}
		s, ok := sellable[k]
		if !ok {
			continue
		}
		h, hok := head[k]
		if !hok {
			if _, pre := set[k]; pre {
				h = l.Quantity - max(s, 0) // its headroom sufficed
			}
		}
		if s+h < l.Quantity || hok {
			short = append(short, holdfast.Shortfall{ItemID: l.ItemID, LocationID: l.LocationID, Requested: l.Quantity, Sellable: max(s, 0) + h})
		}
	}
	return &holdfast.InsufficientStockError{Lines: short}
}

// reserveSplit runs the reservation attempts of a split cart (the plain
// path of reserve, without combining).
func (c *Client[TTx]) reserveSplit(ctx context.Context, tx TTx, own bool, req *driver.Reservation) (*holdfast.Hold, error) {
	start := time.Now()
	var beforeSlow func() error
	if own {
		beforeSlow = func() error { return c.d.RefillInline(ctx, req.Shop, req.Lines) }
	}
	var h *holdfast.Hold
	err := c.core.Run(ctx, holdfast.RouteReserve, own, true, beforeSlow, func(level int) error {
		mode := driver.ModeOf(level, own)
		return c.d.Attempt(ctx, tx, own, holdfast.RouteReserve, func(tx TTx) error {
			var err error
			h, err = c.d.ReserveAttempt(ctx, tx, own, req, mode)
			return err
		})
	})
	c.observe(holdfast.RouteReserve, start, err, h)
	if err != nil {
		return nil, err
	}
	if own && !h.Replayed {
		c.noteReserved(h, req.Shop, req.Lines)
	}
	return h, nil
}

// preorderReplay answers a retried reservation whose stored hold is split:
// the same lines as the buyer sees them, for the same buyer id, is a
// replay, else the conflict. The hold is read again here, after the
// attempt that answered the conflict: a hold that ended in between
// (released, claimed, expired and swept) answers how it ended, as the
// drivers answer a retry of an ended hold (their existing), not the
// conflict.
func (c *Client[TTx]) preorderReplay(ctx context.Context, tx TTx, own bool, req *driver.Reservation, set map[holdfast.Key]holdfast.Preorder, conflict error) (*holdfast.Hold, error) {
	asked, err := c.buyerHash(ctx, req)
	if err != nil {
		return nil, err
	}
	var h *holdfast.Hold
	var buyer []byte
	err = c.run(ctx, tx, own, holdfast.RouteReserve, true, func(tx TTx) error {
		var err error
		if h, err = c.d.ReadHold(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout); err != nil {
			return err
		}
		buyer, err = c.d.BuyerOf(ctx, tx, holdfast.RouteReserve, req.Shop, req.Checkout)
		return err
	})
	if err != nil {
		return nil, conflict
	}
	switch {
	case h.Status == holdfast.StatusClaimed:
		return nil, holdfast.ErrHoldClaimed
	case h.Status == holdfast.StatusReleased:
		return nil, holdfast.ErrHoldReleased
	case !h.Claimable:
		return nil, holdfast.ErrHoldExpired
	}
	v := c.preorderView(h, set)
	if len(v.Lines) != len(req.Lines) {
		return nil, conflict
	}
	for i, l := range v.Lines {
		r := req.Lines[i]
		if l.ItemID != r.ItemID || l.LocationID != r.LocationID || l.Quantity != r.Quantity {
			return nil, conflict
		}
	}
	// The hold is its buyer's (SameBuyer), as the drivers' replay checks.
	if err := SameBuyer(buyer, asked); err != nil {
		return nil, err
	}
	v.Replayed = true
	return v, nil
}

// hasPreordered reports whether lines have a companion line.
func hasPreordered(lines []holdfast.Line) bool {
	return slices.ContainsFunc(lines, func(l holdfast.Line) bool { return l.LocationID < 0 })
}

// preorderView is h as the buyer sees it: each companion line folded into
// its key's line as its pre-ordered units, with the expected date.
func (c *Client[TTx]) preorderView(h *holdfast.Hold, set map[holdfast.Key]holdfast.Preorder) *holdfast.Hold {
	if h == nil || !hasPreordered(h.Lines) {
		return h
	}
	v := *h
	v.Lines = foldPreordered(h.ShopID, h.Lines, set)
	return &v
}

// foldPreordered folds companion lines into their key's lines.
func foldPreordered(shop int64, lines []holdfast.Line, set map[holdfast.Key]holdfast.Preorder) []holdfast.Line {
	out := make([]holdfast.Line, 0, len(lines))
	for _, l := range lines {
		if l.LocationID >= 0 {
			out = append(out, l)
		}
	}
	for _, l := range lines {
		if l.LocationID >= 0 {
			continue
		}
		loc := -l.LocationID
		i := slices.IndexFunc(out, func(o holdfast.Line) bool { return o.ItemID == l.ItemID && o.LocationID == loc })
		if i < 0 {
			out = append(out, holdfast.Line{ItemID: l.ItemID, LocationID: loc})
			i = len(out) - 1
		}
		out[i].Quantity += l.Quantity
		out[i].Preordered += l.Quantity
		if s, ok := set[holdfast.Key{ShopID: shop, ItemID: l.ItemID, LocationID: loc}]; ok && !s.ExpectedAt.IsZero() {
			at := s.ExpectedAt
			out[i].ExpectedAt = &at
		}
	}
	slices.SortFunc(out, holdfast.CompareLines)
	return out
}

// viewHold is preorderView with the settings read (only for a hold that
// has pre-ordered lines).
func (c *Client[TTx]) viewHold(ctx context.Context, tx TTx, own bool, h *holdfast.Hold) *holdfast.Hold {
	if h == nil || !hasPreordered(h.Lines) {
		return h
	}
	return c.preorderView(h, c.settingsOf(ctx, tx, own, h.ShopID, h.Lines))
}

// settingsOf reads the pre-order settings of the keys of lines' companion
// lines (best effort: without them a view has no expected dates).
func (c *Client[TTx]) settingsOf(ctx context.Context, tx TTx, own bool, shop int64, lines []holdfast.Line) map[holdfast.Key]holdfast.Preorder {
	var items, locs []int64
	for _, l := range lines {
		if l.LocationID < 0 {
			items, locs = append(items, l.ItemID), append(locs, -l.LocationID)
		}
	}
	set := map[holdfast.Key]holdfast.Preorder{}
	if len(items) == 0 {
		return set
	}
	got, err := c.d.ReadPreorders(ctx, tx, own, shop, items, locs)
	if err != nil {
		return set
	}
	for _, s := range got {
		set[s.Key] = s
	}
	return set
}

// owe records a claimed hold's companion lines as owed, in the claim's
// transaction.
func (c *Client[TTx]) owe(ctx context.Context, tx TTx, own bool, h *holdfast.Hold) error {
	if h == nil || h.Replayed || !hasPreordered(h.Lines) {
		return nil
	}
	var pre []holdfast.Line
	for _, l := range h.Lines {
		if l.LocationID < 0 {
			pre = append(pre, l)
		}
	}
	// No conversion here: the claim holds level rows now, and a conversion
	// takes the key's lock, which comes before them in the lock order
	// (docs/DESIGN.md, "Lock order"); the worker or the next stock change
	// converts.
	return c.d.OwePreorders(ctx, tx, h.ShopID, h.CheckoutID, h.CreatedAt, pre)
}

// convertKey converts k's owed pre-orders, oldest first, as far as its
// sellable stock (available - safety - held, read under k's lock when lvl
// is nil) goes, at most PreorderConvertBatch lines: the units leave k's
// available and go back to its headroom. It answers the units converted
// and k's level after them (lvl when none).
//
// buffered: the units in k's buffer count as sellable. Reservations on the
// fast path take buffer units without k's lock, so the conversion may race
// one: the level it leaves is checked (pooled + held <= available, read
// after the change's shrink, which waited for such reservations) and a
// lost race rolls the attempt back to run again (driver.ErrRetry). Without
// buffered only the units outside the buffer count, which no reservation
// can take without k's lock.
func (c *Client[TTx]) convertKey(ctx context.Context, tx TTx, own bool, k holdfast.Key, lvl *holdfast.Level, buffered bool) (int, *holdfast.Level, error) {
	var err error
	if lvl == nil {
		// The key's lock before its owed lines: the order a stock change
		// takes them in.
		if lvl, err = c.d.LockedLevel(ctx, tx, holdfast.RouteAdjust, k); err != nil {
			return 0, nil, err
		}
	}
	owed, err := c.d.OwedPreorders(ctx, tx, k, holdfast.PreorderConvertBatch)
	if err != nil || len(owed) == 0 {
		return 0, lvl, err
	}
	free := lvl.Available - lvl.Safety - lvl.Held
	if !buffered {
		free -= lvl.Pooled
	}
	total := 0
	for _, o := range owed {
		n := min(o.Units, free-total)
		if n <= 0 {
			break
		}
		if err := c.d.ConvertOwed(ctx, tx, o, n); err != nil {
			return 0, nil, err
		}
		total += n
	}
	if total == 0 {
		return 0, lvl, nil
	}
	after, err := c.d.ChangeStockAttempt(ctx, tx, own, holdfast.StockChange{Key: k, Delta: -total, Reason: holdfast.PreorderReason})
	var arg *holdfast.ArgumentError
	if errors.Is(err, holdfast.ErrOverCommitted) || errors.As(err, &arg) ||
		err == nil && after.Pooled+after.Held > after.Available {
		// A reservation on the fast path (no key lock) took, and maybe a
		// claim deducted, units the level counted as free: look again.
		return 0, nil, driver.ErrRetry
	}
	if err != nil {
		return 0, nil, err
	}
	if _, err := c.d.ChangeStockAttempt(ctx, tx, own, holdfast.StockChange{Key: holdfast.PreorderKey(k), Delta: total, Reason: holdfast.PreorderReason}); err != nil {
		return 0, nil, err
	}
	return total, after, nil
}

// ConvertPreordersOnce is the maintenance worker's conversion pass: for up
// to PreorderConvertBatch keys with owed pre-orders it converts what their
// stock serves now, one short transaction per key, and returns the units
// converted.
func (c *Client[TTx]) ConvertPreordersOnce(ctx context.Context) (int, error) {
	keys, err := c.d.OwedKeys(ctx, holdfast.PreorderConvertBatch)
	if err != nil {
		return 0, err
	}
	total := 0
	var zero TTx
	for _, k := range keys {
		var n int
		err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
			var err error
			n, _, err = c.convertKey(ctx, tx, true, k, nil, true)
			return err
		})
		if errors.Is(err, holdfast.ErrShopMoved) {
			continue // fenced for a move: the pod that serves it converts
		}
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// refusePreordered answers ErrPreordered for a checkout whose hold has
// pre-ordered lines (Edit, ClaimLines and MergeCheckouts are not offered
// on them); a missing hold is left to the operation.
func (c *Client[TTx]) refusePreordered(ctx context.Context, tx TTx, shop int64, checkouts ...uuid.UUID) error {
	for _, co := range checkouts {
		h, err := c.d.ReadHold(ctx, tx, holdfast.RouteRead, shop, co)
		if errors.Is(err, holdfast.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if hasPreordered(h.Lines) {
			return holdfast.ErrPreordered
		}
	}
	return nil
}

// viewEvents shows companion keys' events as their key's: hold lines
// folded, stock and key events on the key marked Preorder.
func viewEvents(evs []holdfast.Event) {
	for i := range evs {
		e := &evs[i]
		if hasPreordered(e.Lines) {
			e.Lines = foldPreordered(e.ShopID, e.Lines, nil)
		}
		if e.LocationID < 0 {
			e.LocationID = -e.LocationID
			e.Preorder = true
		}
	}
}
