package mysql

import (
	"database/sql"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
	hfdriver "github.com/holdfast/holdfast/engine/driver"
)

// CombinedGrants is how many reservations c's combined batches granted.
func CombinedGrants(c *Client) int64 { return c.combinedGrants.Load() }

// CombinedOptimistic is how many combined batches of c ran optimistic.
func CombinedOptimistic(c *Client) int64 { return c.combinedOptimistic.Load() }

// CombinedShort is how many optimistic batches of c ran again locked.
func CombinedShort(c *Client) int64 { return c.combinedShort.Load() }

// HoldSoldOutHint makes c read k as recently sold out for the next hour,
// so a test reaches the sold-out hint without racing its one-second window.
func HoldSoldOutHint(c *Client, k holdfast.Key) {
	engine.HintSoldOut(c.engineClient, k, time.Now().Add(time.Hour))
}

// DriverOf is c as the engine's driver (enginedriver.go), for the
// driver-level suite (driver_test.go).
func DriverOf(c *Client) hfdriver.Driver[*sql.Tx] { return (*engineDriver)(c) }

// CombinerLoad is c's combiner's queued requests and running batch
// runners.
func CombinerLoad(c *Client) (pending, running int) { return engine.CombinerLoad(c.engineClient) }
