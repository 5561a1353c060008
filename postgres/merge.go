package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
)

func (d *engineDriver) MergeAttempt(ctx context.Context, tx pgx.Tx, _ bool, shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	return d.c().mergeOnce(ctx, tx, shop, from, into)
}

// mergeOnce is one merge attempt (driver.Merger.MergeAttempt). Lock order
// (docs/DESIGN.md): the two hold rows in checkout order, then into's
// buyer locks (enforceBuyer), then reserved_quantities lines; no key lock,
// buffer or level: the units do not move.
func (c *Client) mergeOnce(ctx context.Context, tx pgx.Tx, shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	const route = holdfast.OpMerge
	order := []uuid.UUID{from, into}
	if bytes.Compare(into[:], from[:]) < 0 {
		order = []uuid.UUID{into, from}
	}
	holds := make(map[uuid.UUID]*holdfast.Hold, 2)
	for _, id := range order {
		h, err := c.lockHold(ctx, tx, route, shop, id)
		if errors.Is(err, holdfast.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		holds[id] = h
	}
	src, dst := holds[from], holds[into]
	if src == nil {
		return nil, holdfast.ErrNotFound
	}
	plan, err := engine.PlanMerge(c.cfg, src, dst, into)
	if err != nil {
		return nil, err
	}
	if plan.Replay {
		if dst == nil {
			// into was read absent before from's lock was granted: the
			// merge this call repeats may have created it meanwhile.
			if dst, err = c.getHold(ctx, tx, route, shop, into); err != nil {
				return nil, err // ErrNotFound: purged since, the merge is past retention
			}
		}
		dst.Replayed = true
		return dst, nil
	}
	raw, err := json.Marshal(plan.Lines)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, c.q(ctx, route, "merge_source"), from, shop, plan.SourceLines, c.now()); err != nil {
		return nil, err
	}
	if plan.Create {
		var got uuid.UUID
		err := tx.QueryRow(ctx, c.q(ctx, route, "merge_create"), into, shop, raw, from, c.now()).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, driver.ErrIntoWaits // waiting, or created meanwhile: the engine asks the waitlist
		}
		if err != nil {
			return nil, err
		}
	} else {
		if _, err := tx.Exec(ctx, c.q(ctx, route, "merge_into"), into, shop, raw); err != nil {
			return nil, err
		}
		// into's buyer limits on the summed lines, from already ended (so
		// not counted twice when both carts are the buyer's).
		var hash []byte
		if err := tx.QueryRow(ctx, c.q(ctx, route, "buyer_of"), shop, into).Scan(&hash); err != nil {
			return nil, err
		}
		if hash != nil {
			if err := c.enforceBuyer(ctx, tx, route, shop, into, plan.Lines, hash, false); err != nil {
				return nil, err
			}
		}
	}
	if _, err := tx.Exec(ctx, c.q(ctx, route, "merge_lines"), from, shop, into); err != nil {
		return nil, err
	}
	return c.getHold(ctx, tx, route, shop, into)
}
