package holdfast

import "fmt"

// ErrShopMoved: the database that answered does not serve the shop now —
// the shop is fenced for a move between pods, or was moved away (package
// pods; issue #28). Nothing was applied. It matches ErrUnavailable, so the
// HTTP layer answers 503 with Retry-After: retry with the same checkout id
// or change id. A pods router that gets it re-reads the shop's placement
// and, when the shop now lives on another pod, retries there once; it
// never counts it against the pod's health.
//
// The PostgreSQL engine returns it for a write refused by the placement
// guard of a shop move (migration 15; package pods, Move); MariaDB's
// engine does not yet (no move there).
var ErrShopMoved = fmt.Errorf("%w: the shop is being moved, or lives in another database", ErrUnavailable)
