package engine

import (
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// SoldOutHint is how long a key that answered sold out is checked with one
// lock-free read (driver.Reserver.SoldOut) before a reservation opens a
// transaction for it.
const SoldOutHint = time.Second

// recentlySoldOut reports whether a line of req is on a key that answered
// sold out within SoldOutHint.
func (c *Client[TTx]) recentlySoldOut(req *driver.Reservation) bool {
	now := time.Now()
	for _, l := range req.Lines {
		if at, ok := c.soldOutAt.Load(holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID}); ok && now.Sub(at.(time.Time)) < SoldOutHint {
			return true
		}
	}
	return false
}

// noteSoldOut remembers when the keys of short lines answered sold out.
func (c *Client[TTx]) noteSoldOut(shop int64, short []holdfast.Shortfall) {
	now := time.Now()
	for _, s := range short {
		c.soldOutAt.Store(holdfast.Key{ShopID: shop, ItemID: s.ItemID, LocationID: s.LocationID}, now)
	}
}

// noteSold forgets the sold-out hint of req's keys: they just sold.
func (c *Client[TTx]) noteSold(req *driver.Reservation) {
	for _, l := range req.Lines {
		c.soldOutAt.Delete(holdfast.Key{ShopID: req.Shop, ItemID: l.ItemID, LocationID: l.LocationID})
	}
}

// HintSoldOut records that k answered sold out at at on c, as a reservation
// that found it short does: for tests that reach the sold-out hint without
// racing its window (a function, not a method, so it is no driver
// Client's method).
func HintSoldOut[TTx comparable](c *Client[TTx], k holdfast.Key, at time.Time) {
	c.soldOutAt.Store(k, at)
}
