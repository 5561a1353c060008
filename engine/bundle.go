package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Bundles (issue #30 item 1). A reservation line of a bundle item is
// expanded here, before any reserve attempt, into one line per component
// (the line's quantity × the component's, at the line's location or with
// its allocation), merged with the cart's other lines of the same key; the
// expanded cart then takes the ordinary path. So the all-or-nothing
// reservation, allocation, per-buyer limits, the shortfall (which names
// the short component), waiting, claim, release, expiry, edit and events
// are the components', written once, and the hold's lines are the
// components. Idempotency compares the expanded lines: a retry of a
// checkout after its bundle was redefined is ErrIdempotencyConflict.
//
// The definitions come from bundleCache: each client keeps a shop's whole
// set of definitions (at most BundlesPerShopMax) for BundleCacheTTL, read
// in one statement, and drops it when it changes them itself. Reading them
// in each reservation's transaction instead would cost every reservation —
// bundles or not — a statement (the hot path is a few statements); the
// cache costs a map lookup. Its price: a definition changed through
// another client (another process, another pod's router) takes effect here
// within BundleCacheTTL. Until then a reservation of a new bundle answers
// that the item is not stocked (a bundle's id never has a key of its own),
// and one of a redefined or deleted bundle takes its previous components —
// a coherent hold either way (the units are the components' and the
// invariant is per key), as if the reservation came just before the change.

// BundleCacheTTL is how long a client trusts its copy of a shop's bundle
// definitions (see above).
const BundleCacheTTL = 2 * time.Second

// bundleCacheShopsMax bounds the shops one client caches definitions for;
// past it the cache starts over.
const bundleCacheShopsMax = 10_000

type bundleDefs = map[int64][]holdfast.BundleComponent

type bundleEntry struct {
	at   time.Time
	defs bundleDefs
}

// bundleCache is a client's copy of shops' bundle definitions. Safe for
// concurrent use; the zero value is empty.
type bundleCache struct {
	mu    sync.Mutex
	shops map[int64]bundleEntry
}

func (bc *bundleCache) get(shop int64) (bundleDefs, bool) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	e, ok := bc.shops[shop]
	if !ok || time.Since(e.at) > BundleCacheTTL {
		return nil, false
	}
	return e.defs, true
}

func (bc *bundleCache) put(shop int64, at time.Time, defs bundleDefs) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	if bc.shops == nil || len(bc.shops) >= bundleCacheShopsMax {
		bc.shops = map[int64]bundleEntry{}
	}
	bc.shops[shop] = bundleEntry{at: at, defs: defs}
}

func (bc *bundleCache) drop(shop int64) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	delete(bc.shops, shop)
}

