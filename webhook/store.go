package webhook

import (
	"context"
	"time"
)

// Store is where the registry and the deliverer keep endpoints and dead
// letters: one per database, each in its own SQL, living under that
// database's folder (postgres/pgstore.Webhooks, migration 008;
// mysql/mysqlstore.Webhooks, migration 009). Implementations must be safe
// for concurrent use; the registry validates every argument before it
// calls one.
type Store interface {
	// InsertEndpoint registers an endpoint starting after cursor after
	// (nil: past every event of the shop committed before it, the feed's
	// head plus the events not yet sequenced); ErrTooMany past max per
	// shop. secret is already sealed.
	InsertEndpoint(ctx context.Context, shop int64, url, secret string, after *int64, max int) (*Endpoint, error)
	// ListEndpoints returns a shop's endpoints with their dead letters
	// counted, without secrets.
	ListEndpoints(ctx context.Context, shop int64) ([]Endpoint, error)
	// DeleteEndpoint removes one with its dead letters and answers it as
	// it was, its dead letters counted; ErrNotFound.
	DeleteEndpoint(ctx context.Context, shop, id int64) (*Endpoint, error)
	// DeadLetters returns a shop's dead letters, newest first, at most
	// limit.
	DeadLetters(ctx context.Context, shop int64, limit int) ([]DeadLetter, error)
	// Lease leases up to n due endpoints for leaseFor, each with a fresh
	// lease token.
	Lease(ctx context.Context, leaseFor time.Duration, n int) ([]Leased, error)
	// The writes below take effect only while token is the endpoint's
	// lease token (the lease it was given by is the endpoint's latest):
	// else they change nothing and answer ErrLeaseLost. An endpoint is the
	// shop's and the id's: ids repeat across shops on a pod a shop moved
	// to.
	//
	// Unlease gives an endpoint's lease back.
	Unlease(ctx context.Context, shop, id, token int64) error
	// Delivered moves an endpoint past cursor and clears its failure.
	Delivered(ctx context.Context, shop, id, token, cursor int64) error
	// Failed records a failed attempt, waits wait before the next, and
	// reports whether horizon has passed since the event's first failure.
	// The endpoint stays leased (the deliverer may record a dead letter
	// next) until Unlease.
	Failed(ctx context.Context, shop, id, token int64, attempts int, msg string, wait, horizon time.Duration) (past bool, err error)
	// DeadLetter keeps the event as a dead letter and moves past it.
	DeadLetter(ctx context.Context, id, shop, token, cursor int64, event []byte, attempts int, msg string) error
}

// Leased is an endpoint leased to one deliverer: where it is, its sealed
// secret, the last event it received and its failure so far.
type Leased struct {
	ID, Shop, Cursor int64
	// Token is this lease's: the writes of the deliverer holding it
	// (Store.Delivered, Failed, DeadLetter, Unlease) are fenced by it.
	Token       int64
	URL, Secret string
	Attempts    int
	// FirstFailed is when the event being retried first failed; nil when
	// none is.
	FirstFailed *time.Time
}

// Normalize puts an endpoint read from a store in the registry's shape:
// times in UTC, and NextAt only for a delivery being retried (an idle
// endpoint's next_at is only its turn in the lease order).
func (ep *Endpoint) Normalize() {
	ep.CreatedAt = ep.CreatedAt.UTC()
	if ep.NextAt != nil && ep.Attempts > 0 {
		t := ep.NextAt.UTC()
		ep.NextAt = &t
	} else {
		ep.NextAt = nil
	}
}
