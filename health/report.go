// Package health is the shape of a database health report, `holdfast
// doctor`'s: findings graded ok, warn or critical, each saying what was
// seen, what it means and what to do. Every database's checks produce it
// (postgres/pgops.Doctor, mysql/mysqlops.Doctor), so the console, the CLI
// and the JSON output read either engine alike; the check groups both name
// alike are listed in Groups.
package health

import (
	"strings"
	"time"
)

// Op is the operation tag the operator tools' own statements carry in
// their sqlcommenter comment (every engine's doctor, sampler and top), so
// their queries are attributed like everyone else's.
const Op = "ops"

// Groups are the check groups (a Finding.Check up to its first dot) that
// every engine's doctor reports, under these names, on a healthy database
// too, so a dashboard or a script reads either engine alike:
//
//   - connections: who holds connections (PostgreSQL's connections,
//     MySQL's connections.by_caller);
//   - invariant: the engine's CheckInvariant;
//   - safety: keys that keep a safety stock (SafetyFindings);
//   - setting: server settings holdfast depends on (setting.<name>);
//   - transactions: open transactions — transactions.idle (idle in a
//     transaction) on both, transactions.oldest (PostgreSQL) and
//     transactions.long (MySQL).
//
// locks.waits (sessions waiting on a row lock) is reported alike when a
// session waits. The rest are one database's own: PostgreSQL's vacuum,
// bloat, storage, schema, pool, replenish, database, webhooks; MySQL's
// purge (InnoDB's history list, its counterpart of vacuum).
var Groups = []string{"connections", "invariant", "safety", "setting", "transactions"}

// Severity grades a finding. Only critical findings fail `holdfast doctor`.
type Severity string

const (
	SeverityOK       Severity = "ok"
	SeverityWarn     Severity = "warn"
	SeverityCritical Severity = "critical"
)

// Rank orders severities: critical 2, warn 1, ok 0.
func (s Severity) Rank() int {
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
		if f.Severity.Rank() > w.Rank() {
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
