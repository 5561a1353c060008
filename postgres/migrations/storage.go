package migrations

import "maps"

// The storage options the migrations give the two tables that churn on
// every reservation: fillfactor for HOT updates, and autovacuum on absolute
// dead-row counts, unthrottled (postgres/migrations/sql/001_init.sql says why). The
// doctor (package postgres/pgops) checks a database against them; TestStorageOptions
// holds them to what migrating an empty database sets, so the two cannot
// drift apart.
var (
	partitionStorage = map[string]string{
		"fillfactor": "70", "autovacuum_vacuum_scale_factor": "0.0", "autovacuum_vacuum_threshold": "1000",
		"autovacuum_analyze_scale_factor": "0.0", "autovacuum_analyze_threshold": "5000",
		"autovacuum_vacuum_cost_delay": "0", "autovacuum_vacuum_cost_limit": "10000",
		"vacuum_truncate": "false",
	}
	counterStorage = map[string]string{
		"fillfactor": "50", "autovacuum_vacuum_scale_factor": "0.0", "autovacuum_vacuum_threshold": "1000",
		"autovacuum_vacuum_cost_delay": "0",
	}
)

// PartitionStorage returns the storage options of every reservation_units
// partition (name to value, as written in the migration), a fresh map on
// each call.
func PartitionStorage() map[string]string { return maps.Clone(partitionStorage) }

// CounterStorage returns the storage options of inventory_counters, a fresh
// map on each call.
func CounterStorage() map[string]string { return maps.Clone(counterStorage) }
