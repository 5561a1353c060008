package engine_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// TestExpandBundles: bundle lines become component lines (quantity ×
// component quantity) merged with the cart's own lines of the same key;
// a merge past QuantityMax, or with another allocation, names the line.
func TestExpandBundles(t *testing.T) {
	defs := map[int64][]holdfast.BundleComponent{100: {{ItemID: 3, Quantity: 2}, {ItemID: 1, Quantity: 1}}}
	cfg := holdfast.Config{QuantityMax: 10}
	got, err := engine.ExpandBundles(cfg, []holdfast.Line{
		{ItemID: 1, LocationID: 1, Quantity: 1},
		{ItemID: 100, LocationID: 1, Quantity: 3},
		{ItemID: 100, LocationID: 2, Quantity: 1},
	}, defs)
	want := []holdfast.Line{
		{ItemID: 1, LocationID: 1, Quantity: 4},
		{ItemID: 3, LocationID: 1, Quantity: 6},
		{ItemID: 3, LocationID: 2, Quantity: 2},
		{ItemID: 1, LocationID: 2, Quantity: 1},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	for _, tc := range []struct {
		lines []holdfast.Line
		field string
	}{
		{[]holdfast.Line{{ItemID: 100, LocationID: 1, Quantity: 6}}, "lines[0].quantity"},                                          // 12 of item 3
		{[]holdfast.Line{{ItemID: 3, LocationID: 1, Quantity: 5}, {ItemID: 100, LocationID: 1, Quantity: 3}}, "lines[1].quantity"}, // 5 + 6
		{[]holdfast.Line{{ItemID: 1, Quantity: 1, Candidates: holdfast.LocationsOf(1)}, {ItemID: 100, Quantity: 1, Candidates: holdfast.LocationsOf(2)}}, "lines[1]"},
	} {
		_, err := engine.ExpandBundles(cfg, tc.lines, defs)
		var ae *holdfast.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%+v: %v, want an *ArgumentError naming %s", tc.lines, err, tc.field)
		}
	}
}

// TestBundleAvailability: per location the fewest whole bundles; split
// and whole the fewest over components of theirs; waiters and not stocked
// when any component is.
func TestBundleAvailability(t *testing.T) {
	comps := []holdfast.BundleComponent{{ItemID: 1, Quantity: 1}, {ItemID: 2, Quantity: 3}}
	of := map[int64]holdfast.ItemAvailability{
		1: {ItemID: 1, Sellable: 9, Whole: 5, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 5}, {LocationID: 2, Sellable: 4}}},
		2: {ItemID: 2, Sellable: 10, Whole: 7, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 7}, {LocationID: 2, Sellable: 3, Waiters: true}}},
	}
	got := engine.BundleAvailability(100, comps, of)
	want := holdfast.ItemAvailability{ItemID: 100, Sellable: 3, Whole: 2, Locations: []holdfast.LocationAvailability{{LocationID: 1, Sellable: 2}, {LocationID: 2, Sellable: 1, Waiters: true}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}
