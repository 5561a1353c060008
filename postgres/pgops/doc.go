// Package pgops is holdfast's operator's view of PostgreSQL: who holds
// connections, per business process, and whether vacuum keeps up.
//
// The activity Sampler reads pg_stat_activity every second and adds up
// connection-seconds per caller (application_name plus the route and tag of
// the sqlcommenter comment every engine statement carries) and state, the
// oldest transaction and the sessions idle in a transaction. The
// BloatMonitor reads pg_stat_user_tables for the tables that churn (every
// reservation_units partition, inventory_counters, holds,
// reserved_quantities), raises an alert flag when a table's dead tuples stay
// above a share for longer than a window, and watches transaction ID age.
// Both are Prometheus collectors and run as internal/maint workers:
//
//	s := pgops.NewSampler(pool, pgops.SamplerConfig{})
//	b := pgops.NewBloatMonitor(pool, pgops.BloatConfig{})
//	if err := s.Register(reg); err != nil { … }
//	if err := b.Register(reg); err != nil { … }
//	s.Start(ctx); b.Start(ctx)
//	defer s.Stop(ctx); defer b.Stop(ctx)
//
// Doctor runs every check `holdfast doctor` reports on PostgreSQL, as data
// (a health.Report, the shape MySQL's mysqlops.Doctor answers too), and
// Collect and Render make one frame of `holdfast top`.
//
// The role that runs them needs pg_monitor (or pg_read_all_stats) to see
// other roles' sessions; without it their state and query are hidden.
package pgops
