package mysql

import (
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// CombinedGrants is how many reservations c's combined batches granted.
func CombinedGrants(c *Client) int64 { return c.combinedGrants.Load() }

// HoldSoldOutHint makes c read k as recently sold out for the next hour,
// so a test reaches the sold-out hint without racing its one-second window.
func HoldSoldOutHint(c *Client, k holdfast.Key) {
	engine.HintSoldOut(c.engineClient, k, time.Now().Add(time.Hour))
}
