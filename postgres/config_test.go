package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestNewValidatesEveryBound (#10 item 7): New refuses a Config outside any
// bound with an *ArgumentError naming the field — QuantityMax above what a
// 32-bit quantity holds in particular (the batch path narrows to int32).
func TestNewValidatesEveryBound(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	cases := []struct {
		cfg   holdfast.Config
		field string
	}{
		{holdfast.Config{QuantityMax: 1 << 40}, "Config.QuantityMax"},
		{holdfast.Config{QuantityMax: -1}, "Config.QuantityMax"},
		{holdfast.Config{LinesPerCartMax: -5}, "Config.LinesPerCartMax"},
		{holdfast.Config{LinesPerCartMax: holdfast.LinesPerCartLimit + 1}, "Config.LinesPerCartMax"},
		{holdfast.Config{PoolCap: -1}, "Config.PoolCap"},
		{holdfast.Config{Slots: holdfast.SlotsLimit + 1}, "Config.Slots"},
		{holdfast.Config{LowWaterPercent: 101}, "Config.LowWaterPercent"},
		{holdfast.Config{SweepBatch: -1}, "Config.SweepBatch"},
		{holdfast.Config{RetryMax: -2}, "Config.RetryMax"},
		{holdfast.Config{OutcomeRetention: -time.Second}, "Config.OutcomeRetention"},
		{holdfast.Config{SweepInterval: -time.Second}, "Config.SweepInterval"},
		{holdfast.Config{LockTimeout: -time.Second}, "Config.LockTimeout"},
		{holdfast.Config{CombineLockWait: -time.Second}, "Config.CombineLockWait"},
		{holdfast.Config{HoldLifetimeMax: time.Millisecond}, "Config.HoldLifetimeMax"},
		{holdfast.Config{HoldTTLDefault: 2 * time.Hour}, "Config.HoldTTLDefault"},
		{holdfast.Config{Strategy: "fastest"}, "Config.Strategy"},
	}
	for _, tc := range cases {
		_, err := postgres.New(db.Pool, tc.cfg)
		var ae *holdfast.ArgumentError
		if !errors.Is(err, holdfast.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Field != tc.field {
			t.Errorf("%+v: got %v, want invalid %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := postgres.New(db.Pool, holdfast.Config{QuantityMax: holdfast.QuantityLimit, RetryMax: -1}); err != nil {
		t.Fatalf("bounds themselves: %v", err)
	}
}
