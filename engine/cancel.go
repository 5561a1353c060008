package engine

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/holdfast/holdfast"
)

// CancelHolds ends a shop's held holds as an admin (see
// holdfast.CancelParams): it lists the shop's held holds newest first
// (Holds' read, filtered by item and location), keeps those of the buyer
// and older than the age asked, and releases each in a transaction of its
// own, which also writes its audit entry (action hold.cancel, with the
// reason). Each is a release: its units go back, its events and webhooks
// are a release's, and the waitlist is served as after a release.
//
// It is bounded (at most p.Limit holds ended, holdfast.CancelScanMax
// examined) and says whether held holds remain unexamined (More, Next).
// Safe to retry: a hold that ended meanwhile — claimed, released, expired,
// cancelled by an earlier call — is skipped, not an error, and the answer
// lists only what this call ended. A rejected call is an
// *holdfast.ArgumentError and changes nothing.
//
// It has no …Tx twin: each hold is ended in a transaction of its own (a
// bulk cancel in one caller's transaction would hold every key's lock it
// touches until the caller commits).
func (c *Client[TTx]) CancelHolds(ctx context.Context, p holdfast.CancelParams) (*holdfast.CancelResult, error) {
	p, err := p.Validate()
	if err != nil {
		return nil, err
	}
	q, cur, err := holdfast.HoldQuery{ShopID: p.ShopID, ItemID: p.ItemID, LocationID: p.LocationID,
		Status: holdfast.StatusHeld, After: p.After, Limit: holdfast.ListLimitMax}.Validate()
	if err != nil {
		return nil, err
	}
	var buyer []byte
	if p.BuyerID != "" {
		secret, err := c.buyerSecret(ctx)
		if err != nil {
			return nil, err
		}
		buyer = holdfast.BuyerHash(secret, p.ShopID, p.BuyerID)
	}
	var zero TTx
	var cutoff time.Time
	if p.OlderThan > 0 {
		var now time.Time
		if err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
			var err error
			now, err = c.d.ReadNow(ctx, tx)
			return err
		}); err != nil {
			return nil, err
		}
		cutoff = now.Add(-p.OlderThan)
	}
	detail := cancelDetail{Reason: p.Reason, ItemID: p.ItemID, LocationID: p.LocationID, Buyer: p.BuyerID != ""}
	if p.OlderThan > 0 {
		detail.OlderThan = p.OlderThan.String()
	}
	res := &holdfast.CancelResult{Cancelled: []holdfast.CancelledHold{}, Units: []holdfast.KeyUnits{}}
	units := map[holdfast.Key]int{}
	var order []holdfast.Key
	defer func() {
		for _, k := range order {
			res.Units = append(res.Units, holdfast.KeyUnits{Key: k, Units: units[k]})
		}
		if len(res.Cancelled) > 0 {
			c.kickWaitlist() // units came back: waiters first
		}
	}()
	scanned := 0
	for {
		var holds []holdfast.Hold
		err := c.run(ctx, zero, true, holdfast.RouteRead, true, func(tx TTx) error {
			var err error
			holds, err = c.d.ListHolds(ctx, tx, q, cur)
			return err
		})
		if err != nil {
			return res, err
		}
		more := len(holds) > q.Limit
		if more {
			holds = holds[:q.Limit]
		}
		for i, h := range holds {
			scanned++
			at := holdfast.HoldCursor{CreatedAt: h.CreatedAt, CheckoutID: h.CheckoutID, ShopID: q.ShopID,
				ItemID: q.ItemID, LocationID: q.LocationID, Status: q.Status}
			cur = &at
			if !cutoff.IsZero() && !h.CreatedAt.Before(cutoff) {
				continue
			}
			ended, err := c.cancelOne(ctx, h, buyer, detail)
			if err != nil {
				return res, err
			}
			if ended != nil {
				res.Cancelled = append(res.Cancelled, holdfast.CancelledHold{CheckoutID: ended.CheckoutID, Lines: ended.Lines})
				for _, k := range KeysOf(p.ShopID, ended.Lines) {
					if _, ok := units[k]; !ok {
						order = append(order, k)
					}
				}
				for _, l := range ended.Lines {
					units[holdfast.Key{ShopID: p.ShopID, ItemID: l.ItemID, LocationID: l.LocationID}] += l.Quantity
				}
			}
			rest := i < len(holds)-1 || more
			if rest && (len(res.Cancelled) == p.Limit || scanned >= holdfast.CancelScanMax) {
				res.More, res.Next = true, cur.Encode()
				return res, nil
			}
		}
		if !more {
			return res, nil
		}
	}
}

// cancelDetail is a hold.cancel audit entry's detail: the reason, the
// call's filters (the buyer only as whether one was named: the raw id is
// never stored), and the hold's checkout and lines.
type cancelDetail struct {
	Reason     string          `json:"reason"`
	CheckoutID string          `json:"checkout_id"`
	Lines      []holdfast.Line `json:"lines"`
	ItemID     int64           `json:"item_id,omitempty"`
	LocationID int64           `json:"location_id,omitempty"`
	Buyer      bool            `json:"buyer,omitempty"`
	OlderThan  string          `json:"older_than,omitempty"`
}

// cancelOne releases h, listed as held, in a transaction of its own that
// writes its audit entry, when it is still held (not lapsed) and of buyer
// (nil: any). It answers the released hold, or nil when it did not end it
// (ended meanwhile, lapsed, or another buyer's).
func (c *Client[TTx]) cancelOne(ctx context.Context, h holdfast.Hold, buyer []byte, d cancelDetail) (*holdfast.Hold, error) {
	start := time.Now()
	var zero TTx
	var ended *holdfast.Hold
	err := c.run(ctx, zero, true, holdfast.RouteRelease, true, func(tx TTx) error {
		ended = nil
		now, err := c.d.ReadHold(ctx, tx, holdfast.RouteRelease, h.ShopID, h.CheckoutID)
		if errors.Is(err, holdfast.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if now.Status != holdfast.StatusHeld {
			return nil // ended meanwhile, or lapsed: the sweeper's
		}
		if buyer != nil {
			got, err := c.d.BuyerOf(ctx, tx, holdfast.RouteRelease, h.ShopID, h.CheckoutID)
			if err != nil && !errors.Is(err, holdfast.ErrNotFound) {
				return err
			}
			if !bytes.Equal(got, buyer) {
				return nil
			}
		}
		r, err := c.d.ReleaseAttempt(ctx, tx, true, h.ShopID, h.CheckoutID)
		switch {
		case errors.Is(err, holdfast.ErrNotFound), errors.Is(err, holdfast.ErrHoldClaimed):
			return nil
		case err != nil:
			return err
		case r.Replayed || r.Status != holdfast.StatusReleased:
			return nil
		}
		d.CheckoutID, d.Lines = r.CheckoutID.String(), r.Lines
		if err := c.audit(ctx, tx, h.ShopID, holdfast.AuditHoldCancel, d); err != nil {
			return err
		}
		ended = r
		return nil
	})
	c.observe(holdfast.RouteRelease, start, err, ended)
	return ended, err
}
