package ops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/migrate"
)

// Severity grades a finding. Only critical findings fail `holdfast doctor`.
type Severity string

const (
	SeverityOK       Severity = "ok"
	SeverityWarn     Severity = "warn"
	SeverityCritical Severity = "critical"
)

func (s Severity) rank() int {
	switch s {
	case SeverityCritical:
		return 2
	case SeverityWarn:
		return 1
	}
	return 0
}

// Finding is one result of one check: what was seen, what it means, what to
// do.
type Finding struct {
	// Check names the check, e.g. "setting.autovacuum_naptime" or
	// "storage.reservation_units_p3".
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Meaning  string   `json:"meaning,omitempty"`
	Action   string   `json:"action,omitempty"`
}

// Report is the doctor's findings, worst first.
type Report struct {
	Database string    `json:"database"`
	Server   string    `json:"server"`
	At       time.Time `json:"at"`
	Findings []Finding `json:"findings"`
}

// Worst is the most severe finding's severity (ok for none).
func (r *Report) Worst() Severity {
	w := SeverityOK
	for _, f := range r.Findings {
		if f.Severity.rank() > w.rank() {
			w = f.Severity
		}
	}
	return w
}

// Count returns the number of findings of severity s.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Find returns the findings whose Check is check or starts with check+".".
func (r *Report) Find(check string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Check == check || strings.HasPrefix(f.Check, check+".") {
			out = append(out, f)
		}
	}
	return out
}

// Text renders the report for a terminal: problems with their meaning and
// action, then the checks that passed, one line each.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "holdfast doctor: database %s on %s at %s\n", r.Database, r.Server, r.At.UTC().Format(time.RFC3339))
	for _, f := range r.Findings {
		if f.Severity == SeverityOK {
			continue
		}
		fmt.Fprintf(&b, "\n%-8s %s: %s\n", strings.ToUpper(string(f.Severity)), f.Check, f.Message)
		if f.Meaning != "" {
			fmt.Fprintf(&b, "         means: %s\n", f.Meaning)
		}
		if f.Action != "" {
			fmt.Fprintf(&b, "         do:    %s\n", f.Action)
		}
	}
	b.WriteString("\n")
	for _, f := range r.Findings {
		if f.Severity == SeverityOK {
			fmt.Fprintf(&b, "ok       %s: %s\n", f.Check, f.Message)
		}
	}
	fmt.Fprintf(&b, "\n%d critical, %d warn, %d ok\n", r.Count(SeverityCritical), r.Count(SeverityWarn), r.Count(SeverityOK))
	return b.String()
}

// DoctorConfig configures Doctor. The zero value of every field means its
// default.
type DoctorConfig struct {
	// Client runs the invariant check and supplies the default strategy,
	// pool cap and low-water mark. Nil means a client with holdfast's
	// defaults on the same pool.
	Client *holdfast.Client
	// IdleInTransactionWarn and IdleInTransactionCritical grade sessions
	// idle in a transaction. Default to 5 seconds and 1 minute.
	IdleInTransactionWarn     time.Duration
	IdleInTransactionCritical time.Duration
	// TransactionWarn and TransactionCritical grade the oldest transaction
	// and the oldest snapshot holding back vacuum. Default to 1 minute and
	// 10 minutes.
	TransactionWarn     time.Duration
	TransactionCritical time.Duration
	// LockWaitWarn: sessions waiting on a lock for longer are a finding.
	// Defaults to 1 second.
	LockWaitWarn time.Duration
	// DeadPercentWarn and DeadPercentCritical grade a table's dead share
	// (with at least MinDeadTuples dead). Default to 20 and 50.
	DeadPercentWarn     float64
	DeadPercentCritical float64
	MinDeadTuples       int64
	// CheckTimeout bounds each check's queries. Defaults to 20 seconds.
	CheckTimeout time.Duration
}

