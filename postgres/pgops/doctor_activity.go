package pgops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/health"
)

// The doctor's checks of the server's activity: lock waits (locks.waits) and
// the database's counters (database.deadlocks, database.rollbacks).

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
	sev := health.SeverityOK
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s/%s: %d (longest %s)", w.typ, w.event, w.n, health.RoundDuration(seconds(w.longest))))
		if w.typ == "Lock" && seconds(w.longest) >= d.cfg.LockWaitWarn {
			sev = health.SeverityWarn
		}
	}
	if len(parts) == 0 {
		d.add("locks.waits", health.SeverityOK, "no active session is waiting", "", "")
		return nil
	}
	msg := "active sessions waiting by wait_event: " + strings.Join(parts, ", ")
	if sev == health.SeverityOK {
		d.add("locks.waits", health.SeverityOK, msg, "", "")
		return nil
	}
	d.add("locks.waits", sev, msg,
		"sessions queue on heavyweight locks (Lock/transactionid, Lock/tuple: rows; Lock/advisory: holdfast's per-key locks); if instead most waits are Client or IPC and throughput is flat, the limit is connections, not locks",
		"find the blocker with SELECT pid, pg_blocking_pids(pid), query FROM pg_stat_activity WHERE wait_event_type = 'Lock'; check transactions.idle; keep lock_timeout short")
	return nil
}

func (d *doctor) databaseCounters(ctx context.Context) error {
	c, err := ReadDatabaseCounters(ctx, d.pool)
	if err != nil {
		return err
	}
	since := "since statistics reset " + c.StatsReset.UTC().Format(time.RFC3339)
	if c.Deadlocks > 0 {
		d.add("database.deadlocks", health.SeverityWarn, fmt.Sprintf("%d deadlocks %s", c.Deadlocks, since),
			"two transactions took locks in opposite orders; holdfast's own paths lock in one order (holds, keys in order, buffers) and retry, so deadlocks point at the application's transactions around the …Tx calls or hand-written SQL",
			"set log_lock_waits = on and read the DETAIL of the deadlock messages in the server log; lock in holdfast's order (checkout first, then keys sorted)")
	} else {
		d.add("database.deadlocks", health.SeverityOK, "no deadlocks "+since, "", "")
	}
	total := c.Commits + c.Rollbacks
	share := 0.0
	if total > 0 {
		share = 100 * float64(c.Rollbacks) / float64(total)
	}
	msg := fmt.Sprintf("%d rollbacks of %d transactions (%.1f%%) %s", c.Rollbacks, total, share, since)
	if total >= 1000 && share > 25 {
		d.add("database.rollbacks", health.SeverityWarn, msg,
			"holdfast rolls back a reservation that finds too little stock and retries on deadlocks or serialization failures, so some rollbacks are normal; a high share means wasted work: sold-out keys hammered, or retries",
			"compare with holdfast_engine_retries_total by SQLSTATE and the reservation outcomes; sold-out keys should show as insufficient_stock, not as retries")
	} else {
		d.add("database.rollbacks", health.SeverityOK, msg, "", "")
	}
	return nil
}
