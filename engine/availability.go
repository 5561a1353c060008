package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Availability answers what a buyer could reserve now of q's items, per
// location in allocation order (q's locations, or the shop's default
// location order), from one lock-free read that writes nothing (see
// holdfast.Availability), taken after the call began: concurrent queries
// of a shop share one read (availCoalescer). A rejected query, and a query
// without locations for a shop without a default order, is an
// *holdfast.ArgumentError and reads nothing more.
func (c *Client[TTx]) Availability(ctx context.Context, q holdfast.AvailabilityQuery) (*holdfast.Availability, error) {
	start := time.Now()
	if err := q.Validate(); err != nil {
		c.observe(holdfast.RouteRead, start, err, nil)
		return nil, err
	}
	var zero TTx
	defs, err := c.bundles(ctx, zero, true, q.ShopID)
	if err != nil {
		c.observe(holdfast.RouteRead, start, err, nil)
		return nil, err
	}
	if !slices.ContainsFunc(q.Items, func(id int64) bool { return defs[id] != nil }) {
		a, err := c.readAvailability(ctx, q)
		c.observe(holdfast.RouteRead, start, err, nil)
		return a, err
	}
	read := q // what is read: a bundle's components instead of the bundle
	read.Items = bundleItems(q.Items, defs)
	got, err := c.readAvailability(ctx, read)
	c.observe(holdfast.RouteRead, start, err, nil)
	if err != nil {
		return nil, err
	}
	of := make(map[int64]holdfast.ItemAvailability, len(got.Items))
	for _, ia := range got.Items {
		of[ia.ItemID] = ia
	}
	out := &holdfast.Availability{ShopID: q.ShopID, Locations: got.Locations, Items: make([]holdfast.ItemAvailability, len(q.Items))}
	for i, id := range q.Items {
		if comps := defs[id]; comps != nil {
			out.Items[i] = BundleAvailability(id, comps, of)
		} else {
			out.Items[i] = of[id]
		}
	}
	return out, nil
}

// Available folds ReadAvailability's rows for q (validated) into the
// answer: each key's sellable as Sellable says, and each item's totals
// over its locations in order. Rows that do not match q's items ×
// locations (a driver's bug) are an error, never a wrong answer.
//
// A bundle (issue #30 item 1) is folded in by Availability from its
// components' answers (BundleAvailability); pre-orders (item 2: beyond
// sellable up to a cap) will be folded in here.
func Available(q holdfast.AvailabilityQuery, rows []driver.KeyAvailability) (*holdfast.Availability, error) {
	if len(rows)%len(q.Items) != 0 {
		return nil, errAvailabilityRows(len(rows), q)
	}
	n := len(rows) / len(q.Items)
	out := &holdfast.Availability{ShopID: q.ShopID, Locations: make([]int64, n), Items: make([]holdfast.ItemAvailability, len(q.Items))}
	for j := range n {
		out.Locations[j] = rows[j].LocationID
	}
	if len(q.Locations) > 0 && n != len(q.Locations) {
		return nil, errAvailabilityRows(len(rows), q)
	}
	for i, item := range q.Items {
		ia := holdfast.ItemAvailability{ItemID: item, NotStocked: true, Locations: make([]holdfast.LocationAvailability, n)}
		for j := range n {
			r := rows[i*n+j]
			if r.ItemID != item || r.LocationID != out.Locations[j] {
				return nil, errAvailabilityRows(len(rows), q)
			}
			s := Sellable(r)
			ia.Locations[j] = holdfast.LocationAvailability{LocationID: r.LocationID, Sellable: s, Waiters: r.Waiters, NotStocked: !r.Stocked, Preorder: max(0, r.Preorder)}
			ia.Sellable += s
			ia.Whole = max(ia.Whole, s)
			ia.NotStocked = ia.NotStocked && !r.Stocked
		}
		out.Items[i] = ia
	}
	return out, nil
}

// Sellable is what a reservation line could take of a key now: its free
// units (available less safety stock) less its holds, never below zero,
// and nothing while it has waiters — the verdict of every reserve path's
// sellable read (sellable.sql on both drivers).
func Sellable(r driver.KeyAvailability) int {
	if r.Waiters {
		return 0
	}
	return max(0, r.Free-r.Held)
}

func errAvailabilityRows(got int, q holdfast.AvailabilityQuery) error {
	return fmt.Errorf("holdfast: the availability read answered %d rows for %d items and %d locations", got, len(q.Items), len(q.Locations))
}
