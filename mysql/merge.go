package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
)

func (d *engineDriver) MergeAttempt(ctx context.Context, tx *sql.Tx, own bool, shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	return d.c().mergeOnce(ctx, tx, own, shop, from, into)
}

// mergeOnce is one merge attempt (driver.Merger.MergeAttempt). Lock order
// (doc.go, decision 3): the two hold rows in checkout order (as a claim,
// release or late claim starts at its hold row), then into's buyer_locks
// rows (as a late claim takes them after its hold row), then
// reserved_quantities lines; no key lock row, buffer or level: the units do
// not move.
func (c *Client) mergeOnce(ctx context.Context, tx *sql.Tx, own bool, shop int64, from, into uuid.UUID) (*holdfast.Hold, error) {
	const route = holdfast.OpMerge
	order := []uuid.UUID{from, into}
	if bytes.Compare(into[:], from[:]) < 0 {
		order = []uuid.UUID{into, from}
	}
	holds := make(map[uuid.UUID]*holdfast.Hold, 2)
	for _, id := range order {
		h, err := c.readHold(ctx, tx, route, "hold_lock", shop, id)
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
			if dst, err = c.readHold(ctx, tx, route, "hold_get", shop, into); err != nil {
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
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "merge_source"), string(plan.SourceLines), c.now(), shop, from[:]); err != nil {
		return nil, err
	}
	if plan.Create {
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "merge_create"), into[:], string(raw), c.now(), shop, from[:], shop, into[:])
		if isDup(err) || (err == nil && rowsAffected(res) == 0) {
			return nil, driver.ErrIntoWaits // waiting, or created meanwhile: the engine asks the waitlist
		}
		if err != nil {
			return nil, err
		}
	} else {
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "merge_into"), string(raw), shop, into[:]); err != nil {
			return nil, err
		}
		// into's buyer limits on the summed lines, from already ended (so
		// not counted twice when both carts are the buyer's).
		var hash []byte
		if err := tx.QueryRowContext(ctx, c.q(ctx, route, "buyer_of"), shop, into[:], shop, into[:]).Scan(&hash); err != nil {
			return nil, err
		}
		if hash != nil {
			over, err := c.enforceBuyer(ctx, tx, own, route, shop, into, plan.Lines, hash)
			if err != nil {
				return nil, err
			}
			if over != nil {
				return nil, over
			}
		}
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "merge_lines"), into[:], into[:], shop, from[:]); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "merge_lines_delete"), shop, from[:]); err != nil {
		return nil, err
	}
	return c.readHold(ctx, tx, route, "hold_get", shop, into)
}
