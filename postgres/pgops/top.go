package pgops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
)

// TopRowsMax bounds the callers and keys one frame of top lists.
const TopRowsMax = 10

// CallerRow is one caller's line in top: sessions now and connection-seconds
// since top started.
type CallerRow struct {
	Caller
	Sessions int     `json:"sessions"`
	Seconds  float64 `json:"seconds"`
}

// Snapshot is one frame of `holdfast top`. Rates are over Window, the time
// since the previous frame (0 on the first frame, whose rates are unknown).
type Snapshot struct {
	At       time.Time     `json:"at"`
	Database string        `json:"database"`
	Window   time.Duration `json:"window"`

	HoldsPerSecond float64 `json:"holds_per_second"`
	ActiveHolds    int64   `json:"active_holds"`
	// Claimed, Released and Expired are the holds that ended in Window.
	Claimed  int64 `json:"claimed"`
	Released int64 `json:"released"`
	Expired  int64 `json:"expired"`

	CommitsPerSecond   float64 `json:"commits_per_second"`
	RollbacksPerSecond float64 `json:"rollbacks_per_second"`
	Deadlocks          int64   `json:"deadlocks"`

	Callers           []CallerRow   `json:"callers"`
	OldestXact        time.Duration `json:"oldest_xact"`
	IdleInTransaction int           `json:"idle_in_transaction"`
	Waits             []WaitCount   `json:"waits"`

	Tables         []TableStat `json:"tables"`
	FrozenXIDAge   int64       `json:"frozen_xid_age"`
	XminHorizonAge int64       `json:"xmin_horizon_age"`

	// HotKeys are ranked by units reserved or claimed in Window (each
	// key's Activity); on the first frame, which has no window, by units
	// held.
	HotKeys []KeyFill `json:"hot_keys"`
	Pool    PoolFill  `json:"pool"`
}

// Top collects the frames of `holdfast top` from one database. It is not
// safe for concurrent use.
type Top struct {
	pool     *pgxpool.Pool
	defaults holdfast.Config
	sampler  *Sampler
	bloat    *BloatMonitor

	have    bool
	prevAt  time.Time // database clock
	prevIns int64
	prevDB  DatabaseCounters
	prevMk  ActivityMark

	// The pool summary aggregates every pool key: refreshed at most every
	// PoolFillEvery, not on every frame.
	poolFill   *PoolFill
	poolFillAt time.Time
}

// PoolFillEvery bounds how often top re-reads the pool summary, which reads
// every pool key's units.
const PoolFillEvery = 30 * time.Second

// NewTop returns a Top on pool; interval is the refresh period (each frame
// counts as one interval of connection time) and defaults the client's
// configuration (strategy, pool cap, low-water mark).
func NewTop(pool *pgxpool.Pool, defaults holdfast.Config, interval time.Duration) *Top {
	return &Top{
		pool: pool, defaults: defaults,
		sampler: NewSampler(pool, SamplerConfig{Interval: interval, IdleInTransactionLog: time.Hour}),
		bloat:   NewBloatMonitor(pool, BloatConfig{Interval: interval}),
	}
}

// Collect reads one frame.
func (t *Top) Collect(ctx context.Context) (*Snapshot, error) {
	a, err := t.sampler.SampleOnce(ctx)
	if err != nil {
		return nil, err
	}
	b, err := t.bloat.ScanOnce(ctx)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Tables: b.Tables, FrozenXIDAge: b.FrozenXIDAge, XminHorizonAge: b.XminHorizonAge,
		IdleInTransaction: len(a.IdleInTransaction), Waits: a.Waits}
	if a.Oldest != nil {
		s.OldestXact = a.Oldest.XactAge
	}
	mark, err := ReadActivityMark(ctx, t.pool)
	if err != nil {
		return nil, err
	}
	var ins int64
	since := t.prevAt
	if !t.have {
		since = time.Now().Add(24 * time.Hour) // no window yet: count nothing
	}
	err = t.pool.QueryRow(ctx, statement("hold_counts"), since).
		Scan(&ins, &s.ActiveHolds, &s.Claimed, &s.Released, &s.Expired, &s.At)
	if err != nil {
		return nil, fmt.Errorf("ops: read hold counts: %w", err)
	}
	if err := t.pool.QueryRow(ctx, statement("current_database")).Scan(&s.Database); err != nil {
		return nil, err
	}
	s.Deadlocks = a.Database.Deadlocks
	if t.have {
		s.Window = s.At.Sub(t.prevAt)
		if w := s.Window.Seconds(); w > 0 {
			s.HoldsPerSecond = float64(max(ins-t.prevIns, 0)) / w
			s.CommitsPerSecond = float64(max(a.Database.Commits-t.prevDB.Commits, 0)) / w
			s.RollbacksPerSecond = float64(max(a.Database.Rollbacks-t.prevDB.Rollbacks, 0)) / w
		}
	}
	if t.have {
		s.HotKeys, err = ActiveKeys(ctx, t.pool, t.defaults, t.prevMk, mark, TopRowsMax)
	} else {
		s.HotKeys, err = HotKeys(ctx, t.pool, t.defaults, TopRowsMax)
	}
	if err != nil {
		return nil, err
	}
	t.have, t.prevAt, t.prevIns, t.prevDB, t.prevMk = true, s.At, ins, a.Database, mark

	now := map[Caller]int{}
	for _, c := range a.Callers {
		now[c.Caller] = c.Sessions
	}
	for _, c := range t.sampler.ConnectionSeconds() {
		s.Callers = append(s.Callers, CallerRow{Caller: c.Caller, Sessions: now[c.Caller], Seconds: c.Seconds})
	}
	s.Callers = s.Callers[:min(len(s.Callers), TopRowsMax)]

	if t.poolFill == nil || time.Since(t.poolFillAt) >= PoolFillEvery {
		p, err := ReadPoolFill(ctx, t.pool, t.defaults, 0)
		if err != nil {
			return nil, err
		}
		t.poolFill, t.poolFillAt = p, time.Now()
	}
	s.Pool = *t.poolFill
	return s, nil
}