func (c DoctorConfig) withDefaults() DoctorConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.IdleInTransactionWarn, 5*time.Second)
	def(&c.IdleInTransactionCritical, time.Minute)
	def(&c.TransactionWarn, time.Minute)
	def(&c.TransactionCritical, 10*time.Minute)
	def(&c.LockWaitWarn, time.Second)
	def(&c.CheckTimeout, 20*time.Second)
	if c.DeadPercentWarn <= 0 {
		c.DeadPercentWarn = DeadPercentMaxDefault
	}
	if c.DeadPercentCritical <= 0 {
		c.DeadPercentCritical = 50
	}
	if c.MinDeadTuples <= 0 {
		c.MinDeadTuples = MinDeadTuplesDefault
	}
	return c
}

type doctor struct {
	pool     *pgxpool.Pool
	cfg      DoctorConfig
	client   *holdfast.Client
	findings []Finding
}

func (d *doctor) add(check string, sev Severity, msg, meaning, action string) {
	d.findings = append(d.findings, Finding{Check: check, Severity: sev, Message: msg, Meaning: meaning, Action: action})
}

// Doctor runs every check on pool's database and returns the findings,
// worst first. A check that cannot run (a permission, a timeout) is itself a
// warning; Doctor returns an error only when the database cannot be reached.
func Doctor(ctx context.Context, pool *pgxpool.Pool, cfg DoctorConfig) (*Report, error) {
	cfg = cfg.withDefaults()
	d := &doctor{pool: pool, cfg: cfg, client: cfg.Client}
	rep := &Report{At: time.Now()}
	if err := pool.QueryRow(ctx, statement("server")).
		Scan(&rep.Database, &rep.Server); err != nil {
		return nil, fmt.Errorf("ops: doctor: %w", err)
	}
	if d.client == nil {
		c, err := holdfast.New(pool, holdfast.Config{})
		if err != nil {
			return nil, err
		}
		d.client = c
	}
	checks := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"schema", d.schema},
		{"setting", d.settings},
		{"storage", d.storage},
		{"connections", d.connections},
		{"activity.idle_in_transaction", d.idleInTransaction},
		{"activity.oldest_transaction", d.oldestTransaction},
		{"vacuum.xmin_horizon", d.xminHorizon},
		{"bloat", d.bloat},
		{"vacuum.frozen_xid_age", d.frozenAge},
		{"locks.waits", d.waits},
		{"database", d.databaseCounters},
		{"pool.fill", d.poolFill},
		{"replenish.inline", d.inline},
		{"safety", d.safety}, // safety.go
		{"invariant", d.invariant},
		{"webhooks.dead_letters", d.webhooks},
	}
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, cfg.CheckTimeout)
		err := c.fn(cctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			d.add(c.name, SeverityWarn, "could not run the check: "+err.Error(),
				"this part of the database was not examined",
				"grant the doctor's role pg_monitor (GRANT pg_monitor TO <role>) and read access to holdfast's tables, or run it as the schema owner")
		}
	}
	slices.SortStableFunc(d.findings, func(a, b Finding) int { return b.Severity.rank() - a.Severity.rank() })
	rep.Findings = d.findings
	return rep, nil
}

