package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// buyerKey caches the deployment's buyer secret once read.
type buyerKey struct {
	mu     sync.Mutex
	secret []byte
}

// buyerSecretAsks bounds the attempts of one read of the buyer secret: an
// attempt that lost the race to store it asks again.
const buyerSecretAsks = 3

// buyerSecret returns Config.BuyerSecret, else the secret stored in the
// database (created by the first engine that needs it). It reads the
// database once per client, in a transaction of the driver's own: the
// client loads it at start-up (LoadBuyerSecret), and a reservation that
// needs it calls this before its transaction begins, never inside one (the
// pool may have no second connection to give: issue 24 item 3). Safe for
// concurrent use.
func (c *Client[TTx]) buyerSecret(ctx context.Context) ([]byte, error) {
	if len(c.cfg.BuyerSecret) > 0 {
		return c.cfg.BuyerSecret, nil
	}
	c.buyer.mu.Lock()
	defer c.buyer.mu.Unlock()
	if c.buyer.secret != nil {
		return c.buyer.secret, nil
	}
	fresh := holdfast.NewBuyerSecret()
	var zero TTx
	for range buyerSecretAsks {
		var got []byte
		err := c.run(ctx, zero, true, holdfast.RouteReserve, true, func(tx TTx) error {
			var err error
			got, err = c.d.BuyerSecretAttempt(ctx, tx, fresh)
			return err
		})
		if err != nil {
			return nil, err
		}
		if got != nil {
			c.buyer.secret = got
			return got, nil
		}
	}
	return nil, fmt.Errorf("%w: the buyer secret could not be read", holdfast.ErrUnavailable)
}

// buyerHash is the hash of r's buyer, read before r's transaction begins
// (buyerSecret); nil without a buyer.
func (c *Client[TTx]) buyerHash(ctx context.Context, r *driver.Reservation) ([]byte, error) {
	if r.Buyer == "" {
		return nil, nil
	}
	secret, err := c.buyerSecret(ctx)
	if err != nil {
		return nil, err
	}
	return holdfast.BuyerHash(secret, r.Shop, r.Buyer), nil
}

// secretLoadTimeout bounds LoadBuyerSecret's read.
const secretLoadTimeout = 5 * time.Second

// LoadBuyerSecret reads c's buyer secret at start-up (the drivers' New
// call it once the client is set up), so that a …Tx call, which runs on
// its caller's connection, never needs a second one for it. Best effort: a
// database that cannot be asked now (a standby, say) is asked again by the
// first reservation with a buyer id, before its transaction. A function,
// not a method: the drivers' clients embed Client and must not offer it.
func LoadBuyerSecret[TTx comparable](c *Client[TTx]) {
	if len(c.cfg.BuyerSecret) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), secretLoadTimeout)
	defer cancel()
	if _, err := c.buyerSecret(ctx); err != nil {
		c.cfg.Logger.Warn("holdfast: the buyer secret could not be read at start-up; the first reservation with a buyer id reads it", "err", err)
	}
}

// OverBuyerLimit is the verdict of a buyer limit check on one limited
// item: the *holdfast.BuyerLimitError when requested more units would take
// the buyer past n's limit, else nil. The drivers count (n) inside their
// attempts, in their lock order; the verdict is this one.
func OverBuyerLimit(n driver.BuyerCount, requested int) *holdfast.BuyerLimitError {
	if n.Held+requested > n.Limit {
		return &holdfast.BuyerLimitError{ItemID: n.ItemID, Limit: n.Limit, Held: n.Held, Requested: requested}
	}
	return nil
}

// OverBuyerLimits is the verdict of a buyer limit check on a cart: the
// first of counts (one per limited item, in item order, as a driver's
// attempt counted them under the buyer's locks) that the cart's
// quantities (items, qtys: holdfast.BuyerItemQuantities of its lines)
// would take past its limit, else nil.
func OverBuyerLimits(counts []driver.BuyerCount, items []int64, qtys []int) *holdfast.BuyerLimitError {
	for _, n := range counts {
		q := 0
		for i, it := range items {
			if it == n.ItemID {
				q = qtys[i]
			}
		}
		if over := OverBuyerLimit(n, q); over != nil {
			return over
		}
	}
	return nil
}
