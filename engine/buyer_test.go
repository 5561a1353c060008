package engine

import (
	"testing"

	"github.com/holdfast/holdfast/engine/driver"
)

func TestOverBuyerLimit(t *testing.T) {
	n := driver.BuyerCount{ItemID: 7, Limit: 5, Held: 3}
	if over := OverBuyerLimit(n, 2); over != nil {
		t.Fatalf("3 held + 2 of a limit of 5: %v, want within", over)
	}
	over := OverBuyerLimit(n, 3)
	if over == nil || over.ItemID != 7 || over.Limit != 5 || over.Held != 3 || over.Requested != 3 {
		t.Fatalf("3 held + 3 of a limit of 5: %+v, want over", over)
	}
}

// TestOverBuyerLimits: the cart's quantity of each counted item is the
// one checked against its limit, and the first item over answers.
func TestOverBuyerLimits(t *testing.T) {
	counts := []driver.BuyerCount{{ItemID: 3, Limit: 4, Held: 1}, {ItemID: 8, Limit: 2, Held: 1}}
	items, qtys := []int64{3, 5, 8}, []int{3, 9, 1}
	if over := OverBuyerLimits(counts, items, qtys); over != nil {
		t.Fatalf("1+3 of 4 and 1+1 of 2 (item 5 unlimited): %+v, want within", over)
	}
	qtys = []int{4, 9, 2}
	over := OverBuyerLimits(counts, items, qtys)
	if over == nil || over.ItemID != 3 || over.Requested != 4 || over.Held != 1 {
		t.Fatalf("1+4 of 4 and 1+2 of 2: %+v, want item 3 over, requesting 4", over)
	}
	if over := OverBuyerLimits(counts[1:], items, qtys); over == nil || over.ItemID != 8 || over.Requested != 2 {
		t.Fatalf("1+2 of 2: %+v, want item 8 over", over)
	}
}
