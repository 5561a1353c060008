package mysqlops

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/internal/sqltext"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("mysqlops", sqlFiles, "sql")

// statement returns the embedded SQL file name.sql with ops' comment.
func statement(name string) string { return statements.Tagged(health.Op, name) }

// Recommendations the doctor grades settings against.
const (
	// HistoryWarnDefault and HistoryCriticalDefault grade InnoDB's history
	// list length (undo logs of committed transactions not yet purged).
	HistoryWarnDefault     = 100_000
	HistoryCriticalDefault = 1_000_000
	// LockWaitTimeoutMax is the largest innodb_lock_wait_timeout (seconds)
	// the doctor accepts: a reservation waiting longer for a row lock holds
	// a connection and a buyer for nothing (the engine sets 5 on its own
	// connections; the global value is what callers' own transactions get).
	LockWaitTimeoutMax = 10
	// TransactionsMax bounds the transactions read from INNODB_TRX, and
	// ConnectionsMax the connections read from the process list per sample.
	TransactionsMax = 200
	ConnectionsMax  = 2000
)

// DoctorConfig configures Doctor. The zero value of every field means its
// default.
type DoctorConfig struct {
	// Engine runs the invariant check. Nil skips it (with a warning).
	Engine holdfast.Engine
	// HistoryWarn and HistoryCritical grade the history list length.
	// Default to HistoryWarnDefault and HistoryCriticalDefault.
	HistoryWarn     int64
	HistoryCritical int64
	// TransactionWarn and TransactionCritical grade running transactions by
	// age. Default to 1 minute and 10 minutes.
	TransactionWarn     time.Duration
	TransactionCritical time.Duration
	// IdleInTransactionWarn and IdleInTransactionCritical grade
	// transactions whose connection is idle (Sleep) by transaction age.
	// Default to 5 seconds and 1 minute.
	IdleInTransactionWarn     time.Duration
	IdleInTransactionCritical time.Duration
	// LockWaitWarn: transactions waiting on a row lock for longer are a
	// finding. Defaults to 1 second.
	LockWaitWarn time.Duration
	// Samples and SampleInterval set the process-list sampling behind
	// connection-seconds by caller. Default to 10 samples 100 ms apart.
	Samples        int
	SampleInterval time.Duration
	// CheckTimeout bounds each check's queries. Defaults to 20 seconds.
	CheckTimeout time.Duration
}

func (c DoctorConfig) withDefaults() DoctorConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.TransactionWarn, time.Minute)
	def(&c.TransactionCritical, 10*time.Minute)
	def(&c.IdleInTransactionWarn, 5*time.Second)
	def(&c.IdleInTransactionCritical, time.Minute)
	def(&c.LockWaitWarn, time.Second)
	def(&c.SampleInterval, 100*time.Millisecond)
	def(&c.CheckTimeout, 20*time.Second)
	if c.HistoryWarn <= 0 {
		c.HistoryWarn = HistoryWarnDefault
	}
	if c.HistoryCritical <= 0 {
		c.HistoryCritical = HistoryCriticalDefault
	}
	if c.Samples <= 0 {
		c.Samples = 10
	}
	return c
}

type doctor struct {
	db       *sql.DB
	cfg      DoctorConfig
	findings []health.Finding
}

func (d *doctor) add(check string, sev health.Severity, msg, meaning, action string) {
	d.findings = append(d.findings, health.Finding{Check: check, Severity: sev, Message: msg, Meaning: meaning, Action: action})
}

// Doctor runs every check on db's server (and the engine's invariant check)
// and returns the findings, worst first, in the report shape of package health.
// A check that cannot run (a permission, a timeout) is itself a warning;
// Doctor returns an error only when the server cannot be reached.
func Doctor(ctx context.Context, db *sql.DB, cfg DoctorConfig) (*health.Report, error) {
	cfg = cfg.withDefaults()
	d := &doctor{db: db, cfg: cfg}
	rep := &health.Report{At: time.Now()}
	if err := db.QueryRowContext(ctx, statement("server")).Scan(&rep.Database, &rep.Server); err != nil {
		return nil, fmt.Errorf("mysqlops: doctor: %w", err)
	}
	checks := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"purge", d.checkHistory},
		{"transactions", d.checkTransactions},
		{"settings", d.checkSettings},
		{"connections", d.checkConnections},
		{"invariant", d.checkInvariant},
		{"safety", d.checkSafety}, // safety.go
		{"galera", d.checkGalera}, // galera.go
	}
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, cfg.CheckTimeout+time.Duration(cfg.Samples)*cfg.SampleInterval)
		err := c.fn(cctx)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			d.add(c.name, health.SeverityWarn, "check could not run: "+err.Error(), "", "grant the doctor's user PROCESS (information_schema.INNODB_TRX, PROCESSLIST) and retry")
		}
	}
	slices.SortStableFunc(d.findings, func(a, b health.Finding) int { return rank(b.Severity) - rank(a.Severity) })
	rep.Findings = d.findings
	return rep, nil
}

func rank(s health.Severity) int {
	switch s {
	case health.SeverityCritical:
		return 2
	case health.SeverityWarn:
		return 1
	}
	return 0
}

