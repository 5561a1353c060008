package postgres

import (
	"github.com/holdfast/holdfast"
	"time"
)

// BuyerLockKey is buyerLockKey, for tests that hold a buyer's lock to stall
// a reservation after its hold row (inflight_test.go).
var BuyerLockKey = buyerLockKey

// KeyHash is keyHash: a key's advisory lock (lock_key.sql), for tests
// that hold it to force an interleaving (lockorder_test.go).
var KeyHash = keyHash

// HoldSoldOutHint makes c read k as recently sold out for the next hour,
// so a test reaches the sold-out hint without racing its one-second window.
func HoldSoldOutHint(c *Client, k holdfast.Key) { c.soldOutAt.Store(k, time.Now().Add(time.Hour)) }
