package pgops

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
)

type doctor struct {
	pool     *pgxpool.Pool
	cfg      DoctorConfig
	client   *postgres.Client
	findings []health.Finding
}

func (d *doctor) add(check string, sev health.Severity, msg, meaning, action string) {
	d.findings = append(d.findings, health.Finding{Check: check, Severity: sev, Message: msg, Meaning: meaning, Action: action})
}

// Doctor runs every check on pool's database and returns the findings,
// worst first. A check that cannot run (a permission, a timeout) is itself a
// warning; Doctor returns an error only when the database cannot be reached.
func Doctor(ctx context.Context, pool *pgxpool.Pool, cfg DoctorConfig) (*health.Report, error) {
	cfg = cfg.withDefaults()
	d := &doctor{pool: pool, cfg: cfg, client: cfg.Engine}
	rep := &health.Report{At: time.Now()}
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
		{"transactions.idle", d.idleInTransaction},
		{"transactions.oldest", d.oldestTransaction},
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
			d.add(c.name, health.SeverityWarn, "could not run the check: "+err.Error(),
				"this part of the database was not examined",
				"grant the doctor's role pg_monitor (GRANT pg_monitor TO <role>) and read access to holdfast's tables, or run it as the schema owner")
		}
	}
	slices.SortStableFunc(d.findings, func(a, b health.Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	rep.Findings = d.findings
	return rep, nil
}
