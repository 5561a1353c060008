package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
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

type doctor struct {
	pool     *pgxpool.Pool
	cfg      DoctorConfig
	client   *postgres.Client
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
		c, err := postgres.New(pool, holdfast.Config{})
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
		{"setting.checkpoints", d.checkpoints}, // doctor_checkpoints.go
		{"storage", d.storage},
		{"connections", d.connections},
		{"replication.synchronous", d.replication}, // doctor_replication.go
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
