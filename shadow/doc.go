// Package shadow moves a shop's holds from a legacy hold store onto holdfast
// without a flag day — the staged rollout: shadow mode, a per-shop switch of
// the source of truth with the dual write kept on, a ramp smallest-first and
// a kill switch that is always armed.
//
// Engine wraps a legacy.Store and a holdfast.Engine and is itself a
// holdfast.Engine: put it where the engine was.
//
//	store, _ := redis.New(rdb, pool, redis.Config{})   // package legacy/redis
//	_ = store.Setup(ctx)
//	hf, _ := postgres.New(pool, holdfast.Config{})
//	sh, _ := shadow.New(ctx, pgshadow.NewStore(pool), store, hf, shadow.Config{})
//	sh.Start(ctx)
//	defer sh.Stop(ctx)
//	_ = sh.Enroll(ctx, shopID)                        // legacy
//	_ = sh.SetMode(ctx, shopID, shadow.ModeShadow, "ramp")
//
// Each shop has a mode (ModeLegacy, ModeShadow, ModePrimary, ModeHoldfast)
// in PostgreSQL (migration 004); replicas poll it every PollInterval. An
// operation reads its shop's mode once and runs under it to the end. In
// shadow and primary both sides get every operation, synchronously, and the
// answers are compared: counters per shop, operation and kind, flushed to
// holdfast_shadow_stats, a bounded sample of disagreements with both answers
// and the request, and Prometheus metrics (Collectors). Report, Plan,
// PromoteNext, Revert, RevertAll, Samples and Reconcile are the operator's
// API behind `holdfast shadow …` and the admin routes. Demo is `holdfast
// demo --scenario migration`. docs/MIGRATION.md walks through a migration.
package shadow
