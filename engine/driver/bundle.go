package driver

import (
	"context"

	"github.com/holdfast/holdfast"
)

// Bundler is the attempts behind bundles (engine/bundle.go). SetBundle is
// one transaction in which the engine decides: LockBundles, then
// BundleFacts under that lock, then (when the engine accepts the
// definition) WriteBundle.
type Bundler[TTx comparable] interface {
	// LockBundles takes the shop's bundle lock row (creating it), so that
	// the shop's definitions are checked and written one at a time.
	LockBundles(ctx context.Context, tx TTx, shop int64) error
	// BundleFacts reads, in tx, what the engine needs to accept b.
	BundleFacts(ctx context.Context, tx TTx, b holdfast.Bundle) (BundleFacts, error)
	// WriteBundle replaces b's components with b's.
	WriteBundle(ctx context.Context, tx TTx, b holdfast.Bundle) error
	// GetBundle reads a bundle's components in the order given; none when
	// the item is not a bundle.
	GetBundle(ctx context.Context, tx TTx, shop, item int64) ([]holdfast.BundleComponent, error)
	// DeleteBundle removes a bundle's components, answering whether it
	// had any.
	DeleteBundle(ctx context.Context, tx TTx, shop, item int64) (bool, error)
	// ReadBundles reads every bundle of a shop (at most
	// holdfast.BundlesPerShopMax) in one statement: on the pool, outside
	// any transaction, when own (the engine's cache of definitions); in
	// the caller's tx when not, so a …Tx call never takes a second
	// connection.
	ReadBundles(ctx context.Context, tx TTx, own bool, shop int64) (map[int64][]holdfast.BundleComponent, error)
}

// BundleFacts is what SetBundle's transaction reads about a definition.
type BundleFacts struct {
	// Stocked: the bundle's item id has a key of its own (a level row).
	Stocked bool
	// ComponentOf is a bundle that has the bundle's item id as a component
	// (0: none).
	ComponentOf int64
	// Nested is a component of the definition that is itself a bundle (0:
	// none).
	Nested int64
	// Others is how many bundles the shop has besides this one.
	Others int
}
