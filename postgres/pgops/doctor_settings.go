package pgops

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres/migrations"
)

// The doctor's checks of the schema version and the server's settings
// (schema, setting.*).

func (d *doctor) schema(ctx context.Context) error {
	if err := migrations.Check(ctx, d.pool); err != nil {
		d.add("schema", health.SeverityCritical, err.Error(),
			"holdfast's statements expect the latest schema; an old one fails or, worse, misbehaves",
			"run `holdfast migrate` against this database")
		return nil
	}
	d.add("schema", health.SeverityOK, fmt.Sprintf("schema at version %d", migrations.Latest()), "", "")
	return nil
}

// setting is one row of settings.sql.
type setting struct {
	raw, unit, show, source string
}

// ms converts a setting with a time unit to milliseconds.
func (s setting) ms() (float64, bool) {
	v, err := strconv.ParseFloat(s.raw, 64)
	if err != nil {
		return 0, false
	}
	switch s.unit {
	case "ms":
		return v, true
	case "s":
		return v * 1000, true
	case "min":
		return v * 60_000, true
	}
	return 0, false
}

func (d *doctor) settings(ctx context.Context) error {
	names := []string{"autovacuum", "autovacuum_naptime", "autovacuum_max_workers", "lock_timeout", "statement_timeout",
		"idle_in_transaction_session_timeout", "log_lock_waits", "shared_preload_libraries",
		"pg_stat_statements.track", "compute_query_id", "track_counts"}
	rows, err := d.pool.Query(ctx, statement("settings"), names)
	if err != nil {
		return err
	}
	set := map[string]setting{}
	for rows.Next() {
		var name string
		var s setting
		if err := rows.Scan(&name, &s.raw, &s.unit, &s.show, &s.source); err != nil {
			return err
		}
		set[name] = s
	}
	if err := rows.Err(); err != nil {
		return err
	}

	if s := set["autovacuum"]; s.raw != "on" || set["track_counts"].raw != "on" {
		d.add("setting.autovacuum", health.SeverityCritical, fmt.Sprintf("autovacuum = %s, track_counts = %s", s.show, set["track_counts"].show),
			"no autovacuum runs: every reservation leaves dead tuples in reservation_units that nothing removes, and transaction ID wraparound approaches",
			"set autovacuum = on and track_counts = on in postgresql.conf and reload")
	} else {
		d.add("setting.autovacuum", health.SeverityOK, "autovacuum = on", "", "")
	}

	if s := set["autovacuum_naptime"]; s.raw != "" {
		v, _ := s.ms()
		if v > 10_000 {
			d.add("setting.autovacuum_naptime", health.SeverityWarn, fmt.Sprintf("autovacuum_naptime = %s (recommended: 10s or less)", s.show),
				"autovacuum visits each database once per naptime; at the default 1min a hot reservation_units partition collects a minute of dead tuples between visits, which its SKIP LOCKED scans walk over",
				"ALTER SYSTEM SET autovacuum_naptime = '10s'; SELECT pg_reload_conf();")
		} else {
			d.add("setting.autovacuum_naptime", health.SeverityOK, "autovacuum_naptime = "+s.show, "", "")
		}
	}
	if s := set["autovacuum_max_workers"]; s.raw != "" {
		v, _ := strconv.Atoi(s.raw)
		if v < 6 {
			d.add("setting.autovacuum_max_workers", health.SeverityWarn, fmt.Sprintf("autovacuum_max_workers = %s (recommended: 6 or more)", s.show),
				"autovacuum assigns one worker per table; reservation_units has 16 partitions that churn together, and too few workers vacuum them one after another while dead tuples pile up",
				"ALTER SYSTEM SET autovacuum_max_workers = 6; then restart PostgreSQL (this one needs a restart)")
		} else {
			d.add("setting.autovacuum_max_workers", health.SeverityOK, "autovacuum_max_workers = "+s.show, "", "")
		}
	}
	timeouts := []struct{ name, want, why string }{
		{"lock_timeout", "1s", "a transaction that waits on a lock without limit piles up behind one slow holder and takes a connection with it"},
		{"statement_timeout", "5s", "one runaway statement holds a connection, its locks and vacuum's horizon for as long as it runs"},
		{"idle_in_transaction_session_timeout", "15s", "a transaction left open (an HTTP call made inside it, a forgotten commit) holds a connection, its locks and vacuum's horizon while doing nothing"},
	}
	for _, t := range timeouts {
		s, ok := set[t.name]
		if !ok {
			continue
		}
		v, _ := s.ms()
		if v == 0 && d.cfg.Embedded {
			d.add("setting."+t.name, health.SeverityOK, fmt.Sprintf("%s = %s: the embedded cluster, where only holdfast connects and bounds its own transactions (on a server your application shares, set %s for its role)", t.name, s.show, t.want), "", "")
			continue
		}
		if v == 0 {
			d.add("setting."+t.name, health.SeverityWarn, fmt.Sprintf("%s = %s (disabled) for this role and database (source: %s); recommended %s", t.name, s.show, s.source, t.want),
				"holdfast bounds its own transactions with SET LOCAL, so this is advice for everything else on the database, including the application's transactions around ReserveTx/ClaimTx: "+t.why,
				fmt.Sprintf("ALTER ROLE <app role> SET %s = '%s'; (or ALTER DATABASE … SET): new connections pick it up", t.name, t.want))
		} else {
			d.add("setting."+t.name, health.SeverityOK, fmt.Sprintf("%s = %s (source: %s)", t.name, s.show, s.source), "", "")
		}
	}
	if s := set["log_lock_waits"]; s.raw != "on" {
		d.add("setting.log_lock_waits", health.SeverityWarn, "log_lock_waits = "+s.show,
			"lock waits longer than deadlock_timeout leave no trace in the server log, so contention is invisible after the fact",
			"ALTER SYSTEM SET log_lock_waits = on; SELECT pg_reload_conf();")
	} else {
		d.add("setting.log_lock_waits", health.SeverityOK, "log_lock_waits = on", "", "")
	}
	loaded := false
	for _, lib := range strings.Split(set["shared_preload_libraries"].raw, ",") {
		if strings.TrimSpace(lib) == "pg_stat_statements" {
			loaded = true
		}
	}
	track, hasTrack := set["pg_stat_statements.track"]
	switch {
	case !loaded:
		d.add("setting.pg_stat_statements", health.SeverityWarn, fmt.Sprintf("pg_stat_statements is not loaded (shared_preload_libraries = %q)", set["shared_preload_libraries"].show),
			"statement statistics are not collected, so the sqlcommenter routes cannot be joined with time spent per statement",
			"add pg_stat_statements to shared_preload_libraries, set pg_stat_statements.track = all and compute_query_id = on, restart, then CREATE EXTENSION pg_stat_statements")
	case !hasTrack || track.raw != "all":
		d.add("setting.pg_stat_statements", health.SeverityWarn, fmt.Sprintf("pg_stat_statements is loaded but pg_stat_statements.track = %s (recommended: all)", track.show),
			"statements run inside functions and DO blocks are not counted",
			"ALTER SYSTEM SET pg_stat_statements.track = 'all'; SELECT pg_reload_conf();")
	default:
		msg := "pg_stat_statements loaded, track = all, compute_query_id = " + set["compute_query_id"].show
		var created bool
		if err := d.pool.QueryRow(ctx, statement("pg_stat_statements_created")).Scan(&created); err != nil {
			return err
		}
		if !created {
			msg += " (run CREATE EXTENSION pg_stat_statements in this database to query it)"
		}
		d.add("setting.pg_stat_statements", health.SeverityOK, msg, "", "")
	}
	return nil
}
