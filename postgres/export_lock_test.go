package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	"github.com/holdfast/holdfast/engine/driver"
)

// BuyerLockKey is buyerLockKey, for tests that hold a buyer's lock to stall
// a reservation after its hold row (inflight_test.go).
var BuyerLockKey = buyerLockKey

// KeyHash is keyHash: a key's advisory lock (lock_key.sql), for tests
// that hold it to force an interleaving (lockorder_test.go).
var KeyHash = keyHash

// HoldSoldOutHint makes c read k as recently sold out for the next hour,
// so a test reaches the sold-out hint without racing its one-second window.
func HoldSoldOutHint(c *Client, k holdfast.Key) {
	engine.HintSoldOut(c.engineClient, k, time.Now().Add(time.Hour))
}

// Statement is the text c sends for the named statement on route (with its
// sqlcommenter comment, no caller tag), for tests that recognise it in
// pg_stat_activity, where PostgreSQL keeps only its first
// track_activity_query_size - 1 bytes (lockorder_test.go).
func Statement(c *Client, route, name string) string {
	return c.q(context.Background(), route, name)
}

// DriverOf is c as the engine's driver (driver.go), for the driver-level
// suite (driver_test.go).
func DriverOf(c *Client) driver.Driver[pgx.Tx] { return (*engineDriver)(c) }
