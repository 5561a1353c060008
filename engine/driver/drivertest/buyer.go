package drivertest

import (
	"bytes"
	"context"
	"testing"

	"github.com/holdfast/holdfast"
)

// testBuyerSecretAttempt: BuyerSecretAttempt answers the one stored
// secret, whatever fresh secret it is offered once one is stored.
func testBuyerSecretAttempt[TTx comparable](t *testing.T, h Harness[TTx]) {
	ctx := context.Background()
	in := h.New(t)
	var zero TTx
	ask := func(fresh []byte) []byte {
		t.Helper()
		var got []byte
		// A concurrent store (nil) is asked again, as the engine does.
		for range 3 {
			err := in.Driver.Attempt(ctx, zero, true, holdfast.RouteReserve, func(tx TTx) error {
				var err error
				got, err = in.Driver.BuyerSecretAttempt(ctx, tx, fresh)
				return err
			})
			if err != nil {
				t.Fatalf("BuyerSecretAttempt: %v", err)
			}
			if got != nil {
				return got
			}
		}
		t.Fatalf("BuyerSecretAttempt answered no secret 3 times")
		return nil
	}
	a, b := holdfast.NewBuyerSecret(), holdfast.NewBuyerSecret()
	first := ask(a)
	if len(first) == 0 {
		t.Fatalf("BuyerSecretAttempt answered an empty secret")
	}
	second := ask(b)
	if !bytes.Equal(first, second) {
		t.Fatalf("BuyerSecretAttempt answered %x, then %x: not the one stored secret", first, second)
	}
	if bytes.Equal(second, b) {
		t.Fatalf("BuyerSecretAttempt stored the fresh secret over the stored one")
	}
}
