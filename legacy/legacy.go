// Package legacy is the contract of an existing hold system — the store a
// team's reservations live in before holdfast — so that the shadow layer
// (package shadow) can run it side by side with holdfast, compare the two on
// real traffic and move the source of truth shop by shop.
//
// Package legacy/redis implements Store as the legacy Redis design. A team
// with another legacy store implements Store over it: see Store.
package legacy

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
)

// Store is an existing hold system. Implementations must be safe for
// concurrent use and answer with holdfast's nouns and typed errors, so that
// the shadow layer can compare both systems' outcomes:
//
//   - Reserve holds every line of p for p.CheckoutID for p.TTL (the layer
//     always fills TTL), or nothing: *holdfast.InsufficientStockError when a
//     line is short. A retry of a held checkout with the same lines answers
//     the hold with Replayed set; other lines are ErrIdempotencyConflict; an
//     ended checkout answers ErrHoldClaimed, ErrHoldReleased or
//     ErrHoldExpired.
//   - Claim permanently deducts a held checkout's lines from the legacy's
//     ledger. A repeated claim answers the claimed hold with Replayed set.
//     ErrHoldReleased, ErrHoldExpired, ErrNotFound otherwise.
//   - Release gives a held checkout's units back. Repeated: Replayed.
//     ErrHoldClaimed when claimed, ErrNotFound when unknown.
//   - Extend moves a held hold's expiry to now + ttl, or ErrLifetimeExceeded
//     past its deadline. A store without extension returns
//     ErrUnsupported, which the shadow layer reports and never compares.
//   - Hold reads a checkout's hold or outcome, ErrNotFound when unknown.
//   - Count reads one key's counts (see Count).
//   - ChangeStock applies a stock change to the legacy's ledger and its
//     hold counters.
//   - ExpireOnce ends holds past their TTL and gives their units back,
//     returning how many; a store whose expiry is automatic returns 0.
//
// An error that is none of these is treated as an unknown outcome
// (holdfast.ErrUnavailable class) and never as a refusal.
type Store interface {
	Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error)
	Claim(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error)
	Release(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error)
	Extend(ctx context.Context, shopID int64, checkoutID uuid.UUID, ttl time.Duration) (*holdfast.Hold, error)
	Hold(ctx context.Context, shopID int64, checkoutID uuid.UUID) (*holdfast.Hold, error)
	Count(ctx context.Context, k holdfast.Key) (Count, error)
	ChangeStock(ctx context.Context, ch holdfast.StockChange) (Count, error)
	ExpireOnce(ctx context.Context) (int, error)
}

// Count is one key as the legacy store accounts it.
type Count struct {
	holdfast.Key
	// OnHand is the legacy ledger's stock: changed by claims and stock
	// changes.
	OnHand int64 `json:"on_hand"`
	// Reservable is what the legacy would still hold for a new checkout
	// (the Redis design's counter).
	Reservable int64 `json:"reservable"`
}

// ErrUnsupported is returned by a Store for an operation it does not have
// (e.g. Extend). The shadow layer answers it from holdfast when holdfast is
// written, and never counts it as a disagreement.
var ErrUnsupported = errUnsupported{}

type errUnsupported struct{}

func (errUnsupported) Error() string { return "legacy: operation not supported by this store" }
