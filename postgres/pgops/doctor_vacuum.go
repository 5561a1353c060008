package pgops

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/health"
)

// The doctor's checks of what vacuum needs: the xmin horizon
// (vacuum.xmin_horizon), bloat and the frozen XID age (vacuum.frozen_xid_age).

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
	sev := health.SeverityOK
	var lines []string
	for _, h := range hs {
		age := int64(0)
		if h.age != nil {
			age = *h.age
		}
		s := health.SeverityOK
		var line string
		switch h.kind {
		case "session":
			x := seconds(0)
			if h.xact != nil {
				x = seconds(*h.xact)
			}
			c := ParseComment(h.query)
			line = fmt.Sprintf("session pid %s application=%q route=%q (%s) holds a snapshot %d transactions old, open %s",
				h.name, cmp.Or(h.caller, "untagged"), cmp.Or(c.Route, "none"), h.state, age, health.RoundDuration(x))
			switch {
			case x >= d.cfg.TransactionCritical:
				s = health.SeverityCritical
			case x >= d.cfg.TransactionWarn:
				s = health.SeverityWarn
			}
		case "replication slot":
			line = fmt.Sprintf("replication slot %q (%s, %s) holds xmin %d transactions old", h.name, h.caller, h.state, age)
			if h.state == "inactive" {
				s = health.SeverityCritical
			} else if age > 10_000_000 {
				s = health.SeverityWarn
			}
		default:
			x := seconds(0)
			if h.xact != nil {
				x = seconds(*h.xact)
			}
			line = fmt.Sprintf("prepared transaction %q (owner %s) holds xmin %d transactions old, prepared %s ago", h.name, h.caller, age, x.Round(time.Second))
			if x >= d.cfg.TransactionWarn {
				s = health.SeverityCritical
			}
		}
		if s.Rank() > sev.Rank() {
			sev = s
		}
		if s != health.SeverityOK {
			lines = append(lines, line)
		}
	}
	if sev == health.SeverityOK {
		d.add("vacuum.xmin_horizon", health.SeverityOK, fmt.Sprintf("%d snapshot holders, none old enough to matter", len(hs)), "", "")
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
		sev := health.SeverityOK
		if t.Dead >= d.cfg.MinDeadTuples {
			switch {
			case t.DeadPercent > d.cfg.DeadPercentCritical:
				sev = health.SeverityCritical
			case t.DeadPercent > d.cfg.DeadPercentWarn:
				sev = health.SeverityWarn
			}
		}
		if sev == health.SeverityOK {
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
	d.add("bloat", health.SeverityOK, fmt.Sprintf("%d of %d churning tables within %.0f%% dead", good, len(tables), d.cfg.DeadPercentWarn), "", "")
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
		d.add("vacuum.frozen_xid_age", health.SeverityCritical, msg,
			"half-way to transaction ID wraparound: PostgreSQL stops accepting writes when it gets there",
			"find what holds vacuum back (vacuum.xmin_horizon), then VACUUM (FREEZE, VERBOSE) the oldest tables (ORDER BY age(relfrozenxid) DESC in pg_class)")
	case b.FreezeMaxAge > 0 && b.FrozenXIDAge > b.FreezeMaxAge+b.FreezeMaxAge/4:
		d.add("vacuum.frozen_xid_age", health.SeverityWarn, msg,
			"anti-wraparound vacuum is due and not keeping up; reservation_units consumes transaction IDs fast, and an anti-wraparound vacuum should never be the first to run on a hot partition",
			"give autovacuum more workers or less throttling, and check vacuum.xmin_horizon")
	default:
		d.add("vacuum.frozen_xid_age", health.SeverityOK, msg, "", "")
	}
	return nil
}
