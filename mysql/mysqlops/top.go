package mysqlops

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// TopSnapshot is one frame of `holdfast top` on MySQL/MariaDB. Rates are
// over Window, the time since the previous frame (0 on the first frame,
// whose rates are unknown).
type TopSnapshot struct {
	At       time.Time     `json:"at"`
	Database string        `json:"database"`
	Server   string        `json:"server"`
	Window   time.Duration `json:"window"`

	HoldsPerSecond float64 `json:"holds_per_second"`
	ActiveHolds    int64   `json:"active_holds"`
	// Claimed, Released and Expired are the holds that ended in Window.
	Claimed  int64 `json:"claimed"`
	Released int64 `json:"released"`
	Expired  int64 `json:"expired"`

	HistoryListLength int64           `json:"history_list_length"`
	Transactions      int             `json:"transactions"`
	OldestXact        time.Duration   `json:"oldest_xact"`
	IdleInTransaction int             `json:"idle_in_transaction"`
	LockWaits         int             `json:"lock_waits"`
	Callers           []CallerSeconds `json:"callers"`
}

// TopRowsMax bounds the callers a frame lists.
const TopRowsMax = 10

// Top collects the frames of `holdfast top` from one MySQL database:
// holds, purge lag, open transactions and connection-seconds by caller
// (one process-list sample per frame, counted as one interval). It is not
// safe for concurrent use.
type Top struct {
	db       *sql.DB
	interval time.Duration
	have     bool
	prevAt   time.Time // database clock
	seconds  map[string]float64
}

// NewTop returns a Top on db refreshing every interval.
func NewTop(db *sql.DB, interval time.Duration) *Top {
	return &Top{db: db, interval: interval, seconds: map[string]float64{}}
}

// Collect reads one frame.
func (t *Top) Collect(ctx context.Context) (*TopSnapshot, error) {
	s := &TopSnapshot{}
	if err := t.db.QueryRowContext(ctx, statement("server")).Scan(&s.Database, &s.Server); err != nil {
		return nil, err
	}
	since := t.prevAt
	if !t.have {
		since = time.Now().UTC().Add(24 * time.Hour) // no window yet: count nothing
	}
	var created int64
	err := t.db.QueryRowContext(ctx, statement("hold_counts"), since, since, since, since).
		Scan(&created, &s.ActiveHolds, &s.Claimed, &s.Released, &s.Expired, &s.At)
	if err != nil {
		return nil, fmt.Errorf("mysqlops: read hold counts: %w", err)
	}
	if t.have {
		s.Window = s.At.Sub(t.prevAt)
		if w := s.Window.Seconds(); w > 0 {
			s.HoldsPerSecond = float64(created) / w
		}
	}
	t.have, t.prevAt = true, s.At
	if s.HistoryListLength, err = HistoryListLength(ctx, t.db); err != nil {
		return nil, err
	}
	txs, err := Transactions(ctx, t.db)
	if err != nil {
		return nil, err
	}
	s.Transactions = len(txs)
	for _, tx := range txs {
		s.OldestXact = max(s.OldestXact, tx.Age)
		if tx.Idle() {
			s.IdleInTransaction++
		}
		if tx.LockWait > 0 {
			s.LockWaits++
		}
	}
	now, err := ConnectionSeconds(ctx, t.db, 1, t.interval)
	if err != nil {
		return nil, err
	}
	for _, c := range now {
		t.seconds[c.Caller] += c.Seconds
	}
	for c, sec := range t.seconds {
		s.Callers = append(s.Callers, CallerSeconds{Caller: c, Seconds: sec})
	}
	sortCallers(s.Callers)
	s.Callers = s.Callers[:min(len(s.Callers), TopRowsMax)]
	return s, nil
}

// RenderTop draws a frame as text: no terminal control codes, lines end
// in "\n". It is a pure function of the snapshot.
func RenderTop(s *TopSnapshot) string {
	var b strings.Builder
	rate := func(v float64) string {
		if s.Window <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", v)
	}
	fmt.Fprintf(&b, "holdfast top — database %s on %s — %s\n\n", s.Database, s.Server, s.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	ended := "–"
	if s.Window > 0 {
		ended = fmt.Sprintf("claimed %d  released %d  expired %d (last %s)", s.Claimed, s.Released, s.Expired, s.Window.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "HOLDS  new/s %s   active %d   ended: %s\n", rate(s.HoldsPerSecond), s.ActiveHolds, ended)
	fmt.Fprintf(&b, "DB     open transactions %d   oldest xact %s   idle in xact %d   lock waits %d\n",
		s.Transactions, s.OldestXact.Round(time.Millisecond), s.IdleInTransaction, s.LockWaits)
	fmt.Fprintf(&b, "PURGE  history list length %d\n", s.HistoryListLength)
	fmt.Fprintf(&b, "\n%-44s %14s\n", "CONNECTIONS BY CALLER (app/route)", "CONN-SECONDS")
	if len(s.Callers) == 0 {
		b.WriteString("(no sessions)\n")
	}
	for _, c := range s.Callers {
		fmt.Fprintf(&b, "%-44s %14.1f\n", clip(c.Caller, 44), c.Seconds)
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