// HistoryListLength reads InnoDB's history list length: the undo logs of
// committed transactions that purge has not removed yet, MySQL's form of
// PostgreSQL's dead tuples. MariaDB reports it as the status variable
// Innodb_history_list_length; MySQL 8 as the INNODB_METRICS counter
// trx_rseg_history_len.
func HistoryListLength(ctx context.Context, db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, statement("history_status")).Scan(&n)
	if err == nil {
		return n, nil
	}
	if err2 := db.QueryRowContext(ctx, statement("history_metrics")).Scan(&n); err2 != nil {
		return 0, errors.Join(err, err2)
	}
	return n, nil
}

func (d *doctor) checkHistory(ctx context.Context) error {
	n, err := HistoryListLength(ctx, d.db)
	if err != nil {
		return err
	}
	sev := health.SeverityOK
	switch {
	case n >= d.cfg.HistoryCritical:
		sev = health.SeverityCritical
	case n >= d.cfg.HistoryWarn:
		sev = health.SeverityWarn
	}
	msg := fmt.Sprintf("history list length %d (warn at %d, critical at %d)", n, d.cfg.HistoryWarn, d.cfg.HistoryCritical)
	if sev == health.SeverityOK {
		d.add("purge.history_list_length", sev, msg, "", "")
		return nil
	}
	d.add("purge.history_list_length", sev, msg,
		"purge is behind: old row versions pile up in the undo logs, every read walks longer version chains and the reservation tables' hot rows get slower — the MySQL form of PostgreSQL's dead tuples",
		"find the oldest transaction or snapshot (transactions.* findings) and end it; then check innodb_purge_threads and that purge keeps up with the write rate")
	return nil
}

// Transaction is an open InnoDB transaction with its connection.
type Transaction struct {
	Thread       int64
	State        string // RUNNING, LOCK WAIT, …
	Age          time.Duration
	LockWait     time.Duration
	Command      string // the connection's: Query, Sleep, …
	User, Host   string
	Query        string
	Caller       string
	RowsLocked   int64
	RowsModified int64
}

// Idle reports whether the transaction's connection is idle: the
// transaction is open but nobody is running a statement in it.
func (t Transaction) Idle() bool { return t.Command == "Sleep" }