func (d *doctor) schema(ctx context.Context) error {
	if err := migrate.Check(ctx, d.pool); err != nil {
		d.add("schema", SeverityCritical, err.Error(),
			"holdfast's statements expect the latest schema; an old one fails or, worse, misbehaves",
			"run `holdfast migrate` against this database")
		return nil
	}
	d.add("schema", SeverityOK, fmt.Sprintf("schema at version %d", migrate.Latest()), "", "")
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
		d.add("setting.autovacuum", SeverityCritical, fmt.Sprintf("autovacuum = %s, track_counts = %s", s.show, set["track_counts"].show),
			"no autovacuum runs: every reservation leaves dead tuples in reservation_units that nothing removes, and transaction ID wraparound approaches",
			"set autovacuum = on and track_counts = on in postgresql.conf and reload")
	} else {
		d.add("setting.autovacuum", SeverityOK, "autovacuum = on", "", "")
	}

	if s := set["autovacuum_naptime"]; s.raw != "" {
		v, _ := s.ms()
		if v > 10_000 {
			d.add("setting.autovacuum_naptime", SeverityWarn, fmt.Sprintf("autovacuum_naptime = %s (recommended: 10s or less)", s.show),
				"autovacuum visits each database once per naptime; at the default 1min a hot reservation_units partition collects a minute of dead tuples between visits, which its SKIP LOCKED scans walk over",
				"ALTER SYSTEM SET autovacuum_naptime = '10s'; SELECT pg_reload_conf();")
		} else {
			d.add("setting.autovacuum_naptime", SeverityOK, "autovacuum_naptime = "+s.show, "", "")
		}
	}
	if s := set["autovacuum_max_workers"]; s.raw != "" {
		v, _ := strconv.Atoi(s.raw)
		if v < 6 {
			d.add("setting.autovacuum_max_workers", SeverityWarn, fmt.Sprintf("autovacuum_max_workers = %s (recommended: 6 or more)", s.show),
				"autovacuum assigns one worker per table; reservation_units has 16 partitions that churn together, and too few workers vacuum them one after another while dead tuples pile up",
				"ALTER SYSTEM SET autovacuum_max_workers = 6; then restart PostgreSQL (this one needs a restart)")
		} else {
			d.add("setting.autovacuum_max_workers", SeverityOK, "autovacuum_max_workers = "+s.show, "", "")
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
		if v == 0 {
			d.add("setting."+t.name, SeverityWarn, fmt.Sprintf("%s = %s (disabled) for this role and database (source: %s); recommended %s", t.name, s.show, s.source, t.want),
				"holdfast bounds its own transactions with SET LOCAL, so this is advice for everything else on the database, including the application's transactions around ReserveTx/ClaimTx: "+t.why,
				fmt.Sprintf("ALTER ROLE <app role> SET %s = '%s'; (or ALTER DATABASE … SET): new connections pick it up", t.name, t.want))
		} else {
			d.add("setting."+t.name, SeverityOK, fmt.Sprintf("%s = %s (source: %s)", t.name, s.show, s.source), "", "")
		}
	}
	if s := set["log_lock_waits"]; s.raw != "on" {
		d.add("setting.log_lock_waits", SeverityWarn, "log_lock_waits = "+s.show,
			"lock waits longer than deadlock_timeout leave no trace in the server log, so contention is invisible after the fact",
			"ALTER SYSTEM SET log_lock_waits = on; SELECT pg_reload_conf();")
	} else {
		d.add("setting.log_lock_waits", SeverityOK, "log_lock_waits = on", "", "")
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
		d.add("setting.pg_stat_statements", SeverityWarn, fmt.Sprintf("pg_stat_statements is not loaded (shared_preload_libraries = %q)", set["shared_preload_libraries"].show),
			"statement statistics are not collected, so the sqlcommenter routes cannot be joined with time spent per statement",
			"add pg_stat_statements to shared_preload_libraries, set pg_stat_statements.track = all and compute_query_id = on, restart, then CREATE EXTENSION pg_stat_statements")
	case !hasTrack || track.raw != "all":
		d.add("setting.pg_stat_statements", SeverityWarn, fmt.Sprintf("pg_stat_statements is loaded but pg_stat_statements.track = %s (recommended: all)", track.show),
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
		d.add("setting.pg_stat_statements", SeverityOK, msg, "", "")
	}
	return nil
}

func sameOption(have, want string) bool {
	if have == want {
		return true
	}
	h, err1 := strconv.ParseFloat(have, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	return err1 == nil && err2 == nil && h == w
}

func (d *doctor) storage(ctx context.Context) error {
	rows, err := d.pool.Query(ctx, statement("storage_options"))
	if err != nil {
		return err
	}
	type rel struct {
		name string
		opts []string
	}
	rels, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (rel, error) {
		var r rel
		err := row.Scan(&r.name, &r.opts)
		return r, err
	})
	if err != nil {
		return err
	}
	good, partitions := 0, 0
	for _, r := range rels {
		// What the migrations set: one table, in package migrate, that its
		// TestStorageOptions holds to the migrations.
		want := migrate.PartitionStorage()
		if r.name == "inventory_counters" {
			want = migrate.CounterStorage()
		} else {
			partitions++
		}
		have := map[string]string{}
		for _, o := range r.opts {
			k, v, _ := strings.Cut(o, "=")
			have[k] = v
		}
		var problems []string
		sev := SeverityOK
		if v, ok := have["autovacuum_enabled"]; ok && (v == "false" || v == "off" || v == "0") {
			problems = append(problems, "autovacuum_enabled = "+v)
			sev = SeverityCritical
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v, ok := have[k]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s not set (want %s)", k, want[k]))
			case !sameOption(v, want[k]):
				problems = append(problems, fmt.Sprintf("%s = %s (want %s)", k, v, want[k]))
			default:
				continue
			}
			if sev == SeverityOK {
				sev = SeverityWarn
			}
		}
		if len(problems) == 0 {
			good++
			continue
		}
		d.add("storage."+r.name, sev, strings.Join(problems, "; "),
			"this table churns on every reservation; without its own storage options autovacuum waits for a share of the table (20% by default) to be dead and throttles itself, and the SKIP LOCKED scans walk the dead tuples meanwhile",
			fmt.Sprintf("ALTER TABLE %s SET (%s); (migration 001 sets these on every partition: set them again on a partition that was recreated or altered)", r.name, optionList(want)))
	}
	if partitions == 0 {
		d.add("storage.reservation_units", SeverityCritical, "reservation_units has no partitions",
			"the pool strategy cannot store a unit", "run `holdfast migrate`; if it reports the schema current, the partitions were dropped by hand and must be recreated as in migrate/sql/001_init.sql")
	}
	if good > 0 {
		d.add("storage", SeverityOK, fmt.Sprintf("%d of %d tables (%d reservation_units partitions and inventory_counters) carry their storage options", good, len(rels), partitions), "", "")
	}
	return nil
}

