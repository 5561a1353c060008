package pgops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/holdfast/holdfast/health"
)

// The doctor's checks of sessions: connections, sessions idle in
// transaction and the oldest transaction (activity.*).

func (d *doctor) connections(ctx context.Context) error {
	var used, maxConns int
	if err := d.pool.QueryRow(ctx, statement("connections")).Scan(&used, &maxConns); err != nil {
		return err
	}
	msg := fmt.Sprintf("%d of max_connections %d client connections in use", used, maxConns)
	if used*100 >= maxConns*80 {
		d.add("connections", health.SeverityWarn, msg,
			"PostgreSQL forks a backend per connection; near the limit new connections fail and every backend costs memory and snapshot time",
			"put PgBouncer (transaction pooling) in front and shrink the applications' pools; find who holds them with `holdfast top` or holdfast_pg_connection_seconds_total")
	} else {
		d.add("connections", health.SeverityOK, msg, "", "")
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
			describeSession(s), health.RoundDuration(s.StateAge), health.RoundDuration(s.XactAge), truncate(oneLine(s.Query), 120))
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
		d.add("transactions.idle", health.SeverityCritical, strings.Join(append(crit, warn...), "\n         "), meaning, action)
	case len(warn) > 0:
		d.add("transactions.idle", health.SeverityWarn, strings.Join(warn, "\n         "), meaning, action)
	default:
		d.add("transactions.idle", health.SeverityOK, fmt.Sprintf("%d sessions idle in transaction, none for %s or longer", len(a.IdleInTransaction), d.cfg.IdleInTransactionWarn), "", "")
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
		d.add("transactions.oldest", health.SeverityOK, "no open transaction", "", "")
		return nil
	}
	o := *a.Oldest
	msg := fmt.Sprintf("oldest transaction open %s: %s, state %s, statement: %s",
		health.RoundDuration(o.XactAge), describeSession(o), o.State, truncate(oneLine(o.Query), 120))
	sev := health.SeverityOK
	switch {
	case o.XactAge >= d.cfg.TransactionCritical:
		sev = health.SeverityCritical
	case o.XactAge >= d.cfg.TransactionWarn:
		sev = health.SeverityWarn
	}
	if sev == health.SeverityOK {
		d.add("transactions.oldest", sev, msg, "", "")
		return nil
	}
	d.add("transactions.oldest", sev, msg,
		"a long transaction holds its connection and locks, and its snapshot keeps vacuum from removing any tuple that died after it began, in every table of the database",
		"find why the caller keeps it open (its route/tag names the business process); end it with SELECT pg_cancel_backend(<pid>) or pg_terminate_backend(<pid>); bound it with statement_timeout / idle_in_transaction_session_timeout")
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
