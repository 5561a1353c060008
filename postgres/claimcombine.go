package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
	"github.com/jackc/pgx/v5"
)

// combinedClaimAttempt is one combined claim transaction
// (driver.ClaimCombiner) in two round trips: BEGIN, its bounds and the
// holds' claim (claim_batch_holds.sql) in one pipeline; then every claimed
// line's deduction (claim_batch_deduct.sql) and COMMIT in another. A key's
// inventory_levels row is thus locked once per batch, for one statement
// and the commit, where claims on their own each held it through a round
// trip and their own commit, one after another (docs/PERFORMANCE.md,
// "The flash-sale demo's claims").
func (c *Client) combinedClaimAttempt(ctx context.Context, claims []driver.ClaimRequest) ([]*holdfast.Hold, error) {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// Release destroys the connection unless it is idle and healthy, so a
	// failure anywhere below never leaks an open transaction.
	defer conn.Release()

	shops, ids := make([]int64, len(claims)), make([]string, len(claims))
	at := make(map[checkoutKey]int, len(claims))
	for i, r := range claims {
		shops[i], ids[i] = r.Shop, r.Checkout.String()
		at[checkoutKey{r.Shop, r.Checkout}] = i
	}
	b := &pgx.Batch{}
	b.Queue(c.comment(ctx, holdfast.RouteClaim) + "BEGIN ISOLATION LEVEL READ COMMITTED")
	b.Queue(c.q(ctx, holdfast.RouteClaim, "set_local"), c.combineLockWait, c.setLocal[1], c.setLocal[2])
	b.Queue(c.q(ctx, holdfast.RouteClaim, "claim_batch_holds"), shops, ids, c.now())
	out := make([]*holdfast.Hold, len(claims))
	n := 0
	err = func() error {
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h := &holdfast.Hold{Status: holdfast.StatusClaimed}
			var raw []byte
			var ended time.Time
			if err := rows.Scan(&h.ShopID, &h.CheckoutID, &raw, &h.CreatedAt, &h.ExpiresAt, &h.Deadline, &ended, &h.Revision); err != nil {
				return err
			}
			h.EndedAt = &ended
			if err := json.Unmarshal(raw, &h.Lines); err != nil {
				return err
			}
			slices.SortFunc(h.Lines, holdfast.CompareLines)
			i, ok := at[checkoutKey{h.ShopID, h.CheckoutID}]
			if !ok || out[i] != nil {
				continue
			}
			out[i] = h
			n++
		}
		return rows.Err()
	}()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		_, err := conn.Exec(ctx, "ROLLBACK")
		return out, err
	}

	// The lines in the claims' order, each claim's in key order, as each
	// claim on its own would deduct them.
	var lShops, lItems, lLocs []int64
	var lQtys []int32
	var lRefs []string
	for i, h := range out {
		if h == nil {
			continue
		}
		for _, l := range h.Lines {
			lShops, lItems, lLocs = append(lShops, h.ShopID), append(lItems, l.ItemID), append(lLocs, l.LocationID)
			lQtys, lRefs = append(lQtys, int32(l.Quantity)), append(lRefs, ids[i])
		}
	}
	b = &pgx.Batch{}
	b.Queue(c.q(ctx, holdfast.RouteClaim, "claim_batch_deduct"), lShops, lItems, lLocs, lQtys, lRefs, "claim")
	b.Queue("COMMIT")
	// From here the COMMIT is on its way with the deduction: a failure to
	// read the answers may follow a commit (combine.go's batchOnce).
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, &driver.CommitError{Err: err}
	}
	tag, err := br.Exec()
	err = commitChecked(conn.Conn().PgConn(), err) // follow.go: a cancelled synchronous-replication wait
	if err != nil {
		return nil, &driver.CommitError{Err: err}
	}
	if tag.String() == "ROLLBACK" {
		return nil, pgx.ErrTxCommitRollback
	}
	return out, br.Close()
}
