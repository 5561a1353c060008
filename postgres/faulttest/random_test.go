package faulttest_test

import (
	"context"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/faulttest"
)

// size scales a schedule for the long form.
func size(s faulttest.Schedule) faulttest.Schedule {
	if faulttest.Long() {
		s.Epochs *= 6
		s.OpsPerEpoch *= 2
	}
	return s
}

// Random schedules with a linearizability check: random pauses at
// statement boundaries, backends terminated at random and right before
// COMMIT.
var _ = scenario("random/history", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{History: true})
	st := size(faulttest.Schedule{Seed: seed, Epochs: 8, OpsPerEpoch: 20, StrategyChanges: true,
		PauseRate: 0.2, PauseMax: 3 * time.Millisecond,
		KillMean: 40 * time.Millisecond, CommitKill: 0.05}).Run(context.Background(), e)
	e.Verify(context.Background())
	t.Logf("seed %d: %s", seed, st)
})

// Random schedules on batch keys only (the default strategy), busy enough
// for the combiner to combine, with callers giving up (often while queued
// in the combiner), backends terminated at random and before COMMIT (a
// combined batch's included), with a linearizability check.
var _ = scenario("random/batch", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{History: true, MaxConns: 12})
	st := size(faulttest.Schedule{Seed: seed, Workers: 8, Epochs: 10, OpsPerEpoch: 8, Keys: 2, Stock: 40,
		KeyStrategy: holdfast.StrategyBatch, ReserveShare: 60, CancelRate: 0.05,
		PauseRate: 0.1, PauseMax: 2 * time.Millisecond,
		KillMean: 80 * time.Millisecond, CommitKill: 0.03}).Run(context.Background(), e)
	e.Verify(context.Background())
	t.Logf("seed %d: %s", seed, st)
})

// Random schedules whose carts span two keys (lines in random order), one
// key of each strategy, with backends terminated at random and a
// linearizability check over the keys the carts connect.
var _ = scenario("random/carts", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{History: true})
	st := size(faulttest.Schedule{Seed: seed, Workers: 4, Epochs: 8, OpsPerEpoch: 10, Stock: 20, MultiLine: true,
		PauseRate: 0.1, PauseMax: 2 * time.Millisecond, KillMean: 80 * time.Millisecond}).Run(context.Background(), e)
	e.Verify(context.Background())
	t.Logf("seed %d: %s", seed, st)
})

// Random schedules whose COMMIT answers are lost (the server committed, the
// client never heard), with a linearizability check.
var _ = scenario("random/commit-cut", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{History: true, Proxy: true})
	st := size(faulttest.Schedule{Seed: seed, Epochs: 8, OpsPerEpoch: 20,
		PauseRate: 0.1, PauseMax: 2 * time.Millisecond, CommitCut: 0.08}).Run(context.Background(), e)
	e.Verify(context.Background())
	t.Logf("seed %d: %s", seed, st)
})

// Random schedules with multi-line carts, the clock moving and sweeps under
// load, retry storms and every fault at once; checked by the book and the
// invariant.
var _ = scenario("random/everything", func(t *testing.T) {
	seed := faulttest.Seed(t)
	e := faulttest.New(t, faulttest.Options{Proxy: true})
	st := size(faulttest.Schedule{Seed: seed, Epochs: 8, OpsPerEpoch: 15, Keys: 4,
		MultiLine: true, ConcurrentExpiry: true, Storm: 3, StrategyChanges: true,
		PauseRate: 0.2, PauseMax: 3 * time.Millisecond,
		KillMean: 50 * time.Millisecond, CommitKill: 0.04, CommitCut: 0.04}).Run(context.Background(), e)
	e.Verify(context.Background())
	t.Logf("seed %d: %s", seed, st)
})
