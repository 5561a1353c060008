package faulttest

import (
	"sync"
	"time"
)

// Clock is an injected clock (holdfast.Config.Now): tests move it instead of
// sleeping. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at the current time, truncated to PostgreSQL's
// microsecond resolution.
func NewClock() *Clock { return &Clock{t: time.Now().UTC().Truncate(time.Microsecond)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