// bundles answers a shop's bundle definitions, from the cache or read:
// on the pool when own, else in the caller's tx (no second connection).
// What a caller's tx read is cached too: under READ COMMITTED (MySQL's
// …Tx twins require it; PostgreSQL's default) each statement sees what was
// committed when it began; a caller's older REPEATABLE READ snapshot may
// make the entry older than its stamp by the age of that transaction.
func (c *Client[TTx]) bundles(ctx context.Context, tx TTx, own bool, shop int64) (bundleDefs, error) {
	if defs, ok := c.bundleCache.get(shop); ok {
		return defs, nil
	}
	at := time.Now() // before the read: the entry is never trusted past what it saw
	if !own {
		defs, err := c.d.ReadBundles(ctx, tx, false, shop)
		if err != nil {
			return nil, err
		}
		c.bundleCache.put(shop, at, defs)
		return defs, nil
	}
	var defs bundleDefs
	err := c.core.Run(ctx, holdfast.RouteRead, true, true, nil, func(int) error {
		var err error
		defs, err = c.d.ReadBundles(ctx, tx, true, shop)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.bundleCache.put(shop, at, defs)
	return defs, nil
}

// expandReserve answers p with its bundle lines expanded into component
// lines (p itself when it has none). An expanded cart is validated as it
// was given first, so a malformed cart names the field the caller sent.
func (c *Client[TTx]) expandReserve(ctx context.Context, tx TTx, own bool, p holdfast.ReserveParams) (holdfast.ReserveParams, error) {
	if p.ShopID <= 0 || len(p.Lines) == 0 {
		return p, nil // validation answers it
	}
	defs, err := c.bundles(ctx, tx, own, p.ShopID)
	if err != nil || len(defs) == 0 {
		return p, err
	}
	if !slices.ContainsFunc(p.Lines, func(l holdfast.Line) bool { return defs[l.ItemID] != nil }) {
		return p, nil
	}
	if _, err := ValidateReserve(c.cfg, p); err != nil {
		return p, err
	}
	lines, err := ExpandBundles(c.cfg, p.Lines, defs)
	if err != nil {
		return p, err
	}
	p.Lines = lines
	return p, nil
}

// expandEdit is expandReserve for an edit's new lines: an edit may name a
// bundle as a reservation does, and the hold's lines stay components.
func (c *Client[TTx]) expandEdit(ctx context.Context, tx TTx, own bool, p holdfast.EditParams) (holdfast.EditParams, error) {
	if p.ShopID <= 0 || len(p.Lines) == 0 {
		return p, nil // validation answers it
	}
	defs, err := c.bundles(ctx, tx, own, p.ShopID)
	if err != nil || len(defs) == 0 {
		return p, err
	}
	if !slices.ContainsFunc(p.Lines, func(l holdfast.Line) bool { return defs[l.ItemID] != nil }) {
		return p, nil
	}
	if _, err := holdfast.ValidateEdit(c.cfg, p); err != nil {
		return p, err
	}
	lines, err := ExpandBundles(c.cfg, p.Lines, defs)
	if err != nil {
		return p, err
	}
	p.Lines = lines
	return p, nil
}

// ExpandBundles answers lines (validated) with each line of a bundle in
// defs replaced by its components, merged with the other lines of the same
// key (item, location) by adding quantities. A merged line over
// Config.QuantityMax, or a component that meets a line of the same key
// with another allocation (candidates, split), is an *ArgumentError naming
// the bundle's line.
func ExpandBundles(cfg holdfast.Config, lines []holdfast.Line, defs map[int64][]holdfast.BundleComponent) ([]holdfast.Line, error) {
	cfg = cfg.WithDefaults()
	type key struct{ item, location int64 }
	out := make([]holdfast.Line, 0, len(lines))
	at := map[key]int{}
	add := func(i int, l holdfast.Line) error {
		k := key{l.ItemID, l.LocationID}
		j, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, l)
			return nil
		}
		o := &out[j]
		if o.Split != l.Split || o.Candidates != l.Candidates {
			return holdfast.NewArgumentError(fmt.Sprintf("lines[%d]", i), "item %d (location %d) is also in another line of the cart with another allocation", l.ItemID, l.LocationID)
		}
		if o.Quantity+l.Quantity > cfg.QuantityMax {
			return holdfast.NewArgumentError(fmt.Sprintf("lines[%d].quantity", i), "the cart takes %d units of item %d (location %d) with its bundles, more than %d", o.Quantity+l.Quantity, l.ItemID, l.LocationID, cfg.QuantityMax)
		}
		o.Quantity += l.Quantity
		return nil
	}
	for i, l := range lines {
		comps := defs[l.ItemID]
		if comps == nil {
			if err := add(i, l); err != nil {
				return nil, err
			}
			continue
		}
		for _, bc := range comps {
			q := l.Quantity * bc.Quantity
			if q > cfg.QuantityMax {
				return nil, holdfast.NewArgumentError(fmt.Sprintf("lines[%d].quantity", i), "bundle %d takes %d units of item %d, more than %d", l.ItemID, q, bc.ItemID, cfg.QuantityMax)
			}
			cl := l
			cl.ItemID, cl.Quantity = bc.ItemID, q
			if err := add(i, cl); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// SetBundle defines (or redefines) a shop's bundle item (holdfast.Bundle):
// in one transaction, under the shop's bundle lock, it checks that the
// bundle's id has no key of its own, is no component of another bundle,
// that no component is a bundle and that the shop stays within
// BundlesPerShopMax, then writes the definition and its audit entry. A
// refused definition is an *holdfast.ArgumentError naming the field and
// changes nothing. Safe to retry (the last definition wins).
func (c *Client[TTx]) SetBundle(ctx context.Context, b holdfast.Bundle) error {
	start := time.Now()
	if err := b.Validate(c.cfg); err != nil {
		c.observe(holdfast.RouteAdjust, start, err, nil)
		return err
	}
	b.Components = slices.Clone(b.Components)
	var zero TTx
	err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		if err := c.d.LockBundles(ctx, tx, b.ShopID); err != nil {
			return err
		}
		f, err := c.d.BundleFacts(ctx, tx, b)
		if err != nil {
			return err
		}
		if err := refuseBundle(b, f); err != nil {
			return err
		}
		if err := c.d.WriteBundle(ctx, tx, b); err != nil {
			return err
		}
		return c.audit(ctx, tx, b.ShopID, holdfast.AuditBundleSet, b)
	})
	c.bundleCache.drop(b.ShopID)
	c.observe(holdfast.RouteAdjust, start, err, nil)
	return err
}

// refuseBundle is SetBundle's verdict on what its transaction read.
func refuseBundle(b holdfast.Bundle, f driver.BundleFacts) error {
	switch {
	case f.Stocked:
		return holdfast.NewArgumentError("item_id", "item %d has a key of its own (stock, a strategy or safety stock): a bundle's id cannot be a stocked item", b.ItemID)
	case f.ComponentOf != 0:
		return holdfast.NewArgumentError("item_id", "item %d is a component of bundle %d: bundles do not nest", b.ItemID, f.ComponentOf)
	case f.Nested != 0:
		i := slices.IndexFunc(b.Components, func(c holdfast.BundleComponent) bool { return c.ItemID == f.Nested })
		return holdfast.NewArgumentError(fmt.Sprintf("components[%d].item_id", i), "item %d is a bundle: bundles do not nest", f.Nested)
	case f.Others >= holdfast.BundlesPerShopMax:
		return holdfast.NewArgumentError("item_id", "the shop has %d bundles, the most it may have", f.Others)
	}
	return nil
}

// Bundle reads a shop's bundle definition; holdfast.ErrNotFound when the
// item is not a bundle.
func (c *Client[TTx]) Bundle(ctx context.Context, shopID, itemID int64) (*holdfast.Bundle, error) {
	if err := validateBundleID(shopID, itemID); err != nil {
		return nil, err
	}
	var zero TTx
	var comps []holdfast.BundleComponent
	err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		comps, err = c.d.GetBundle(ctx, tx, shopID, itemID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(comps) == 0 {
		return nil, fmt.Errorf("%w: item %d is not a bundle", holdfast.ErrNotFound, itemID)
	}
	return &holdfast.Bundle{ShopID: shopID, ItemID: itemID, Components: comps}, nil
}

// DeleteBundle removes a shop's bundle definition; removing one that does
// not exist is not an error (a retry is safe). Holds already made keep
// their component lines.
func (c *Client[TTx]) DeleteBundle(ctx context.Context, shopID, itemID int64) error {
	if err := validateBundleID(shopID, itemID); err != nil {
		return err
	}
	var zero TTx
	err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		found, err := c.d.DeleteBundle(ctx, tx, shopID, itemID)
		if err != nil || !found {
			return err
		}
		return c.audit(ctx, tx, shopID, holdfast.AuditBundleDelete, map[string]int64{"item_id": itemID})
	})
	c.bundleCache.drop(shopID)
	return err
}

