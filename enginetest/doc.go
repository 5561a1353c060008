// Package enginetest is the conformance suite: the behaviour every holdfast
// engine owes its callers, written once against holdfast.Engine and run by
// every engine's tests — the PostgreSQL engine in package postgres, the
// MySQL/MariaDB engine in package mysql, and wrappers over the contract.
// River's riverdrivertest, one shared suite every driver runs, is the model.
//
// An engine's test file gives the suite a Harness — how to make a fresh,
// migrated, isolated engine with a given Config and an injected clock, and
// which strategies it supports — and calls Run:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, enginetest.Harness{
//			Strategies: []holdfast.Strategy{holdfast.StrategyCounter, holdfast.StrategyPool},
//			New: func(t *testing.T, cfg holdfast.Config, opts enginetest.Options) *enginetest.Instance {
//				clock := pgtest.NewClock(time.Time{})
//				cfg.Now = clock.Now
//				c, err := postgres.New(pgtest.DB(t, opts.Conns).Pool, cfg)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return &enginetest.Instance{Engine: c, Clock: clock}
//			},
//		})
//	}
//
// The suite covers, for each strategy the engine supports: the hold
// lifecycle (reserve, claim, release, extend) and the answers to repeating
// each step; idempotent retries, concurrent ones included, and claims
// racing releases; carts (all or nothing, duplicate lines rejected,
// opposite-order carts concurrently); expiry, the sweep and late claims;
// holds past their expiry but not swept (expired and claimable);
// stock changes and over-commitment; bad input rejected with an
// *ArgumentError that names the field and writes nothing; configured
// bounds; canceled calls; background maintenance; checkout ids scoped per
// shop; idempotent stock changes; the seed race (64 clients × 20 attempts
// for 50 units); seeded randomized concurrent schedules, every claim and
// release judged by an oracle, under an injected clock, the database's own
// and an application clock stepped against it; and a history of
// concurrent calls checked for linearizability against the model of a key
// (history.Model, package internal/history). Every test ends with CheckInvariant over the engine's
// whole database.
//
// Time is injected (Config.Now, moved with Clock.Advance): no test sleeps
// and no test asserts how long anything took; answer times are logged.
// HOLDFAST_SEED replays the randomized schedule; HOLDFAST_LONG=1 runs the
// heavier forms.
package enginetest
