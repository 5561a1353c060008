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
