package engine

import (
	"context"
	"slices"
	"sync"

	"github.com/holdfast/holdfast"
)

// waitCursor is where a client's next pass of the waitlist server starts
// its window of keys with waiters (round robin).
type waitCursor struct {
	mu sync.Mutex
	k  holdfast.Key
}

// ServeWaitlist runs one pass of the waitlist server in one transaction.
// It ends waits that ran out (at most WaitlistScanMax; event
// waitlist.expired), then serves the queues of the next WaitlistKeysMax
// keys with waiters (round robin over every shop's keys): each key's queue
// on its own, head of line, so waiters that cannot be served hold up only
// the waiters behind them on their keys — never another key or shop.
// Waits on those keys whose cart asks more of a key than its available
// stock end at once (ErrWaitUnservable; event waitlist.unservable); the
// front waiters are granted, each cart whole or not at all, as ordinary
// holds with their TTL (event waitlist.held), at most WaitlistGrantsMax.
// It returns how many waits it ended. When nobody waits it costs one
// statement. Replicas may run it at once: one pass runs at a time. Ended
// waits are purged with hold outcomes (PurgeOnce) after
// Config.OutcomeRetention.
func (c *Client[TTx]) ServeWaitlist(ctx context.Context) (int, error) {
	n, _, err := c.serveWaitlist(ctx)
	return n, err
}

// WaitlistStep is one step of the waitlist worker: a pass, and whether
// another should follow at once. A function, not a method: the drivers'
// clients embed Client and must not offer it.
func WaitlistStep[TTx comparable](c *Client[TTx], ctx context.Context) (bool, error) {
	_, more, err := c.serveWaitlist(ctx)
	return more, err
}

// serveWaitlist is ServeWaitlist; more reports that a pass should follow
// at once (a full window, batch or grant bound, or front waiters whose keys
// this pass had not locked).
func (c *Client[TTx]) serveWaitlist(ctx context.Context) (n int, more bool, err error) {
	const route = holdfast.RouteReplenish
	waiting, err := c.d.AnyWaiting(ctx)
	if err != nil {
		return 0, false, c.core.MapErr(route, err, true, true)
	}
	if !waiting {
		return 0, false, nil
	}
	// Drops whose window ended are drawn first: their entrants join the
	// queues this pass serves (drop.go).
	if _, err := c.drawDue(ctx); err != nil {
		return 0, false, err
	}
	cur := &c.waitCursor
	cur.mu.Lock()
	from := cur.k
	cur.mu.Unlock()
	var next holdfast.Key
	var granted []*holdfast.Hold
	err = c.core.Run(ctx, route, true, true, nil, func(int) error {
		return c.d.MaintenanceAttempt(ctx, route, func(tx TTx) error {
			var err error
			n, more, granted, next, err = c.servePass(ctx, tx, from)
			return err
		})
	})
	if err != nil {
		return 0, false, err
	}
	cur.mu.Lock()
	cur.k = next
	cur.mu.Unlock()
	if len(granted) > 0 {
		for _, h := range granted {
			c.noteHold(h)
		}
	}
	return n, more || n >= holdfast.WaitlistGrantsMax, nil
}

// servePass is one attempt of a pass in tx, its window from the cursor
// from: how many waits it ended, whether a pass should follow, the holds
// it granted, and where the next pass starts.
func (c *Client[TTx]) servePass(ctx context.Context, tx TTx, from holdfast.Key) (n int, more bool, granted []*holdfast.Hold, next holdfast.Key, err error) {
	if err := c.d.WaitServeLock(ctx, tx); err != nil {
		return 0, false, nil, next, err
	}
	expired, err := c.d.ExpireWaits(ctx, tx)
	if err != nil {
		return 0, false, nil, next, err
	}
	n += expired
	more = expired >= holdfast.WaitlistScanMax
	window, err := c.d.WaitWindow(ctx, tx, from, holdfast.WaitlistKeysMax)
	if err != nil {
		return 0, false, nil, next, err
	}
	if len(window) == holdfast.WaitlistKeysMax {
		next, more = window[len(window)-1], true
	} else if from != (holdfast.Key{}) {
		// Round the corner: the keys before the cursor.
		rest, err := c.d.WaitWindow(ctx, tx, holdfast.Key{}, holdfast.WaitlistKeysMax-len(window))
		if err != nil {
			return 0, false, nil, next, err
		}
		for _, k := range rest {
			if holdfast.Key.Compare(k, from) <= 0 {
				window = append(window, k)
			}
		}
	}
	if len(window) == 0 {
		return n, more, nil, next, nil
	}
	// The keys' locks first, in key order — the window's and those of its
	// front waiters' carts — then the queues again: an enqueue on a locked
	// key that committed meanwhile is in them, and none with an earlier
	// seq can still be in flight (it would hold the lock).
	heads, err := c.d.WaitHeads(ctx, tx, window)
	if err != nil {
		return 0, false, nil, next, err
	}
	keys := slices.Clone(window)
	for _, w := range heads {
		for _, l := range w.Lines {
			keys = append(keys, holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID})
		}
	}
	slices.SortFunc(keys, holdfast.Key.Compare)
	keys = slices.Compact(keys)
	// tried: the keys whose locks this pass took, or found nothing to
	// lock of (a key without a row has nothing to protect: a cart asking
	// for it ends as unservable); locked: those it took.
	locked := make(map[holdfast.Key]bool, len(keys))
	tried := make(map[holdfast.Key]bool, len(keys))
	for _, k := range keys {
		ok, err := c.d.LockWaitKey(ctx, tx, k)
		if err != nil {
			return 0, false, nil, next, err
		}
		locked[k], tried[k] = ok, true
	}
	ended, err := c.d.EndUnservableWaits(ctx, tx, window, locked)
	if err != nil {
		return 0, false, nil, next, err
	}
	n += ended
	// Grant the front waiters; a grant may bring the next waiter of a key
	// to the front, so again until a round grants nothing.
	for progress := true; progress && n < holdfast.WaitlistGrantsMax; {
		progress = false
		if heads, err = c.d.WaitHeads(ctx, tx, window); err != nil {
			return 0, false, nil, next, err
		}
		for _, w := range heads {
			if n >= holdfast.WaitlistGrantsMax {
				more = true
				break
			}
			if slices.ContainsFunc(w.Lines, func(l holdfast.Line) bool {
				return !tried[holdfast.Key{ShopID: w.Shop, ItemID: l.ItemID, LocationID: l.LocationID}]
			}) {
				// A key of its cart this pass did not lock: the next pass
				// locks it first.
				more, next = true, from
				continue
			}
			h, done, err := c.d.GrantWait(ctx, tx, w)
			if err != nil {
				return 0, false, nil, next, err
			}
			if h != nil {
				granted = append(granted, h)
			}
			if done {
				n++
				progress = true
			}
		}
	}
	// Keys whose queue emptied get their buffers back; the others get
	// nothing.
	if err := c.d.RefillWaitKeys(ctx, tx, keys, locked); err != nil {
		return 0, false, nil, next, err
	}
	return n, more, granted, next, nil
}
