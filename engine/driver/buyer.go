package driver

import (
	"context"

	"github.com/google/uuid"
)

// Buyers is the attempt behind the buyer-id secret the engine keeps
// (engine/buyer.go). The buyer limits themselves are checked inside the
// reserve and late-claim attempts, in the driver's lock order; their
// verdict is the engine's (engine.OverBuyerLimit).
type Buyers[TTx comparable] interface {
	// BuyerSecretAttempt reads the deployment's buyer secret in tx,
	// storing fresh as it when there is none. It answers nil, nil when
	// another engine stored one concurrently and tx cannot see it (the
	// engine asks again).
	BuyerSecretAttempt(ctx context.Context, tx TTx, fresh []byte) ([]byte, error)
	// BuyerOf reads the buyer hash a checkout's hold was made for (nil:
	// none); holdfast.ErrNotFound when the checkout has no hold.
	BuyerOf(ctx context.Context, tx TTx, route string, shop int64, checkout uuid.UUID) ([]byte, error)
}

// BuyerCount is what one buyer has of one limited item, as a limit check
// counts it: units in held holds plus units claimed within the limit's
// window, besides the checkout being checked.
type BuyerCount struct {
	ItemID int64
	Limit  int
	Held   int
}