func validateBundleID(shopID, itemID int64) error {
	if shopID <= 0 {
		return holdfast.NewArgumentError("shop_id", "must be a positive integer")
	}
	if itemID <= 0 {
		return holdfast.NewArgumentError("item_id", "must be a positive integer")
	}
	return nil
}

// bundleItems answers the items the availability read must read for q:
// q's items with each bundle replaced by its components, each once.
func bundleItems(items []int64, defs bundleDefs) []int64 {
	out := make([]int64, 0, len(items))
	seen := map[int64]bool{}
	add := func(id int64) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range items {
		if comps := defs[id]; comps != nil {
			for _, bc := range comps {
				add(bc.ItemID)
			}
			continue
		}
		add(id)
	}
	return out
}

// BundleAvailability is a bundle's availability from its components'
// (each of the same locations, in order): per location, the fewest whole
// bundles its components there allow, with waiters or not stocked when
// any component is so; Sellable, the fewest over the components of their
// split totals; Whole, the fewest over the components of their Whole —
// each component line of an expanded bundle is allocated on its own, so
// components may come from different locations.
func BundleAvailability(item int64, comps []holdfast.BundleComponent, of map[int64]holdfast.ItemAvailability) holdfast.ItemAvailability {
	first := of[comps[0].ItemID]
	out := holdfast.ItemAvailability{ItemID: item, NotStocked: true, Sellable: -1, Whole: -1, Locations: make([]holdfast.LocationAvailability, len(first.Locations))}
	for j := range out.Locations {
		out.Locations[j] = holdfast.LocationAvailability{LocationID: first.Locations[j].LocationID, Sellable: -1}
	}
	lowest := func(v *int, n int) {
		if *v < 0 || n < *v {
			*v = n
		}
	}
	for _, bc := range comps {
		ia := of[bc.ItemID]
		lowest(&out.Sellable, ia.Sellable/bc.Quantity)
		lowest(&out.Whole, ia.Whole/bc.Quantity)
		for j, la := range ia.Locations {
			o := &out.Locations[j]
			lowest(&o.Sellable, la.Sellable/bc.Quantity)
			o.Waiters = o.Waiters || la.Waiters
			o.NotStocked = o.NotStocked || la.NotStocked
		}
	}
	for _, o := range out.Locations {
		out.NotStocked = out.NotStocked && o.NotStocked
	}
	return out
}

// refuseBundleStock refuses stock for a shop's bundle items: a bundle has
// no stock of its own (reserving it takes its components), so units set on
// its id would never be taken. SetBundle refuses the other order (a stocked
// item cannot become a bundle). field names item i in the caller's input.
// Definitions come from the same cache reservations expand through.
func (c *Client[TTx]) refuseBundleStock(ctx context.Context, tx TTx, own bool, shop int64, items []int64, field func(i int) string) error {
	defs, err := c.bundles(ctx, tx, own, shop)
	if err != nil {
		return err
	}
	for i, item := range items {
		if defs[item] != nil {
			return holdfast.NewArgumentError(field(i), "item %d is a bundle: it has no stock of its own (stock its components, or delete the bundle first)", item)
		}
	}
	return nil
}