// Render draws a frame as text: no terminal control codes, lines end in
// "\n". It is a pure function of the snapshot.
func Render(s *Snapshot) string {
	var b strings.Builder
	rate := func(v float64) string {
		if s.Window <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", v)
	}
	fmt.Fprintf(&b, "holdfast top — database %s — %s\n\n", s.Database, s.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	ended := "–"
	if s.Window > 0 {
		ended = fmt.Sprintf("claimed %d  released %d  expired %d (last %s)", s.Claimed, s.Released, s.Expired, s.Window.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "HOLDS  new/s %s   active %d   ended: %s\n", rate(s.HoldsPerSecond), s.ActiveHolds, ended)
	fmt.Fprintf(&b, "DB     commits/s %s   rollbacks/s %s   deadlocks %d   oldest xact %s   idle in xact %d\n",
		rate(s.CommitsPerSecond), rate(s.RollbacksPerSecond), s.Deadlocks, s.OldestXact.Round(time.Millisecond), s.IdleInTransaction)
	fmt.Fprintf(&b, "VACUUM xmin horizon age %d xids   frozen xid age %d\n", s.XminHorizonAge, s.FrozenXIDAge)
	if len(s.Waits) > 0 {
		parts := make([]string, len(s.Waits))
		for i, w := range s.Waits {
			parts[i] = fmt.Sprintf("%s/%s %d", w.Type, w.Event, w.Sessions)
		}
		fmt.Fprintf(&b, "WAITS  %s\n", strings.Join(parts, "   "))
	}

	fmt.Fprintf(&b, "\n%-44s %-22s %5s %14s\n", "CONNECTIONS BY CALLER (app route tag)", "STATE", "NOW", "CONN-SECONDS")
	if len(s.Callers) == 0 {
		b.WriteString("(no sessions)\n")
	}
	for _, c := range s.Callers {
		who := c.Application + " " + c.Route
		if c.Tag != "" {
			who += " " + c.Tag
		}
		fmt.Fprintf(&b, "%-44s %-22s %5d %14.1f\n", clip(who, 44), clip(c.State, 22), c.Sessions, c.Seconds)
	}

	fmt.Fprintf(&b, "\n%-24s %10s %10s %7s %8s %16s %s\n", "DEAD TUPLES", "LIVE", "DEAD", "%DEAD", "AUTOVAC", "LAST AUTOVACUUM", "ALERT")
	idle := 0
	for _, t := range s.Tables {
		// The pool's hash partitions of keys no pool key hashes to stay
		// empty: listing them would bury the ones in use.
		if isPartition(t.Table) && t.Live == 0 && t.Dead == 0 && !t.Alert {
			idle++
			continue
		}
		last := "never"
		if !t.LastAutovacuum.IsZero() {
			last = s.At.Sub(t.LastAutovacuum).Round(time.Second).String() + " ago"
		}
		alert := ""
		switch {
		case t.Alert:
			alert = "ALERT"
		case !t.AboveSince.IsZero():
			alert = "above " + s.At.Sub(t.AboveSince).Round(time.Second).String()
		}
		fmt.Fprintf(&b, "%-24s %10d %10d %6.1f%% %8d %16s %s\n", clip(t.Table, 24), t.Live, t.Dead, t.DeadPercent, t.AutovacuumCount, last, alert)
	}

	if idle > 0 {
		fmt.Fprintf(&b, "(%d reservation_units partitions without rows not shown)\n", idle)
	}

	title, empty := "HOTTEST KEYS (shop/item/loc)", "(no reservations or claims in the last "+s.Window.Round(100*time.Millisecond).String()+")"
	if s.Window <= 0 {
		title, empty = "MOST HELD KEYS (shop/item/loc)", "(no active holds)"
	}
	fmt.Fprintf(&b, "\n%-30s %-8s %10s %10s %8s %8s %8s %6s\n", title, "STRATEGY", "UNITS/S", "AVAILABLE", "HELD", "POOLED", "CAP", "FILL")
	if len(s.HotKeys) == 0 {
		b.WriteString(empty + "\n")
	}
	for _, k := range s.HotKeys {
		capText, fillText := "–", "–"
		if fill, ok := k.FillPercent(); ok {
			capText, fillText = fmt.Sprint(k.PoolCap), fmt.Sprintf("%.0f%%", fill)
		}
		fmt.Fprintf(&b, "%-30s %-8s %10s %10d %8d %8d %8s %6s\n", clip(fmt.Sprintf("%d/%d/%d", k.ShopID, k.ItemID, k.LocationID), 30),
			k.Strategy, rate(float64(k.Activity)/s.Window.Seconds()), k.Available, k.Held, k.Pooled, capText, fillText)
	}
	p := s.Pool
	if p.Keys > 0 {
		fill := 100.0
		if p.Wanted > 0 {
			fill = 100 * float64(p.Pooled) / float64(p.Wanted)
		}
		fmt.Fprintf(&b, "\nPOOL   %d keys, %.0f%% filled (%d of %d units), %d below low water, %d empty\n", p.Keys, fill, p.Pooled, p.Wanted, p.Low, p.Empty)
	} else {
		b.WriteString("\nPOOL   no key uses the pool strategy\n")
	}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// isPartition reports whether table is one of reservation_units' partitions.
func isPartition(table string) bool {
	n, ok := strings.CutPrefix(table, "reservation_units_p")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
