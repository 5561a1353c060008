package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine"
)

// TestConfigureAlike: every driver takes a Config through Configure, so a
// zero Config means the same on each (strategy batch), and a strategy a
// driver does not offer, or a bound out of range, is an *ArgumentError
// naming the field.
func TestConfigureAlike(t *testing.T) {
	offered := []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyBatch, holdfast.StrategyPool}
	cfg, err := engine.Configure(holdfast.Config{}, offered)
	if err != nil || cfg.Strategy != holdfast.StrategyBatch || cfg.RetryMax != holdfast.Config.WithDefaults(holdfast.Config{}).RetryMax {
		t.Fatalf("zero Config: %+v, %v; want the defaults, strategy batch", cfg, err)
	}
	var ae *holdfast.ArgumentError
	if _, err := engine.Configure(holdfast.Config{Strategy: holdfast.StrategySlots}, offered); !errors.As(err, &ae) || ae.Field != "Config.Strategy" {
		t.Fatalf("slots where not offered: %v, want an ArgumentError on Config.Strategy", err)
	}
	if _, err := engine.Configure(holdfast.Config{HoldTTLDefault: time.Millisecond}, offered); !errors.As(err, &ae) || ae.Field != "Config.HoldTTLDefault" {
		t.Fatalf("TTL below the minimum: %v, want an ArgumentError on Config.HoldTTLDefault", err)
	}
}
