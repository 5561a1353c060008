package drivertest

import (
	"context"
	"slices"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// testBundleAttempts: WriteBundle replaces a bundle's components, kept in
// the order given; GetBundle reads them (none for another shop's or a
// deleted one); ReadBundles reads a shop's every bundle on the pool and in
// a caller's transaction; BundleFacts says whether the bundle's id has a
// key, which bundle it is a component of, which component is a bundle and
// how many other bundles the shop has; DeleteBundle says whether it
// removed one.
func testBundleAttempts[TTx comparable](t *testing.T, h Harness[TTx]) {
	in := h.New(t)
	ctx := context.Background()
	d := in.Driver
	var own TTx
	setStock(t, in, holdfast.Key{ShopID: 1, ItemID: 5, LocationID: 1}, 4)
	comps := []holdfast.BundleComponent{{ItemID: 3, Quantity: 2}, {ItemID: 1, Quantity: 1}}
	write := func(b holdfast.Bundle) {
		t.Helper()
		err := d.Attempt(ctx, own, true, holdfast.RouteAdjust, func(tx TTx) error {
			if err := d.LockBundles(ctx, tx, b.ShopID); err != nil {
				return err
			}
			return d.WriteBundle(ctx, tx, b)
		})
		if err != nil {
			t.Fatalf("write %+v: %v", b, err)
		}
	}
	get := func(shop, item int64) []holdfast.BundleComponent {
		t.Helper()
		var out []holdfast.BundleComponent
		err := d.Attempt(ctx, own, true, holdfast.RouteRead, func(tx TTx) error {
			var err error
			out, err = d.GetBundle(ctx, tx, shop, item)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	facts := func(b holdfast.Bundle) driver.BundleFacts {
		t.Helper()
		var f driver.BundleFacts
		err := d.Attempt(ctx, own, true, holdfast.RouteAdjust, func(tx TTx) error {
			var err error
			f, err = d.BundleFacts(ctx, tx, b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	write(holdfast.Bundle{ShopID: 1, ItemID: 100, Components: comps})
	write(holdfast.Bundle{ShopID: 2, ItemID: 200, Components: []holdfast.BundleComponent{{ItemID: 100, Quantity: 1}}})
	if got := get(1, 100); !slices.Equal(got, comps) {
		t.Fatalf("GetBundle: %+v, want %+v (the order given)", got, comps)
	}
	if got := get(2, 100); len(got) != 0 {
		t.Fatalf("another shop's bundle: %+v, want none", got)
	}
	all, err := d.ReadBundles(ctx, own, true, 1)
	if err != nil || len(all) != 1 || !slices.Equal(all[100], comps) {
		t.Fatalf("ReadBundles on the pool: %+v %v", all, err)
	}
	tx, err := in.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err = d.ReadBundles(ctx, tx, false, 1)
	if err := in.End(ctx, tx, false); err != nil {
		t.Fatal(err)
	}
	if err != nil || len(all) != 1 || !slices.Equal(all[100], comps) {
		t.Fatalf("ReadBundles in a caller's transaction: %+v %v", all, err)
	}

	for _, tc := range []struct {
		b    holdfast.Bundle
		want driver.BundleFacts
	}{
		{holdfast.Bundle{ShopID: 1, ItemID: 5, Components: []holdfast.BundleComponent{{ItemID: 100, Quantity: 1}}}, driver.BundleFacts{Stocked: true, Nested: 100, Others: 1}},
		{holdfast.Bundle{ShopID: 1, ItemID: 3, Components: []holdfast.BundleComponent{{ItemID: 9, Quantity: 1}}}, driver.BundleFacts{ComponentOf: 100, Others: 1}},
		{holdfast.Bundle{ShopID: 1, ItemID: 100, Components: []holdfast.BundleComponent{{ItemID: 9, Quantity: 1}}}, driver.BundleFacts{}},
		{holdfast.Bundle{ShopID: 3, ItemID: 100, Components: []holdfast.BundleComponent{{ItemID: 100, Quantity: 1}}}, driver.BundleFacts{}},
	} {
		if got := facts(tc.b); got != tc.want {
			t.Errorf("BundleFacts %+v: %+v, want %+v", tc.b, got, tc.want)
		}
	}

	// Replaced, then deleted.
	write(holdfast.Bundle{ShopID: 1, ItemID: 100, Components: []holdfast.BundleComponent{{ItemID: 7, Quantity: 1}}})
	if got := get(1, 100); !slices.Equal(got, []holdfast.BundleComponent{{ItemID: 7, Quantity: 1}}) {
		t.Fatalf("after a rewrite: %+v", got)
	}
	for i, want := range []bool{true, false} {
		var found bool
		err := d.Attempt(ctx, own, true, holdfast.RouteAdjust, func(tx TTx) error {
			var err error
			found, err = d.DeleteBundle(ctx, tx, 1, 100)
			return err
		})
		if err != nil || found != want {
			t.Fatalf("DeleteBundle #%d: %v %v, want %v", i+1, found, err, want)
		}
	}
	if got := get(1, 100); len(got) != 0 {
		t.Fatalf("deleted bundle reads %+v", got)
	}
}
