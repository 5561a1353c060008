package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// MergeCheckouts moves the held lines of checkout from into checkout into
// (same shop), in one transaction, and answers into's hold. The units never
// move: each of from's reserved lines becomes (or is added to) into's line
// of the same key, so no stock is released or taken again and the
// invariant is untouched.
//
//   - into held: its lines become the sum of both carts per (item,
//     location); it keeps its own expiry and deadline; its revision goes up
//     by one (a merge is an edit of into). into's buyer limits are checked
//     on the summed quantities: over a limit the answer is a
//     *BuyerLimitError and nothing changes.
//   - into absent: it is created holding from's lines, with from's expiry,
//     deadline and buyer.
//   - into ended (claimed, released, expired — a lapsed one included): a
//     *MergeIntoError, nothing changes.
//
// from ends released with Hold.MergedInto = into: Hold, Claim, Release and
// Extend of from answer as for any released hold (a repeated Release is a
// replay; Claim and Extend are ErrHoldReleased). The events are
// hold.released for from (with Event.MergedInto) and hold.edited
// (hold.created when it was absent) for into.
//
// A retry of the same merge answers into's hold with Replayed set. A
// source that is claimed, released (or merged elsewhere), expired or past
// its expiry answers ErrHoldClaimed, ErrHoldReleased or ErrHoldExpired;
// an unknown source is ErrNotFound; from == into is an *ArgumentError
// (field "into").
func (c *Client[TTx]) MergeCheckouts(ctx context.Context, shopID int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	var zero TTx
	return c.merge(ctx, zero, true, shopID, from, into)
}

// MergeCheckoutsTx is MergeCheckouts inside the caller's transaction (in a
// savepoint), so the application's cart merge and the holds' commit
// together.
func (c *Client[TTx]) MergeCheckoutsTx(ctx context.Context, tx TTx, shopID int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	if err := callerTx(tx); err != nil {
		return nil, err
	}
	return c.merge(ctx, tx, false, shopID, from, into)
}