func optionList(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " = " + m[k]
	}
	return strings.Join(parts, ", ")
}

func (d *doctor) connections(ctx context.Context) error {
	var used, maxConns int
	if err := d.pool.QueryRow(ctx, statement("connections")).Scan(&used, &maxConns); err != nil {
		return err
	}
	msg := fmt.Sprintf("%d of max_connections %d client connections in use", used, maxConns)
	if used*100 >= maxConns*80 {
		d.add("connections", SeverityWarn, msg,
			"PostgreSQL forks a backend per connection; near the limit new connections fail and every backend costs memory and snapshot time",
			"put PgBouncer (transaction pooling) in front and shrink the applications' pools; find who holds them with `holdfast top` or holdfast_pg_connection_seconds_total")
	} else {
		d.add("connections", SeverityOK, msg, "", "")
	}
	return nil
}

func describeSession(s Session) string {
	c := s.Caller()
	who := fmt.Sprintf("pid %d application=%q route=%q", s.PID, c.Application, c.Route)
	if c.Tag != "" {
		who += fmt.Sprintf(" tag=%q", c.Tag)
	}
	return who
}

func (d *doctor) idleInTransaction(ctx context.Context) error {
	sessions, err := Sessions(ctx, d.pool, false)
	if err != nil {
		return err
	}
	a := Summarize(time.Now(), sessions)
	var warn, crit []string
	for _, s := range a.IdleInTransaction {
		line := fmt.Sprintf("%s idle in transaction for %s (transaction open %s), last statement: %s",
			describeSession(s), s.StateAge.Round(time.Millisecond), s.XactAge.Round(time.Millisecond), truncate(oneLine(s.Query), 120))
		switch {
		case s.StateAge >= d.cfg.IdleInTransactionCritical:
			crit = append(crit, line)
		case s.StateAge >= d.cfg.IdleInTransactionWarn:
			warn = append(warn, line)
		}
	}
	meaning := "a session idle inside a transaction holds a pool slot, every lock it took and its snapshot (so vacuum cannot remove dead tuples) while doing nothing; it is a bug in the caller named by its route/tag, typically slow work (a payment call) done inside the transaction"
	action := "fix the caller: commit before slow work, keep ReserveTx/ClaimTx transactions short; set idle_in_transaction_session_timeout for the application's role; end this one with SELECT pg_terminate_backend(<pid>)"
	switch {
	case len(crit) > 0:
		d.add("activity.idle_in_transaction", SeverityCritical, strings.Join(append(crit, warn...), "\n         "), meaning, action)
	case len(warn) > 0:
		d.add("activity.idle_in_transaction", SeverityWarn, strings.Join(warn, "\n         "), meaning, action)
	default:
		d.add("activity.idle_in_transaction", SeverityOK, fmt.Sprintf("%d sessions idle in transaction, none for %s or longer", len(a.IdleInTransaction), d.cfg.IdleInTransactionWarn), "", "")
	}
	return nil
}

