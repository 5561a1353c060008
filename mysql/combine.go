package mysql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

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
// (engine/combine.go). A batch of deep keys only (OptimisticDepth, as this
// client's last batch of each saw it) runs optimistic first: it reads its
// counter rows without locking them and takes their units last, so that
// its rows are locked only from its take to its COMMIT and two batches of
// a key overlap (CombineOverlap). Should the take find a row short, the
// batch rolls back and runs once more with its rows locked first.
func (c *Client) combinedAttempt(ctx context.Context, reqs []*reservation) ([]*holdfast.Hold, error) {
	optimistic := true
	for _, r := range reqs {
		optimistic = optimistic && c.depth.Deep(keyOf(r))
	}
	var created map[checkoutKey]*holdfast.Hold
	attempt := func(tx *sql.Tx) error {
		var err error
		created, err = c.batchOnce(ctx, tx, reqs, optimistic)
		return err
	}
	if optimistic {
		c.combinedOptimistic.Add(1)
	}
	err := c.once(ctx, nil, holdfast.RouteReserve, attempt)
	if optimistic && errors.Is(err, errBatchShort) {
		c.combinedShort.Add(1)
		optimistic = false
		err = c.once(ctx, nil, holdfast.RouteReserve, attempt)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*holdfast.Hold, len(reqs))
	for i, r := range reqs {
		out[i] = created[checkoutOf(r)]
	}
	return out, nil
}

// OptimisticDepth is the units a batch key's counter row holds, at least,
// for its batches to run optimistic, two at once (a deep key: two batches
// of CombineBatchMax one-unit requests each still find it long enough).
// Below it one batch of the key runs at a time, its row locked first.
const OptimisticDepth = 2 * CombineBatchMax

func keyOf(r *reservation) holdfast.Key {
	return holdfast.Key{ShopID: r.Shop, ItemID: r.Lines[0].ItemID, LocationID: r.Lines[0].LocationID}
}

// errBatchDuplicate: a checkout of the batch got a hold from elsewhere
// between the check and the insert; the whole batch goes the plain way.
var errBatchDuplicate = errors.New("holdfast/mysql: batch checkout created concurrently")

// errBatchShort: an optimistic batch's take found a counter row short of
// what it granted from its unlocked read (another transaction took them
// since); it rolls back and runs again with its rows locked first.
var errBatchShort = errors.New("holdfast/mysql: optimistic batch found its counter short")

func (c *Client) batchOnce(ctx context.Context, tx *sql.Tx, reqs []*reservation, optimistic bool) (out map[checkoutKey]*holdfast.Hold, err error) {
	const route = holdfast.RouteReserve
	keys := make([]holdfast.Key, 0, 4)
	for _, r := range reqs {
		if k := keyOf(r); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, holdfast.Key.Compare)
	// The batch's in-flight marks before anything else (inflight.go).
	if err := c.markInFlightBatch(ctx, tx, reqs); err != nil {
		return nil, err
	}
	// The keys' units: locked in key order, or read unlocked by an
	// optimistic batch, which takes them last (take_counter, in key order).
	read := "batch_lock"
	if optimistic {
		read = "batch_units"
	}
	units := make(map[holdfast.Key]int, len(keys))
	for _, k := range keys {
		var n int
		err := tx.QueryRowContext(ctx, c.q(ctx, route, read), k.ShopID, k.ItemID, k.LocationID).Scan(&n)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		units[k] = n
		c.depth.Note(k, n)
	}
	// The batch's clock reading comes back with its existing checkouts:
	// the holds' times are computed from it here and in SQL alike
	// (microsecond arithmetic on both sides), so nothing is read back.
	ids := appendBatchIDs(nil, reqs)
	rows, err := tx.QueryContext(ctx, c.q(ctx, route, "batch_existing"), c.now(), ids, ids)
	if err != nil {
		return nil, err
	}
	exists := map[checkoutKey]bool{}
	var now sql.NullTime
	for rows.Next() {
		var id sql.NullString
		var shop sql.NullInt64
		var at sql.NullTime
		if err := rows.Scan(&id, &shop, &at); err != nil {
			rows.Close()
			return nil, err
		}
		if at.Valid {
			now = at
			continue
		}
		exists[checkoutKey{shop.Int64, id.String}] = true
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if !now.Valid {
		return nil, errors.New("holdfast/mysql: combined batch: no clock reading")
	}
	var grantedJSON []byte
	var shopGrants [][]grantEvent // the granted holds per shop, shops in first-grant order
	taken := map[holdfast.Key]int{}
	out = make(map[checkoutKey]*holdfast.Hold, len(reqs))
	lifetime := c.cfg.HoldLifetimeMax.Microseconds()
	for _, r := range reqs {
		ck, k := checkoutOf(r), keyOf(r)
		q := r.Lines[0].Quantity
		if exists[ck] || units[k] < q {
			continue
		}
		units[k] -= q
		taken[k] += q
		ttl := r.TTL.Microseconds()
		grantedJSON = appendGrant(grantedJSON, r, ck.id, ttl)
		h := &holdfast.Hold{
			CheckoutID: r.Checkout, ShopID: r.Shop, Lines: r.Lines,
			Status: holdfast.StatusHeld, Claimable: true, Revision: 1,
			CreatedAt: now.Time,
			ExpiresAt: now.Time.Add(time.Duration(ttl) * time.Microsecond),
			Deadline:  now.Time.Add(time.Duration(lifetime) * time.Microsecond),
		}
		out[ck] = h
		shopGrants = appendShopGrant(shopGrants, grantEvent{r, ck.id, h.ExpiresAt})
	}
	if len(out) == 0 {
		return nil, nil
	}
	defer func() {
		if err == nil {
			c.combinedGrants.Add(int64(len(out)))
		}
	}()
	granted := string(append(grantedJSON, ']'))
	_, err = tx.ExecContext(ctx, c.q(ctx, route, "batch_holds"), now.Time, lifetime, granted)
	if isDup(err) {
		return nil, errBatchDuplicate
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "batch_lines"), now.Time, granted); err != nil {
		return nil, err
	}
	// The holds' hold.created events: one row per shop (migration 23),
	// where the per-row trigger wrote one per hold.
	events := appendBatchEvents(nil, shopGrants)
	if _, err := tx.ExecContext(ctx, c.q(ctx, route, "batch_events"), now.Time, events); err != nil {
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
		if n, err := res.RowsAffected(); err == nil && n == 0 && optimistic {
			return nil, errBatchShort
		} else if err != nil || n != 1 {
			return nil, errors.Join(err, errors.New("holdfast/mysql: combined take found the locked counter short"))
		}
	}
	return out, nil
}

