// Package engine is holdfast's reservation logic written once, over a
// driver (package engine/driver) per database: validation and bounds,
// outcome labels, the one retry policy with its outcome-unknown
// bookkeeping, and the parts of the engine the drivers share. Packages
// postgres and mysql are its drivers; a user imports one of them, not this
// package. See docs/DESIGN.md, "One engine, two drivers".
package engine

import (
	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// Core is the engine's database-free state, shared by every operation of
// one client: its configuration and its driver's classifier. It is safe
// for concurrent use.
type Core struct {
	cfg holdfast.Config
	cls driver.Classifier
}

// NewCore returns the core of a client with cfg (defaults filled in by the
// caller) over a driver classifying its errors with cls.
func NewCore(cfg holdfast.Config, cls driver.Classifier) *Core {
	return &Core{cfg: cfg, cls: cls}
}
