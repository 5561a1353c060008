package engine

import (
	"slices"

	"github.com/holdfast/holdfast"
)

// Configure is a client's Config as every driver takes it: cfg with its
// defaults filled in (holdfast.Config.WithDefaults — strategy batch
// included), every bound checked (holdfast.Config.Validate), and its
// default strategy one the driver offers. A Config outside its bounds is
// an *ArgumentError naming the field.
func Configure(cfg holdfast.Config, offered []holdfast.Strategy) (holdfast.Config, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if !slices.Contains(offered, cfg.Strategy) {
		return cfg, holdfast.NewArgumentError("Config.Strategy", "strategy %q is not offered by this engine (%v)", cfg.Strategy, offered)
	}
	return cfg, nil
}
