// Package pods runs holdfast over several databases ("pods"), each with
// holdfast's full schema and a share of the shops, with a shard map (shop →
// pod) in a small control database. Router implements holdfast.Engine by
// shop over one engine per pod — put it where the engine was; the HTTP
// service, the CLI and the console work unchanged.
//
//	m := podmap.New(controlPool)                    // package postgres/podmap
//	_, _ = podmap.Migrate(ctx, controlPool)
//	r, _ := pods.New(ctx, m, []pods.Pod{
//		{Name: "a", Engine: pgA, Ping: poolA.Ping, MaxInFlight: 10},
//		{Name: "b", Engine: mariaB, Ping: dbB.PingContext, MaxInFlight: 10},
//	}, pods.Config{})
//	r.Start(ctx)
//	defer r.Stop(ctx)
//
// The package is engine-neutral: it imports no database driver and works
// over holdfast.Engine values and a Map.
//
// Routing: a shop's placement is read through a bounded cache that follows
// the map's change feed (Config.FollowInterval), with a TTL only while the
// feed cannot be read, and stale placements used up to Config.StaleMax
// when the map is down. Operations that create a shop's data place an
// unassigned shop (least loaded by shop count among pods that accept new
// shops and are up, or Config.DefaultPod); other operations of an
// unassigned shop are answered by a pod that holds nothing of it.
//
// Health: a per-pod breaker marks a pod down after consecutive failures,
// or when it has calls in flight and none returns for Config.SilentAfter
// and a probe fails (a hung pod); its shops are then answered at once
// with a *PodError matching holdfast.ErrUnavailable until a probe
// succeeds. Pod.MaxInFlight bounds the calls one pod holds.
//
// Operations that span shops (CheckInvariant, SweepOnce, ServeWaitlist,
// SequenceEvents) fan out with bounded concurrency and a per-pod timeout;
// a pod that does not answer makes the answer a *PartialError naming it.
//
// docs/PODS.md is the model; docs/OPERATIONS.md (Pods) the runbook.
package pods
