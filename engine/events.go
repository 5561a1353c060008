package engine

import (
	"context"
	"sync"
	"time"

	"github.com/holdfast/holdfast"
)

// Events returns up to limit events of shopID's feed with a cursor above
// after, in cursor order (limit 0 means EventsLimitDefault, at most
// EventsLimitMax). An empty answer means nothing new yet: ask again (the
// HTTP feed long-polls). Events first sequences the events that committed
// before the call (waiting for a sequencer at work), so the feed is never
// older than the call. Safe for concurrent use.
//
// An after cursor whose next events were purged (Config.EventRetention)
// answers a *holdfast.CursorExpiredError with the oldest cursor still
// available, never a page that silently skips them.
func (c *Client[TTx]) Events(ctx context.Context, shopID int64, after int64, limit int) ([]holdfast.Event, error) {
	limit, err := validateEventsArgs(shopID, after, limit)
	if err != nil {
		return nil, err
	}
	if _, err := c.sequence(ctx, true); err != nil {
		return nil, err
	}
	var zero TTx
	var out []holdfast.Event
	var last int64
	err = c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		out, last, err = c.d.ReadEvents(ctx, tx, shopID, after, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	viewEvents(out) // companion keys as their key's pre-orders (preorder.go)
	return checkEventsPage(after, out, last)
}

// SequenceEvents assigns per-shop cursors to the events that committed
// since the last pass, in bounded batches, and derives key events (sold
// out, back in stock) for the keys they touched (the driver's passes, one
// sequencer at a time across every process). The sequencer worker runs it
// after every sweeper tick and at least every Config.SweepInterval; Events
// runs it before reading.
func (c *Client[TTx]) SequenceEvents(ctx context.Context) (int, error) {
	return c.sequence(ctx, false)
}

// sequencer coalesces a process's sequencing: one caller at a time runs
// it (waiting in memory, holding no connection), and a caller that started
// before a run that has since begun and finished needs no run of its own:
// that run saw every event committed before the caller came.
type sequencer struct {
	mu      sync.Mutex
	lastRun time.Time // when the last completed run began
}

// sequence runs the driver's sequencing passes, coalesced; reading: on
// behalf of a read (Events), on the request path's connections.
func (c *Client[TTx]) sequence(ctx context.Context, reading bool) (int, error) {
	called := time.Now()
	sq := &c.sequencer
	sq.mu.Lock()
	defer sq.mu.Unlock()
	if sq.lastRun.After(called) {
		return 0, nil
	}
	began := time.Now()
	n, err := c.d.SequencePasses(ctx, reading)
	if err == nil {
		sq.lastRun = began
	}
	return n, err
}