// appendBatchIDs returns reqs' (shop, checkout) pairs as the JSON text the
// batch statements read with JSON_TABLE: [[shop, "checkout hex"], …].
// Written by hand: encoding/json's reflection was a visible share of the
// batch's Go CPU.
func appendBatchIDs(b []byte, reqs []*reservation) string {
	b = append(b, '[')
	for i, r := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, r.Shop, 10)
		b = append(b, ',', '"')
		b = hex.AppendEncode(b, r.Checkout[:])
		b = append(b, '"', ']')
	}
	return string(append(b, ']'))
}

// appendGrant appends one granted reservation to b, a JSON array begun
// (and continued) by earlier calls: [shop, "checkout hex", item, location,
// quantity, ttl µs, "cart JSON text"], as batch_holds.sql and
// batch_lines.sql read it.
func appendGrant(b []byte, r *reservation, id string, ttl int64) []byte {
	if len(b) == 0 {
		b = append(b, '[')
	} else {
		b = append(b, ',')
	}
	l := r.Lines[0]
	b = append(b, '[')
	b = strconv.AppendInt(b, r.Shop, 10)
	b = append(b, ',', '"')
	b = append(b, id...)
	b = append(b, '"', ',')
	b = strconv.AppendInt(b, l.ItemID, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, l.LocationID, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(l.Quantity), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, ttl, 10)
	b = append(b, ',')
	cart, _ := json.Marshal(string(r.LinesRaw)) // a JSON string of the cart's JSON text
	b = append(b, cart...)
	return append(b, ']')
}

// grantEvent is what a granted hold's hold.created event carries.
type grantEvent struct {
	r       *reservation
	id      string // checkout hex
	expires time.Time
}

// appendShopGrant adds g to its shop's grants (a batch has few shops).
func appendShopGrant(shops [][]grantEvent, g grantEvent) [][]grantEvent {
	for i, gs := range shops {
		if gs[0].r.Shop == g.r.Shop {
			shops[i] = append(gs, g)
			return shops
		}
	}
	return append(shops, []grantEvent{g})
}

// eventTimeLayout is how a DATETIME(6) reads in JSON (migration 23's
// grouped elements; UTC).
const eventTimeLayout = "2006-01-02 15:04:05.000000"

// appendBatchEvents returns the batch's hold.created rows as the JSON text
// batch_events.sql reads, one object per shop: {"s": shop, "n": 1, "c":
// "checkout hex", "l": cart, "e": "expires_at"} for a shop's one hold (a
// row as the trigger writes it), {"s": shop, "n": n, "g": [["checkout
// hex", cart, "expires_at"], …]} for a group, in the batch's order (the
// cursor order). Built here, not grouped in SQL: MariaDB's GROUP BY with
// JSON_ARRAYAGG went through two on-disk temporary tables per batch.
func appendBatchEvents(b []byte, shops [][]grantEvent) string {
	b = append(b, '[')
	for i, gs := range shops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"s":`...)
		b = strconv.AppendInt(b, gs[0].r.Shop, 10)
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(len(gs)), 10)
		if len(gs) == 1 {
			g := gs[0]
			b = append(b, `,"c":"`...)
			b = append(b, g.id...)
			b = append(b, `","l":`...)
			b = append(b, g.r.LinesRaw...)
			b = append(b, `,"e":"`...)
			b = g.expires.UTC().AppendFormat(b, eventTimeLayout)
			b = append(b, `"}`...)
			continue
		}
		b = append(b, `,"g":[`...)
		for j, g := range gs {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `["`...)
			b = append(b, g.id...)
			b = append(b, `",`...)
			b = append(b, g.r.LinesRaw...)
			b = append(b, `,"`...)
			b = g.expires.UTC().AppendFormat(b, eventTimeLayout)
			b = append(b, `"]`...)
		}
		b = append(b, "]}"...)
	}
	return string(append(b, ']'))
}
