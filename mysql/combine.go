package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// CombineBatchMax bounds the reservations one combined transaction serves
// (engine.CombineBatchMax).
const CombineBatchMax = engine.CombineBatchMax

// CombineRunnersMax bounds the combined transactions in flight at once from
// one client (engine.CombineRunnersMax).
const CombineRunnersMax = engine.CombineRunnersMax

// batchKey reports whether k is a batch key as this client last saw its
// strategy, or by the client's default for a key it has not seen. A stale
// or missing cache entry is safe: a key that is not (or no longer) a batch
// key has no units in its counter row, the batch sends it to the plain
// path, and that path caches its strategy.
func (c *Client) batchKey(k holdfast.Key) bool {
	if ki, ok := c.keys.Load(k); ok {
		return strategyOf(ki.(keyInfo).strategy).combines
	}
	return strategyOf(c.cfg.Strategy).combines
}

type checkoutKey struct {
	shop int64
	id   string // hex, upper case as HEX() returns it
}

func checkoutOf(r *reservation) checkoutKey {
	return checkoutKey{r.Shop, strings.ToUpper(hex.EncodeToString(r.Checkout[:]))}
}

// combinedAttempt is one combined transaction of the client's own for reqs
// (hfdriver.Reserver.CombinedAttempt); the engine schedules the batches
// (engine/combine.go).
func (c *Client) combinedAttempt(ctx context.Context, reqs []*reservation) ([]*holdfast.Hold, error) {
	var created map[checkoutKey]*holdfast.Hold
	err := c.once(ctx, nil, holdfast.RouteReserve, func(tx *sql.Tx) error {
		var err error
		created, err = c.batchOnce(ctx, tx, reqs)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*holdfast.Hold, len(reqs))
	for i, r := range reqs {
		out[i] = created[checkoutOf(r)]
	}
	return out, nil
}

// errBatchDuplicate: a checkout of the batch got a hold from elsewhere
// between the check and the insert; the whole batch goes the plain way.
var errBatchDuplicate = errors.New("holdfast/mysql: batch checkout created concurrently")

func (c *Client) batchOnce(ctx context.Context, tx *sql.Tx, reqs []*reservation) (out map[checkoutKey]*holdfast.Hold, err error) {
	const route = holdfast.RouteReserve
	keyOf := func(r *reservation) holdfast.Key {
		return holdfast.Key{ShopID: r.Shop, ItemID: r.Lines[0].ItemID, LocationID: r.Lines[0].LocationID}
	}
	keys := make([]holdfast.Key, 0, 4)
	for _, r := range reqs {
		if k := keyOf(r); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b holdfast.Key) int {
		switch {
		case a.ShopID != b.ShopID:
			return int(min(max(a.ShopID-b.ShopID, -1), 1))
		case a.ItemID != b.ItemID:
			return int(min(max(a.ItemID-b.ItemID, -1), 1))
		}
		return int(min(max(a.LocationID-b.LocationID, -1), 1))
	})
	// The batch's in-flight marks before anything else (inflight.go).
	if err := c.markInFlightBatch(ctx, tx, reqs); err != nil {
		return nil, err
	}
	units := make(map[holdfast.Key]int, len(keys))
	for _, k := range keys {
		var n int
		err := tx.QueryRowContext(ctx, c.q(ctx, route, "batch_lock"), k.ShopID, k.ItemID, k.LocationID).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		units[k] = n
	}
	all := make([][2]any, len(reqs))
	for i, r := range reqs {
		all[i] = [2]any{r.Shop, hex.EncodeToString(r.Checkout[:])}
	}
	raw, _ := json.Marshal(all)
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "batch_existing"), string(raw), string(raw))
	if err != nil {
		return nil, err
	}
	exists := map[checkoutKey]bool{}
	for rows.Next() {
		var ck checkoutKey
		if err := rows.Scan(&ck.id, &ck.shop); err != nil {
			rows.Close()
			return nil, err
		}
		exists[ck] = true
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	var granted [][4]any
	var grantedIDs [][2]any
	taken := map[holdfast.Key]int{}
	for _, r := range reqs {
		ck, k := checkoutOf(r), keyOf(r)
		q := r.Lines[0].Quantity
		if exists[ck] || units[k] < q {
			continue
		}
		units[k] -= q
		taken[k] += q
		granted = append(granted, [4]any{r.Shop, ck.id, string(r.LinesRaw), r.TTL.Microseconds()})
		grantedIDs = append(grantedIDs, [2]any{r.Shop, ck.id})
	}
	if len(granted) == 0 {
		return nil, nil
	}
	defer func() {
		if err == nil {
			c.combinedGrants.Add(int64(len(out)))
		}
	}()
	rawGranted, _ := json.Marshal(granted)
	rawIDs, _ := json.Marshal(grantedIDs)
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "batch_holds"), c.cfg.HoldLifetimeMax.Microseconds(), string(rawGranted), c.now())
	if isDup(err) {
		return nil, errBatchDuplicate
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "batch_lines"), string(rawIDs)); err != nil {
		return nil, err
	}
	for _, k := range keys {
		q := taken[k]
		if q == 0 {
			continue
		}
		res, err := tx.ExecContext(ctx, c.q(ctx, route, "take_counter"), q, k.ShopID, k.ItemID, k.LocationID, q)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return nil, errors.Join(err, errors.New("holdfast/mysql: combined take found the locked counter short"))
		}
	}
	rows, err = tx.QueryContext(ctx, c.q(ctx, route, "batch_times"), string(rawIDs))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[checkoutKey]*reservation, len(reqs))
	for _, r := range reqs {
		byID[checkoutOf(r)] = r
	}
	out = make(map[checkoutKey]*holdfast.Hold, len(granted))
	for rows.Next() {
		var ck checkoutKey
		h := &holdfast.Hold{Status: holdfast.StatusHeld, Claimable: true, Revision: 1}
		if err := rows.Scan(&ck.id, &ck.shop, &h.CreatedAt, &h.ExpiresAt, &h.Deadline); err != nil {
			return nil, err
		}
		r := byID[ck]
		if r == nil {
			continue
		}
		h.CheckoutID, h.ShopID, h.Lines = r.Checkout, r.Shop, r.Lines
		out[ck] = h
	}
	return out, rows.Err()
}