func (d *doctor) oldestTransaction(ctx context.Context) error {
	sessions, err := Sessions(ctx, d.pool, false)
	if err != nil {
		return err
	}
	a := Summarize(time.Now(), sessions)
	if a.Oldest == nil {
		d.add("activity.oldest_transaction", SeverityOK, "no open transaction", "", "")
		return nil
	}
	o := *a.Oldest
	msg := fmt.Sprintf("oldest transaction open %s: %s, state %s, statement: %s",
		o.XactAge.Round(time.Millisecond), describeSession(o), o.State, truncate(oneLine(o.Query), 120))
	sev := SeverityOK
	switch {
	case o.XactAge >= d.cfg.TransactionCritical:
		sev = SeverityCritical
	case o.XactAge >= d.cfg.TransactionWarn:
		sev = SeverityWarn
	}
	if sev == SeverityOK {
		d.add("activity.oldest_transaction", sev, msg, "", "")
		return nil
	}
	d.add("activity.oldest_transaction", sev, msg,
		"a long transaction holds its connection and locks, and its snapshot keeps vacuum from removing any tuple that died after it began, in every table of the database",
		"find why the caller keeps it open (its route/tag names the business process); end it with SELECT pg_cancel_backend(<pid>) or pg_terminate_backend(<pid>); bound it with statement_timeout / idle_in_transaction_session_timeout")
	return nil
}

