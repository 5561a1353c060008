package faulttest

import (
	"time"

	"github.com/holdfast/holdfast/postgres/pgtest"
)

// Clock is the injected clock the fault scenarios move (pgtest.Clock).
type Clock = pgtest.Clock

// NewClock starts a clock at the current time.
func NewClock() *Clock { return pgtest.NewClock(time.Time{}) }
