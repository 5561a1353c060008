package pgtest

import (
	"sync"
	"time"
)

// Clock is an injected clock for holdfast.Config.Now and other workers that
// take one: tests move it instead of sleeping. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at start, or at the current time when start is
// zero, truncated to PostgreSQL's microsecond resolution.
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = time.Now()
	}
	return &Clock{t: start.UTC().Truncate(time.Microsecond)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}