func (d *doctor) xminHorizon(ctx context.Context) error {
	rows, err := d.pool.Query(ctx, statement("xmin_holders"), 10)
	if err != nil {
		return err
	}
	type holder struct {
		kind, name, caller, state, query string
		xact                             *float64
		age                              *int64
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (holder, error) {
		var h holder
		err := row.Scan(&h.kind, &h.name, &h.caller, &h.state, &h.query, &h.xact, &h.age)
		return h, err
	})
	if err != nil {
		return err
	}
	sev := SeverityOK
	var lines []string
	for _, h := range hs {
		age := int64(0)
		if h.age != nil {
			age = *h.age
		}
		s := SeverityOK
		var line string
		switch h.kind {
		case "session":
			x := seconds(0)
			if h.xact != nil {
				x = seconds(*h.xact)
			}
			c := ParseComment(h.query)
			line = fmt.Sprintf("session pid %s application=%q route=%q (%s) holds a snapshot %d transactions old, open %s",
				h.name, cmp.Or(h.caller, "untagged"), cmp.Or(c.Route, "none"), h.state, age, x.Round(time.Millisecond))
			switch {
			case x >= d.cfg.TransactionCritical:
				s = SeverityCritical
			case x >= d.cfg.TransactionWarn:
				s = SeverityWarn
			}
		case "replication slot":
			line = fmt.Sprintf("replication slot %q (%s, %s) holds xmin %d transactions old", h.name, h.caller, h.state, age)
			if h.state == "inactive" {
				s = SeverityCritical
			} else if age > 10_000_000 {
				s = SeverityWarn
			}
		default:
			x := seconds(0)
			if h.xact != nil {
				x = seconds(*h.xact)
			}
			line = fmt.Sprintf("prepared transaction %q (owner %s) holds xmin %d transactions old, prepared %s ago", h.name, h.caller, age, x.Round(time.Second))
			if x >= d.cfg.TransactionWarn {
				s = SeverityCritical
			}
		}
		if s.rank() > sev.rank() {
			sev = s
		}
		if s != SeverityOK {
			lines = append(lines, line)
		}
	}
	if sev == SeverityOK {
		d.add("vacuum.xmin_horizon", SeverityOK, fmt.Sprintf("%d snapshot holders, none old enough to matter", len(hs)), "", "")
		return nil
	}
	d.add("vacuum.xmin_horizon", sev, strings.Join(lines, "\n         "),
		"vacuum cannot remove a tuple that died after the oldest snapshot, replication slot or prepared transaction began: dead tuples in reservation_units pile up however often autovacuum runs",
		"end the session (pg_terminate_backend(<pid>)), drop the unused slot (pg_drop_replication_slot(<name>)), or COMMIT/ROLLBACK PREPARED the transaction")
	return nil
}

func (d *doctor) bloat(ctx context.Context) error {
	tables, err := TableStats(ctx, d.pool)
	if err != nil {
		return err
	}
	good := 0
	for _, t := range tables {
		sev := SeverityOK
		if t.Dead >= d.cfg.MinDeadTuples {
			switch {
			case t.DeadPercent > d.cfg.DeadPercentCritical:
				sev = SeverityCritical
			case t.DeadPercent > d.cfg.DeadPercentWarn:
				sev = SeverityWarn
			}
		}
		if sev == SeverityOK {
			good++
			continue
		}
		ago := func(at time.Time) string {
			if at.IsZero() {
				return "never"
			}
			return time.Since(at).Round(time.Second).String() + " ago"
		}
		d.add("bloat."+t.Table, sev,
			fmt.Sprintf("%.1f%% dead: %d dead, %d live tuples; last autovacuum %s (%d runs), last manual vacuum %s (%d runs)",
				t.DeadPercent, t.Dead, t.Live, ago(t.LastAutovacuum), t.AutovacuumCount, ago(t.LastVacuum), t.VacuumCount),
			"vacuum is behind on a table that churns on every reservation; reservation scans walk the dead tuples to find live ones and latency climbs, slowly and then not slowly",
			"check vacuum.xmin_horizon and activity.* (something may hold vacuum back), the table's storage options (storage.*) and autovacuum_max_workers/naptime; VACUUM (VERBOSE) "+t.Table+" shows what vacuum can remove now")
	}
	d.add("bloat", SeverityOK, fmt.Sprintf("%d of %d churning tables within %.0f%% dead", good, len(tables), d.cfg.DeadPercentWarn), "", "")
	return nil
}

func (d *doctor) frozenAge(ctx context.Context) error {
	b, err := ReadBloat(ctx, d.pool)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("age(datfrozenxid) = %d (autovacuum_freeze_max_age %d)", b.FrozenXIDAge, b.FreezeMaxAge)
	switch {
	case b.FrozenXIDAge > 1_000_000_000:
		d.add("vacuum.frozen_xid_age", SeverityCritical, msg,
			"half-way to transaction ID wraparound: PostgreSQL stops accepting writes when it gets there",
			"find what holds vacuum back (vacuum.xmin_horizon), then VACUUM (FREEZE, VERBOSE) the oldest tables (ORDER BY age(relfrozenxid) DESC in pg_class)")
	case b.FreezeMaxAge > 0 && b.FrozenXIDAge > b.FreezeMaxAge+b.FreezeMaxAge/4:
		d.add("vacuum.frozen_xid_age", SeverityWarn, msg,
			"anti-wraparound vacuum is due and not keeping up; reservation_units consumes transaction IDs fast, and an anti-wraparound vacuum should never be the first to run on a hot partition",
			"give autovacuum more workers or less throttling, and check vacuum.xmin_horizon")
	default:
		d.add("vacuum.frozen_xid_age", SeverityOK, msg, "", "")
	}
	return nil
}

