package pods

import (
	"sync"
	"time"
)

// cache is the router's bounded view of the shard map: a placement read
// from the map is trusted for the TTL, then read again; when the map cannot
// be read, an entry no older than the stale bound is used instead (see
// Config.StaleMax for why that is safe). Unassigned shops are not cached:
// a shop another router just assigned must be found at once (a claim of
// its first hold would otherwise be routed to a pod that never saw it).
// Safe for concurrent use.
type cache struct {
	mu      sync.RWMutex
	entries map[int64]cacheEntry
	max     int
}

type cacheEntry struct {
	pl Placement
	at time.Time // when it was read from the map
}

func newCache(max int) *cache {
	return &cache{entries: make(map[int64]cacheEntry), max: max}
}

// get answers the shop's entry and whether there is one.
func (c *cache) get(shop int64) (cacheEntry, bool) {
	c.mu.RLock()
	e, ok := c.entries[shop]
	c.mu.RUnlock()
	return e, ok
}

// put stores a placement read at at. A full cache drops an arbitrary
// entry first (Go's map order): the bound matters, the choice does not —
// a dropped shop costs one map read.
func (c *cache) put(pl Placement, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[pl.ShopID]; ok && old.pl.Epoch > pl.Epoch {
		// A slower read of an older placement must not undo a newer one.
		return
	}
	if _, ok := c.entries[pl.ShopID]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[pl.ShopID] = cacheEntry{pl: pl, at: at}
}

func (c *cache) drop(shop int64) {
	c.mu.Lock()
	delete(c.entries, shop)
	c.mu.Unlock()
}

// dropReadBefore drops the shop's entry when it was read before t.
func (c *cache) dropReadBefore(shop int64, t time.Time) {
	c.mu.RLock()
	e, ok := c.entries[shop]
	c.mu.RUnlock()
	if !ok || !e.at.Before(t) {
		return
	}
	c.mu.Lock()
	if e, ok := c.entries[shop]; ok && e.at.Before(t) {
		delete(c.entries, shop)
	}
	c.mu.Unlock()
}

func (c *cache) clear() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
