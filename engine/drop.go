package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Fair drops (issue #30 item 7; holdfast.Drop). The mechanism reuses two
// things the engine already has:
//   - an open drop keeps its key's buffer empty (the drivers' refill and
//     sellable reads treat it as a key with waiters), so every reservation
//     on it comes back short, whatever path it took, and only then does
//     the engine look for a drop (dropIfShort): no cost on other keys;
//   - the waitlist: an entrant is a waiting checkout whose wait has no
//     queued line until the draw, so Hold, Release (cancel), retries and
//     the HTTP 202 answer are the waitlist's; the draw queues the
//     entrants' carts in lottery order and the waitlist server grants
//     them in that order, as stock allows.

// SetDrop sets a key's drop: its window opens at p.StartsAt (zero: now)
// and lasts p.Window; a fresh secret seed is drawn and only its SHA-256 is
// published (Drop.Commitment). Replacing a drop that has not started, or
// one already drawn, is allowed (a new seed, no entries); one whose window
// has begun and is not drawn is ErrDropStarted. Bad input is an
// *ArgumentError and changes nothing.
func (c *Client[TTx]) SetDrop(ctx context.Context, p holdfast.DropParams) (*holdfast.Drop, error) {
	if err := p.Validate(c.clockNow()); err != nil {
		return nil, err
	}
	seed := make([]byte, holdfast.DropSeedBytes)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	var zero TTx
	var out *holdfast.Drop
	err := c.run(ctx, zero, true, holdfast.RouteAdjust, true, func(tx TTx) error {
		cur, err := c.d.LockDrop(ctx, tx, p.Key)
		switch {
		case errors.Is(err, holdfast.ErrNotFound):
		case err != nil:
			return err
		case cur.State == holdfast.DropOpen && !cur.Now.Before(cur.StartsAt):
			return holdfast.ErrDropStarted
		}
		if p.StartsAt.IsZero() {
			now, err := c.d.ReadNow(ctx, tx)
			if err != nil {
				return err
			}
			p.StartsAt = now
		}
		if err := c.d.PutDrop(ctx, tx, p, seed); err != nil {
			return err
		}
		if err := c.audit(ctx, tx, p.ShopID, holdfast.AuditDropSet, map[string]any{
			"item_id": p.ItemID, "location_id": p.LocationID, "starts_at": p.StartsAt.UTC(),
			"window_seconds": p.Window.Seconds(), "commitment": holdfast.DropCommitment(seed),
		}); err != nil {
			return err
		}
		out, err = c.d.ReadDrop(ctx, tx, p.Key)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.dropHint.Delete(p.Key)
	c.kickWaitlist() // its draw is due some day: the worker's probe sees it
	return out, nil
}

// Drop reads a key's drop: its window, commitment and entry count; once
// drawn also the seed and every entrant in lottery order, which
// holdfast.VerifyDrop checks. ErrNotFound when the key has none.
func (c *Client[TTx]) Drop(ctx context.Context, k holdfast.Key) (*holdfast.Drop, error) {
	if err := holdfast.ValidateKey(k); err != nil {
		return nil, err
	}
	var zero TTx
	var out *holdfast.Drop
	err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
		var err error
		out, err = c.d.ReadDrop(ctx, tx, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DropHintTTL is how long a short answer trusts that a key it found
// without an open drop still has none, so a sold-out key costs its short
// answers one drop probe per DropHintTTL, not one each. A drop set on this
// client clears it at once; one set on another client to open at once is
// seen here within DropHintTTL (meanwhile its key answers short: nothing is
// taken, the buffer is empty). Set StartsAt ahead to leave no such gap.
const DropHintTTL = time.Second

// clockNow is the client's clock (Config.Now, else the machine's): what
// SetDrop's bounds are judged by before any database is asked.
func (c *Client[TTx]) clockNow() time.Time {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return time.Now()
}

// dropIfShort is Reserve's drop step, run when a reservation came back
// short: when a short key has an open drop, the drop answers — before its
// window ErrDropNotOpen, in it the checkout enters the lottery
// (ErrWaitlisted), after it the drop is drawn here (if the worker has not
// yet) and the reservation runs once more, first come first served behind
// the entrants. Otherwise the short answer stands.
func (c *Client[TTx]) dropIfShort(ctx context.Context, p holdfast.ReserveParams, h *holdfast.Hold, err error) (*holdfast.Hold, error) {
	var ise *holdfast.InsufficientStockError
	if !errors.As(err, &ise) {
		return h, err
	}
	keys := make([]holdfast.Key, 0, len(ise.Lines))
	for _, s := range ise.Lines {
		keys = append(keys, holdfast.Key{ShopID: p.ShopID, ItemID: s.ItemID, LocationID: s.LocationID})
	}
	slices.SortFunc(keys, holdfast.Key.Compare)
	keys = slices.Compact(keys)
	now := time.Now()
	if !slices.ContainsFunc(keys, func(k holdfast.Key) bool {
		at, ok := c.dropHint.Load(k)
		return !ok || now.Sub(at.(time.Time)) > DropHintTTL
	}) {
		return h, err // every short key was seen without a drop just now
	}
	var zero TTx
	open, rerr := c.d.OpenDrops(ctx, p.ShopID, keys)
	if rerr != nil {
		return h, err // a failed look keeps the short answer: nothing was taken
	}
	for _, k := range keys {
		if !slices.Contains(open, k) {
			c.dropHint.Store(k, now)
		}
	}
	if len(open) == 0 {
		return h, err
	}
	req, verr := ValidateReserve(c.cfg, p)
	if verr != nil {
		return nil, verr
	}
	if req.BuyerHash, verr = c.buyerHash(ctx, req); verr != nil {
		return nil, verr
	}
	const route = holdfast.RouteReserve
	start := time.Now()
	var out *holdfast.Hold
	var answer error
	drawn := false
	runErr := c.run(ctx, zero, true, route, true, func(tx TTx) error {
		out, answer, drawn = nil, nil, false
		// The drops' rows first (lock order), then the checkout's own
		// answer: a retry of an entry, or a hold, answers as before.
		var rows []*driver.DropRow
		for _, k := range open {
			d, err := c.d.LockDrop(ctx, tx, k)
			if errors.Is(err, holdfast.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if d.State == holdfast.DropOpen {
				rows = append(rows, d)
			}
		}
		prev, err := c.d.ReserveExisting(ctx, tx, req)
		if !errors.Is(err, holdfast.ErrNotFound) {
			out = prev
			return err
		}
		var in *driver.DropRow
		for _, d := range rows {
			switch {
			case d.Now.Before(d.StartsAt):
				answer = &holdfast.DropNotOpenError{Key: d.Key, StartsAt: d.StartsAt}
				return driver.ErrRollback
			case !d.Now.Before(d.EndsAt()):
				if _, err := c.draw(ctx, tx, d); err != nil {
					return err
				}
				drawn = true
			case in != nil:
				answer = holdfast.NewArgumentError("lines", "a cart may enter one drop at a time, not items %d and %d", in.ItemID, d.ItemID)
				return driver.ErrRollback
			default:
				in = d
			}
		}
		if in == nil {
			if !drawn {
				answer = ise // drawn meanwhile by another: the short answer stands
			}
			return nil
		}
		if drawn {
			// Its other drops were drawn in this transaction: keep them and
			// enter the open one in the next attempt.
			return nil
		}
		if req.Buyer == "" {
			answer = holdfast.NewArgumentError("buyer_id", "is required to enter the drop of item %d (one entry per buyer)", in.ItemID)
			return driver.ErrRollback
		}
		if in.Entries >= holdfast.DropEntrantsMax {
			answer = holdfast.ErrDropFull
			return driver.ErrRollback
		}
		wait := p.Wait
		if wait == 0 {
			wait = min(holdfast.DropWaitDefault, holdfast.WaitMaxOf(c.cfg))
		}
		if err := c.d.EnterDrop(ctx, tx, in.Key, req, ise.Lines, wait, in.EndsAt().Add(wait)); err != nil {
			return err
		}
		answer = c.d.WaiterAnswer(ctx, tx, route, req.Shop, req.Checkout)
		if !errors.Is(answer, holdfast.ErrWaitlisted) {
			return answer // a failed read: roll the entry back
		}
		return nil
	})
	if runErr == nil && drawn {
		c.kickWaitlist()
		if answer == nil {
			// Drawn here: the key is first come first served again, behind
			// the entrants. Once more, as the reservation it was.
			var zero TTx
			h, err := c.reserve(ctx, zero, true, p)
			return c.dropIfShort(ctx, p, h, err)
		}
	}
	if runErr != nil || out != nil {
		c.observe(route, start, runErr, out)
		return out, runErr
	}
	c.observe(route, start, answer, nil)
	if errors.Is(answer, holdfast.ErrInsufficientStock) {
		return h, err // the original short answer: the waitlist step may take it
	}
	return nil, answer
}

// draw draws d (locked, open, its window over) in tx: the entrants in
// lottery order onto the waitlist, the drop marked drawn, the audit entry
// written. It answers how many entrants it queued.
func (c *Client[TTx]) draw(ctx context.Context, tx TTx, d *driver.DropRow) (int, error) {
	entries, err := c.d.DropEntries(ctx, tx, d.Key)
	if err != nil {
		return 0, err
	}
	tickets := make([]string, len(entries))
	for i, e := range entries {
		tickets[i] = e.Ticket
	}
	order := holdfast.DropOrder(d.SeedRaw, tickets)
	// Every standing entrant's keys, locked in key order before any enqueue.
	var lines []holdfast.Line
	for _, e := range entries {
		if e.Waiting {
			for _, l := range e.Lines {
				lines = append(lines, holdfast.Line{ItemID: l.ItemID, LocationID: l.LocationID, Quantity: 1})
			}
		}
	}
	slices.SortFunc(lines, func(a, b holdfast.Line) int {
		return holdfast.Key{ItemID: a.ItemID, LocationID: a.LocationID}.Compare(holdfast.Key{ItemID: b.ItemID, LocationID: b.LocationID})
	})
	lines = slices.Compact(lines)
	if len(lines) > 0 {
		raw, err := json.Marshal(lines)
		if err != nil {
			return 0, err
		}
		if _, err := c.d.WaitKeys(ctx, tx, &driver.Reservation{Shop: d.ShopID, Lines: lines, LinesRaw: raw}); err != nil {
			return 0, err
		}
	}
	ranked := make([]uuid.UUID, len(order))
	placed := 0
	type entrant struct {
		Rank     int       `json:"rank"`
		Checkout uuid.UUID `json:"checkout_id"`
		Ticket   string    `json:"ticket"`
		Queued   bool      `json:"queued"`
	}
	list := make([]entrant, len(order))
	for pos, i := range order {
		e := entries[i]
		ranked[pos] = e.Checkout
		list[pos] = entrant{Rank: pos + 1, Checkout: e.Checkout, Ticket: e.Ticket}
		if !e.Waiting {
			continue // released or expired before the draw
		}
		ok, err := c.d.Unwait(ctx, tx, d.ShopID, e.Checkout)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		// The entrant's buyer goes with its wait: the grant records it on
		// the hold (the buyer's retry replays it; it counts towards the
		// buyer's limits).
		buyer, err := hex.DecodeString(e.Ticket)
		if err != nil {
			return 0, err
		}
		req := &driver.Reservation{Shop: d.ShopID, Checkout: e.Checkout, Lines: e.Lines, LinesRaw: e.LinesRaw, TTL: e.TTL, BuyerHash: buyer}
		if err := c.d.Enqueue(ctx, tx, req, e.Lines, e.Short, e.Wait); err != nil {
			return 0, err
		}
		list[pos].Queued = true
		placed++
	}
	if err := c.d.MarkDrawn(ctx, tx, d.Key, ranked); err != nil {
		return 0, err
	}
	return placed, c.audit(ctx, tx, d.ShopID, holdfast.AuditDropDraw, map[string]any{
		"item_id": d.ItemID, "location_id": d.LocationID, "seed": hex.EncodeToString(d.SeedRaw),
		"commitment": d.Commitment, "entrants": len(entries), "queued": placed, "order": list,
	})
}

// drawDue draws the drops whose window ended (at most
// holdfast.DropDueMax), each in a maintenance transaction of its own; the
// drop row's lock and state make each draw happen once across every
// process. It answers how many it drew.
func (c *Client[TTx]) drawDue(ctx context.Context) (int, error) {
	var due []holdfast.Key
	if err := c.maintain(ctx, holdfast.RouteReplenish, func(tx TTx) error {
		var err error
		due, err = c.d.DueDrops(ctx, tx, holdfast.DropDueMax)
		return err
	}); err != nil {
		return 0, err
	}
	n := 0
	for _, k := range due {
		drew := false
		if err := c.maintain(ctx, holdfast.RouteReplenish, func(tx TTx) error {
			drew = false
			d, err := c.d.LockDrop(ctx, tx, k)
			if errors.Is(err, holdfast.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if d.State != holdfast.DropOpen || d.Now.Before(d.EndsAt()) {
				return nil // drawn meanwhile, or replaced
			}
			_, err = c.draw(ctx, tx, d)
			drew = err == nil
			return err
		}); errors.Is(err, holdfast.ErrShopMoved) {
			continue // fenced for a move: the pod that serves it draws it
		} else if err != nil {
			return n, err
		}
		if drew {
			n++
		}
	}
	return n, nil
}