func (d *doctor) waits(ctx context.Context) error {
	rows, err := d.pool.Query(ctx, statement("waits"))
	if err != nil {
		return err
	}
	type wait struct {
		typ, event string
		n          int
		longest    float64
	}
	ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (wait, error) {
		var w wait
		err := row.Scan(&w.typ, &w.event, &w.n, &w.longest)
		return w, err
	})
	if err != nil {
		return err
	}
	var parts []string
	sev := SeverityOK
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s/%s: %d (longest %s)", w.typ, w.event, w.n, seconds(w.longest).Round(time.Millisecond)))
		if w.typ == "Lock" && seconds(w.longest) >= d.cfg.LockWaitWarn {
			sev = SeverityWarn
		}
	}
	if len(parts) == 0 {
		d.add("locks.waits", SeverityOK, "no active session is waiting", "", "")
		return nil
	}
	msg := "active sessions waiting by wait_event: " + strings.Join(parts, ", ")
	if sev == SeverityOK {
		d.add("locks.waits", SeverityOK, msg, "", "")
		return nil
	}
	d.add("locks.waits", sev, msg,
		"sessions queue on heavyweight locks (Lock/transactionid, Lock/tuple: rows; Lock/advisory: holdfast's per-key locks); if instead most waits are Client or IPC and throughput is flat, the limit is connections, not locks",
		"find the blocker with SELECT pid, pg_blocking_pids(pid), query FROM pg_stat_activity WHERE wait_event_type = 'Lock'; check activity.idle_in_transaction; keep lock_timeout short")
	return nil
}

func (d *doctor) databaseCounters(ctx context.Context) error {
	c, err := ReadDatabaseCounters(ctx, d.pool)
	if err != nil {
		return err
	}
	since := "since statistics reset " + c.StatsReset.UTC().Format(time.RFC3339)
	if c.Deadlocks > 0 {
		d.add("database.deadlocks", SeverityWarn, fmt.Sprintf("%d deadlocks %s", c.Deadlocks, since),
			"two transactions took locks in opposite orders; holdfast's own paths lock in one order (holds, keys in order, buffers) and retry, so deadlocks point at the application's transactions around the …Tx calls or hand-written SQL",
			"set log_lock_waits = on and read the DETAIL of the deadlock messages in the server log; lock in holdfast's order (checkout first, then keys sorted)")
	} else {
		d.add("database.deadlocks", SeverityOK, "no deadlocks "+since, "", "")
	}
	total := c.Commits + c.Rollbacks
	share := 0.0
	if total > 0 {
		share = 100 * float64(c.Rollbacks) / float64(total)
	}
	msg := fmt.Sprintf("%d rollbacks of %d transactions (%.1f%%) %s", c.Rollbacks, total, share, since)
	if total >= 1000 && share > 25 {
		d.add("database.rollbacks", SeverityWarn, msg,
			"holdfast rolls back a reservation that finds too little stock and retries on deadlocks or serialization failures, so some rollbacks are normal; a high share means wasted work: sold-out keys hammered, or retries",
			"compare with holdfast_engine_retries_total by SQLSTATE and the reservation outcomes; sold-out keys should show as insufficient_stock, not as retries")
	} else {
		d.add("database.rollbacks", SeverityOK, msg, "", "")
	}
	return nil
}