func (c *Client[TTx]) merge(ctx context.Context, tx TTx, own bool, shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	start := time.Now()
	err := holdfast.ValidateCheckout(shop, from)
	if err == nil {
		err = ValidateMerge(from, into)
	}
	if err != nil {
		c.observe(holdfast.OpMerge, start, err, nil)
		return nil, err
	}
	var h *holdfast.Hold
	err = c.run(ctx, tx, own, holdfast.OpMerge, true, func(tx TTx) error {
		var err error
		if err := c.refusePreordered(ctx, tx, shop, from, into); err != nil {
			return err // preorder.go
		}
		h, err = c.d.MergeAttempt(ctx, tx, own, shop, from, into)
		if errors.Is(err, driver.ErrIntoWaits) {
			return c.intoWaits(ctx, tx, shop, into)
		}
		return err
	})
	c.observe(holdfast.OpMerge, start, err, h)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// intoWaits answers a merge whose destination has no hold but the create
// inserted none: a waiting destination is a *MergeIntoError wrapping
// ErrCheckoutWaiting (or how its wait ended); one that got a hold meanwhile
// is looked at again (driver.ErrRetry).
func (c *Client[TTx]) intoWaits(ctx context.Context, tx TTx, shop int64, into uuid.UUID) error {
	answer := c.d.WaiterAnswer(ctx, tx, holdfast.OpMerge, shop, into)
	var waiting *holdfast.WaitlistedError
	switch {
	case answer == nil, errors.Is(answer, holdfast.ErrNotFound), errors.Is(answer, driver.ErrGranted):
		return driver.ErrRetry
	case errors.As(answer, &waiting):
		return &holdfast.MergeIntoError{Into: into, Err: holdfast.ErrCheckoutWaiting}
	case errors.Is(answer, holdfast.ErrWaitExpired), errors.Is(answer, holdfast.ErrWaitCancelled), errors.Is(answer, holdfast.ErrWaitUnservable):
		return &holdfast.MergeIntoError{Into: into, Err: answer}
	}
	return answer
}

// ValidateMerge checks a merge's destination.
func ValidateMerge(from, into uuid.UUID) error {
	switch {
	case into == uuid.Nil:
		return holdfast.NewArgumentError("into", "must be a non-nil UUID")
	case into == from:
		return holdfast.NewArgumentError("into", "must differ from the checkout merged")
	}
	return nil
}

// MergePlan is what a merge attempt does, decided by PlanMerge from the two
// holds as the attempt locked them.
type MergePlan struct {
	// Replay: from was already merged into into; answer into's hold,
	// Replayed, and change nothing.
	Replay bool
	// Create: into has no hold; create it with from's expiry, deadline and
	// buyer.
	Create bool
	// Lines are into's lines after the merge, summed per key, in line
	// order.
	Lines []holdfast.Line
	// SourceLines is from's lines record once merged (its lines, each
	// with "merged_into"), what the driver writes to from's hold row.
	SourceLines []byte
}

// PlanMerge decides a merge attempt, once for every driver: src is from's
// hold and dst into's (nil: none), both read under their row locks (a
// lapsed hold reads as StatusExpired with Claimable set). It answers the
// typed errors MergeCheckouts documents.
func PlanMerge(cfg holdfast.Config, src, dst *holdfast.Hold, into uuid.UUID) (MergePlan, error) {
	if src.Status == holdfast.StatusReleased && src.MergedInto != nil && *src.MergedInto == into {
		return MergePlan{Replay: true}, nil
	}
	if err := statusErr(src.Status); err != nil {
		return MergePlan{}, err
	}
	if dst != nil {
		if err := statusErr(dst.Status); err != nil {
			return MergePlan{}, &holdfast.MergeIntoError{Into: into, Err: err}
		}
	}
	p := MergePlan{Create: dst == nil, Lines: SumLines(src.Lines, dst)}
	if len(p.Lines) > cfg.LinesPerCartMax {
		return MergePlan{}, holdfast.NewArgumentError("into", "the merged cart would have %d lines (at most %d)", len(p.Lines), cfg.LinesPerCartMax)
	}
	for _, l := range p.Lines {
		if l.Quantity > cfg.QuantityMax {
			return MergePlan{}, holdfast.NewArgumentError("into", "the merged line of item %d at location %d would hold %d (at most %d)", l.ItemID, l.LocationID, l.Quantity, cfg.QuantityMax)
		}
	}
	type mergedLine struct {
		holdfast.Line
		MergedInto uuid.UUID `json:"merged_into"`
	}
	marked := make([]mergedLine, len(src.Lines))
	for i, l := range src.Lines {
		marked[i] = mergedLine{Line: l, MergedInto: into}
	}
	raw, err := json.Marshal(marked)
	if err != nil {
		return MergePlan{}, err
	}
	p.SourceLines = raw
	return p, nil
}

// statusErr is the answer for merging from (or into) a hold in status s;
// nil for a hold still held and not past its expiry.
func statusErr(s holdfast.Status) error {
	switch s {
	case holdfast.StatusHeld:
		return nil
	case holdfast.StatusClaimed:
		return holdfast.ErrHoldClaimed
	case holdfast.StatusReleased:
		return holdfast.ErrHoldReleased
	default:
		return holdfast.ErrHoldExpired
	}
}

// SumLines is src's lines added to dst's (nil: none), per (item, location),
// in line order.
func SumLines(src []holdfast.Line, dst *holdfast.Hold) []holdfast.Line {
	var out []holdfast.Line
	if dst != nil {
		out = append(out, dst.Lines...)
	}
	for _, l := range src {
		i := slices.IndexFunc(out, func(o holdfast.Line) bool { return o.ItemID == l.ItemID && o.LocationID == l.LocationID })
		if i < 0 {
			out = append(out, holdfast.Line{ItemID: l.ItemID, LocationID: l.LocationID, Quantity: l.Quantity})
			continue
		}
		out[i].Quantity += l.Quantity
	}
	slices.SortFunc(out, holdfast.CompareLines)
	return out
}

// MergedInto reads the destination a merged hold's lines record names
// (PlanMerge's SourceLines); nil when it names none. Drivers call it on
// the raw lines of every hold they read, so Hold.MergedInto says where a
// merged checkout's lines went.
func MergedInto(raw []byte) *uuid.UUID {
	if len(raw) < 2 || !json.Valid(raw) {
		return nil
	}
	var lines []struct {
		MergedInto *uuid.UUID `json:"merged_into"`
	}
	if json.Unmarshal(raw, &lines) != nil || len(lines) == 0 {
		return nil
	}
	return lines[0].MergedInto
}
