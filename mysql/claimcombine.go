package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// errClaimBatchShort: a key of a combined claim batch lacks the stock for
// the batch's lines (over-committed) or has no level. The batch rolls
// back and each claim is served on its own, where only the claims that
// cause it fail.
var errClaimBatchShort = errors.New("holdfast/mysql: a key of the claim batch lacks the stock for its lines")

// combinedClaimAttempt is one combined claim transaction
// (hfdriver.ClaimCombiner), the engine scheduling the batches
// (engine/claimcombine.go): the batch's held holds are locked, skipping
// those another transaction has (claim_batch_pick.sql), claimed
// (claim_batch_end.sql) and their lines removed (sweep_lines.sql); each
// key's level row is then written once by the sum of its lines, in key
// order (claim_batch_deduct.sql), and every line gets its ledger entry
// (claim_batch_ledger.sql). Six statements and a commit for up to
// engine.ClaimBatchMax claims, where a claim on its own takes five and a
// commit with the key's level row held throughout: a hot key's claims
// then pass its level row one commit at a time (docs/PERFORMANCE.md, "The
// flash-sale demo's claims"). A hold with pre-ordered lines stays held
// (the plain path records them owed), as does a checkout twice in claims.
func (c *Client) combinedClaimAttempt(ctx context.Context, claims []hfdriver.ClaimRequest) ([]*holdfast.Hold, error) {
	const route = holdfast.RouteClaim
	type ref struct {
		shop int64
		id   uuid.UUID
	}
	order := make([]int, len(claims))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(claims[a].Shop, claims[b].Shop), slices.Compare(claims[a].Checkout[:], claims[b].Checkout[:]))
	})
	want := make([][2]any, len(order))
	at := make(map[ref]int, len(claims))
	for j, i := range order {
		want[j] = [2]any{claims[i].Shop, hex.EncodeToString(claims[i].Checkout[:])}
		if _, dup := at[ref{claims[i].Shop, claims[i].Checkout}]; !dup {
			at[ref{claims[i].Shop, claims[i].Checkout}] = i
		}
	}
	raw, _ := json.Marshal(want)

	var out []*holdfast.Hold
	err := c.once(ctx, nil, route, func(tx *sql.Tx) error {
		out = make([]*holdfast.Hold, len(claims))
		rows, err := tx.QueryContext(ctx, c.q(ctx, route, "claim_batch_pick"), c.now(), string(raw))
		if err != nil {
			return err
		}
		var picked [][2]any
		var ended time.Time
		for rows.Next() {
			h := &holdfast.Hold{Status: holdfast.StatusClaimed}
			var id, cart []byte
			if err := rows.Scan(&h.ShopID, &id, &cart, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &h.Revision, &ended); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal(cart, &h.Lines); err != nil {
				rows.Close()
				return err
			}
			copy(h.CheckoutID[:], id)
			i, ok := at[ref{h.ShopID, h.CheckoutID}]
			if !ok || out[i] != nil || slices.ContainsFunc(h.Lines, func(l holdfast.Line) bool { return l.LocationID < 0 }) {
				continue
			}
			slices.SortFunc(h.Lines, holdfast.CompareLines)
			out[i] = h
			picked = append(picked, [2]any{h.ShopID, hex.EncodeToString(id)})
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(picked) == 0 {
			return nil
		}
		ended = ended.UTC()
		praw, _ := json.Marshal(picked)
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "claim_batch_end"), string(praw), ended)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(picked)) {
			return fmt.Errorf("holdfast/mysql: claimed %d of the %d locked held holds", n, len(picked))
		}
		if _, err := tx.ExecContext(ctx, c.q(ctx, route, "sweep_lines"), string(praw)); err != nil {
			return err
		}

		// The lines in the claims' order, each claim's in key order, as
		// each claim on its own would deduct them; the keys' totals in
		// key order.
		var lines [][5]any
		totals := map[holdfast.Key]int{}
		for _, h := range out {
			if h == nil {
				continue
			}
			h.EndedAt = &ended
			for _, l := range h.Lines {
				lines = append(lines, [5]any{h.ShopID, l.ItemID, l.LocationID, l.Quantity, h.CheckoutID.String()})
				totals[holdfast.Key{ShopID: h.ShopID, ItemID: l.ItemID, LocationID: l.LocationID}] += l.Quantity
			}
		}
		keys := make([]holdfast.Key, 0, len(totals))
		for k := range totals {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, holdfast.Key.Compare)
		ks := make([][4]any, len(keys))
		for i, k := range keys {
			ks[i] = [4]any{k.ShopID, k.ItemID, k.LocationID, totals[k]}
		}
		kraw, _ := json.Marshal(ks)
		res, err = tx.ExecContext(ctx, c.q(ctx, route, "claim_batch_deduct"), string(kraw), c.now())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(keys)) {
			return errClaimBatchShort
		}
		lraw, _ := json.Marshal(lines)
		res, err = tx.ExecContext(ctx, c.q(ctx, route, "claim_batch_ledger"), "claim", c.now(), string(lraw))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(lines)) {
			return fmt.Errorf("holdfast/mysql: %d ledger entries for the batch's %d claimed lines", n, len(lines))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
