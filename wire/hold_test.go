package wire_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/wire"
)

// TestRoundTrip: what the server writes (From…, then JSON) the client reads
// back (…, then the conversion) as the library's own value, for every
// member the wire carries: a held hold, a lapsed one, a partial claim, a
// level, a page of the ledger.
func TestRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 30, 18, 0, 0, 123456000, time.UTC) // microseconds: the databases' precision, and the wire's
	end := now.Add(time.Minute)
	lines := []holdfast.Line{{ItemID: 1, LocationID: 2, Quantity: 3}, {ItemID: 4, LocationID: 5, Quantity: 6}}
	for _, h := range []holdfast.Hold{
		{CheckoutID: uuid.New(), ShopID: 1, Status: holdfast.StatusHeld, Lines: lines, CreatedAt: now, ExpiresAt: now.Add(time.Minute), Deadline: now.Add(time.Hour), Claimable: true, Revision: 1},
		{CheckoutID: uuid.New(), ShopID: 2, Status: holdfast.StatusExpired, Lines: lines, CreatedAt: now, ExpiresAt: now, Deadline: now, Claimable: true, Revision: 3},
		{CheckoutID: uuid.New(), ShopID: 3, Status: holdfast.StatusClaimed, Lines: lines[:1], CreatedAt: now, ExpiresAt: now, Deadline: now, EndedAt: &end, Revision: 2, Released: lines[1:]},
	} {
		w := wire.FromHold(&h)
		var back wire.Hold
		roundTrip(t, w, &back)
		if got := back.Hold(); !reflect.DeepEqual(*got, h) {
			t.Fatalf("hold\n got %+v\nwant %+v", *got, h)
		}
	}
	l := holdfast.Level{Key: holdfast.Key{ShopID: 1, ItemID: 2, LocationID: 3}, Available: 10, Held: 4, Pooled: 3, Sellable: 5, Safety: 1, OverCommitted: true, Strategy: holdfast.StrategyPool}
	w := wire.FromLevel(&l)
	var lb wire.Level
	roundTrip(t, w, &lb)
	if got := lb.Level(); !reflect.DeepEqual(*got, l) {
		t.Fatalf("level\n got %+v\nwant %+v", *got, l)
	}
	p := holdfast.LedgerPage{Key: l.Key, Entries: []holdfast.LedgerEntry{{ID: 9, Delta: -2, AvailableAfter: 8, Reason: "claim", Reference: "r", CreatedAt: now}}, Next: "c"}
	wp := wire.FromLedgerPage(&p)
	var pb wire.LedgerPage
	roundTrip(t, wp, &pb)
	if got := pb.LedgerPage(); !reflect.DeepEqual(*got, p) {
		t.Fatalf("ledger page\n got %+v\nwant %+v", *got, p)
	}
}

func roundTrip(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}