// Transactions reads the server's open transactions, oldest first, at most
// TransactionsMax, joined to the process list for the connection's state,
// user and current statement (whose comment tag names the caller).
func Transactions(ctx context.Context, db *sql.DB) ([]Transaction, error) {
	rows, err := db.QueryContext(ctx, statement("transactions"), TransactionsMax)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Transaction
	for rows.Next() {
		var t Transaction
		var age, wait float64
		if err := rows.Scan(&t.Thread, &t.State, &age, &wait, &t.Command, &t.User, &t.Host, &t.Query, &t.RowsLocked, &t.RowsModified); err != nil {
			return nil, err
		}
		t.Age, t.LockWait = seconds(age), seconds(wait)
		t.Caller = CallerOf(t.Query)
		if t.Idle() && t.Query == "" {
			t.Caller = "unknown (idle: its last statement is not visible)"
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func (d *doctor) checkTransactions(ctx context.Context) error {
	txs, err := Transactions(ctx, d.db)
	if err != nil {
		return err
	}
	long, idle, waits := 0, 0, 0
	for _, t := range txs {
		who := fmt.Sprintf("thread %d (%s@%s, caller %s)", t.Thread, t.User, t.Host, t.Caller)
		if t.State == "LOCK WAIT" && t.LockWait >= d.cfg.LockWaitWarn {
			waits++
			d.add("locks.waits", health.SeverityWarn,
				fmt.Sprintf("%s has waited %v for a row lock", who, health.RoundDuration(t.LockWait)),
				"a transaction holds rows others need; reservations queue behind it until innodb_lock_wait_timeout",
				"find the holder among the long or idle transactions and end it; keep slow work out of transactions that lock reservation rows")
		}
		if t.Idle() {
			sev := grade(t.Age, d.cfg.IdleInTransactionWarn, d.cfg.IdleInTransactionCritical)
			if sev == health.SeverityOK {
				continue
			}
			idle++
			d.add("transactions.idle", sev,
				fmt.Sprintf("%s idle in a transaction open for %v, %d rows locked, %d modified", who, t.Age.Round(time.Second), t.RowsLocked, t.RowsModified),
				"an application opened a transaction and is not using it: its row locks block reservations on those keys and its read view holds back purge",
				"fix the caller (commit or roll back before slow work such as payment calls); KILL "+strconv.FormatInt(t.Thread, 10)+" ends it now")
			continue
		}
		sev := grade(t.Age, d.cfg.TransactionWarn, d.cfg.TransactionCritical)
		if sev == health.SeverityOK {
			continue
		}
		long++
		d.add("transactions.long", sev,
			fmt.Sprintf("%s in a transaction open for %v (%s), %d rows locked: %s", who, t.Age.Round(time.Second), t.State, t.RowsLocked, clip(t.Query, 120)),
			"a long transaction holds its locks and its read view the whole time: purge cannot remove row versions newer than its start",
			"bound the caller's transaction; KILL "+strconv.FormatInt(t.Thread, 10)+" ends it now")
	}
	d.add("transactions", health.SeverityOK, fmt.Sprintf("%d open transactions: %d long, %d idle, %d waiting on locks", len(txs), long, idle, waits), "", "")
	return nil
}

func grade(age, warn, critical time.Duration) health.Severity {
	switch {
	case age >= critical:
		return health.SeverityCritical
	case age >= warn:
		return health.SeverityWarn
	}
	return health.SeverityOK
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// globalVariables reads the settings the doctor grades (information_schema
// on MariaDB, performance_schema on MySQL 8). A setting absent from the
// server is absent from the map.
func (d *doctor) globalVariables(ctx context.Context) (map[string]string, error) {
	rows, err := d.db.QueryContext(ctx, statement("variables"))
	if err != nil {
		var err2 error
		if rows, err2 = d.db.QueryContext(ctx, statement("variables_ps")); err2 != nil {
			return nil, errors.Join(err, err2)
		}
	}
	defer rows.Close()
	vars := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		vars[k] = v
	}
	return vars, rows.Err()
}

func (d *doctor) checkSettings(ctx context.Context) error {
	vars, err := d.globalVariables(ctx)
	if err != nil {
		return err
	}
	iso, ok := vars["transaction_isolation"]
	if !ok {
		iso = vars["tx_isolation"]
	}
	switch iso {
	case "READ-COMMITTED":
		d.add("setting.isolation", health.SeverityOK, "global transaction isolation READ-COMMITTED", "", "")
	case "":
		d.add("setting.isolation", health.SeverityWarn, "the server reports no transaction isolation setting", "", "")
	default:
		d.add("setting.isolation", health.SeverityWarn,
			fmt.Sprintf("global transaction isolation is %s; holdfast recommends READ-COMMITTED", iso),
			"holdfast's own transactions are READ COMMITTED regardless, but a caller's transaction begun with the server default and passed to a …Tx operation is "+iso+": there a SKIP LOCKED take on an empty range takes gap locks that block replenishment inserts and deadlock, and a refill inside it is refused (it would read a stale snapshot)",
			"set transaction_isolation (tx_isolation before MariaDB 11.1) = READ-COMMITTED in the server configuration, or begin callers' transactions with mysql.TxOptions()")
	}
	if v, ok := vars["innodb_lock_wait_timeout"]; ok {
		n, _ := strconv.Atoi(v)
		if n > LockWaitTimeoutMax {
			d.add("setting.innodb_lock_wait_timeout", health.SeverityWarn,
				fmt.Sprintf("innodb_lock_wait_timeout is %d s globally; holdfast recommends at most %d", n, LockWaitTimeoutMax),
				"a transaction stuck behind a row lock waits this long before it fails: a buyer waits, and a connection is held, for nothing (holdfast's own connections set 5 s, callers' connections get this)",
				fmt.Sprintf("SET GLOBAL innodb_lock_wait_timeout = %d, and the same in the server configuration", mysqlLockWait))
		} else {
			d.add("setting.innodb_lock_wait_timeout", health.SeverityOK, fmt.Sprintf("innodb_lock_wait_timeout %d s", n), "", "")
		}
	}
	if v, ok := vars["innodb_thread_concurrency"]; ok {
		if v != "0" {
			d.add("setting.innodb_thread_concurrency", health.SeverityWarn,
				fmt.Sprintf("innodb_thread_concurrency is %s; holdfast recommends 0 (no limit)", v),
				"InnoDB admits only this many threads at once and queues the rest: under a flash sale the queue, not the rows, becomes the bottleneck, and a thread holding row locks can wait in it while others wait on those locks",
				"SET GLOBAL innodb_thread_concurrency = 0 and bound concurrency with the application's connection pools instead")
		} else {
			d.add("setting.innodb_thread_concurrency", health.SeverityOK, "innodb_thread_concurrency 0 (no limit)", "", "")
		}
	} else {
		d.add("setting.innodb_thread_concurrency", health.SeverityOK, "innodb_thread_concurrency does not exist on this server (MariaDB 10.6 removed it: no InnoDB thread queue)", "", "")
	}
	return nil
}

// mysqlLockWait is the innodb_lock_wait_timeout the doctor suggests.
const mysqlLockWait = 5

func (d *doctor) checkInvariant(ctx context.Context) error {
	if d.cfg.Engine == nil {
		d.add("invariant", health.SeverityWarn, "not checked: no engine given", "", "")
		return nil
	}
	rep, err := d.cfg.Engine.CheckInvariant(ctx)
	if err != nil {
		return err
	}
	if rep.OK() {
		d.add("invariant", health.SeverityOK, fmt.Sprintf("pooled + held <= available on all %d keys", rep.Keys), "", "")
		return nil
	}
	d.add("invariant", health.SeverityCritical, "invariant broken: "+rep.String(),
		"units are promised twice: a buyer can hold a unit that cannot be claimed",
		"stop writes to the affected keys and investigate (this is a bug: report it with the report above)")
	return nil
}