func (d *doctor) poolFill(ctx context.Context) error {
	p, err := ReadPoolFill(ctx, d.pool, d.client.Config(), 10)
	if err != nil {
		return err
	}
	if p.Keys == 0 {
		d.add("pool.fill", SeverityOK, "no key uses the pool strategy", "", "")
		return nil
	}
	fill := 100.0
	if p.Wanted > 0 {
		fill = 100 * float64(p.Pooled) / float64(p.Wanted)
	}
	msg := fmt.Sprintf("%d pool keys, %.0f%% filled (%d of %d units); %d below the low-water mark with stock left, %d of them empty", p.Keys, fill, p.Pooled, p.Wanted, p.Low, p.Empty)
	if p.Empty == 0 {
		d.add("pool.fill", SeverityOK, msg, "", "")
		return nil
	}
	var keys []string
	for _, k := range p.LowKeys {
		keys = append(keys, fmt.Sprintf("%d/%d/%d pooled %d of cap %d (available %d, held %d)", k.ShopID, k.ItemID, k.LocationID, k.Pooled, k.PoolCap, k.Available, k.Held))
	}
	d.add("pool.fill", SeverityWarn, msg+"; least filled: "+strings.Join(keys, ", "),
		"an empty pool with stock left makes the next buyer refill it inline, under the key's lock, on the checkout path",
		"the background replenisher should top these up within its interval: check it is running (holdfast serve) and not failing in the logs; raise the pool cap of keys that drain between passes")
	return nil
}

func (d *doctor) inline(ctx context.Context) error {
	keys, total, err := InlineReplenished(ctx, d.pool, 10)
	if err != nil {
		return err
	}
	if total == 0 {
		d.add("replenish.inline", SeverityOK, "no key has been refilled inline on a buyer's reservation", "", "")
		return nil
	}
	var parts []string
	recent := false
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d/%d/%d ×%d (last %s)", k.ShopID, k.ItemID, k.LocationID, k.Count, k.Last.UTC().Format(time.RFC3339)))
		if time.Since(k.Last) < time.Hour {
			recent = true
		}
	}
	sev := SeverityOK
	if recent {
		sev = SeverityWarn
	}
	d.add("replenish.inline", sev, fmt.Sprintf("%d keys hit inline replenishment: %s", total, strings.Join(parts, ", ")),
		"their buffers ran dry between replenisher passes, so buyers refilled them on the checkout path, under the key's lock",
		"raise these keys' pool cap (SetStrategy) or shorten the replenish interval; a hot counter key is better served by the slots strategy")
	return nil
}

func (d *doctor) invariant(ctx context.Context) error {
	rep, err := d.client.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	if !rep.OK() {
		d.add("invariant", SeverityCritical, rep.String(),
			"holdfast's safety invariant (pooled + held <= available per key, the ledger sums to available, holds match their lines) does not hold: units may be oversold",
			"stop writes to the affected keys, keep this report, and compare the keys' inventory_ledger with their holds; only holdfast may write its tables")
	} else {
		d.add("invariant", SeverityOK, fmt.Sprintf("invariant holds over %d keys", rep.Keys), "", "")
	}
	if len(rep.OverCommitted) > 0 {
		var parts []string
		for i, k := range rep.OverCommitted {
			if i == 10 {
				parts = append(parts, fmt.Sprintf("… %d more", len(rep.OverCommitted)-10))
				break
			}
			parts = append(parts, fmt.Sprintf("%d/%d/%d held %d > available %d", k.ShopID, k.ItemID, k.LocationID, k.Held, k.Available))
		}
		d.add("invariant.over_committed", SeverityWarn, fmt.Sprintf("%d over-committed keys: %s", len(rep.OverCommitted), strings.Join(parts, ", ")),
			"stock was reduced below what active holds already promised; nothing more is reserved on these keys, and some of their holds will fail to claim",
			"restock the keys, or let the holds expire or be released; decide which checkouts to cancel before their claims fail")
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
