package pgops_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestBloatAlert leaves 2,000 dead tuples in a partition whose autovacuum is
// off and walks the monitor's clock through the alert window.
func TestBloatAlert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	c, err := postgres.New(db.Pool, holdfast.Config{StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k := holdfast.Key{ShopID: 11, ItemID: 1, LocationID: 1}
	part := poolKey(t, c, db.Pool, k, 1200)
	exec(t, db.Pool, "ALTER TABLE "+part+" SET (autovacuum_enabled = false)")
	if _, err := c.SetAvailable(ctx, k, 0, "stocktake", "gone"); err != nil {
		t.Fatal(err)
	}
	tableStat(t, db.Pool, part, func(s pgops.TableStat) bool { return s.Dead >= 1200 })

	clk := pgtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var logs logBuffer
	m := pgops.NewBloatMonitor(db.Pool, pgops.BloatConfig{Window: 5 * time.Minute, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	scan := func() pgops.TableStat {
		t.Helper()
		b, err := m.ScanOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range b.Tables {
			if s.Table == part {
				return s
			}
		}
		t.Fatalf("%s not scanned", part)
		return pgops.TableStat{}
	}
	alert := func() float64 {
		v, ok := metric(t, reg, "holdfast_pg_table_bloat_alert", map[string]string{"table": part})
		if !ok {
			t.Fatal("no bloat alert series")
		}
		return v
	}

	s := scan()
	if s.Alert || !s.AboveSince.Equal(clk.Now()) || s.DeadPercent != 100 {
		t.Fatalf("first scan: %+v", s)
	}
	if v, _ := metric(t, reg, "holdfast_pg_table_dead_tuples", map[string]string{"table": part}); v < 1200 {
		t.Fatalf("dead tuples metric %v", v)
	}
	if v, _ := metric(t, reg, "holdfast_pg_table_dead_ratio", map[string]string{"table": part}); v != 1 {
		t.Fatalf("dead ratio metric %v", v)
	}
	if alert() != 0 {
		t.Fatal("alert before the window")
	}
	// Other partitions have nothing dead: no alert, no spell.
	if v, ok := metric(t, reg, "holdfast_pg_table_bloat_alert", map[string]string{"table": "reservation_units_p0"}); !ok || v != 0 {
		t.Fatalf("p0 alert %v %v", v, ok)
	}
	clk.Advance(4 * time.Minute)
	if s := scan(); s.Alert || alert() != 0 {
		t.Fatalf("alert inside the window: %+v", s)
	}
	clk.Advance(time.Minute)
	if s := scan(); !s.Alert || alert() != 1 {
		t.Fatalf("no alert after the window: %+v", s)
	}
	clk.Advance(time.Minute)
	scan()
	if n := strings.Count(logs.String(), "bloat alert: vacuum is behind"); n != 1 || !strings.Contains(logs.String(), "table="+part) {
		t.Fatalf("alert logged %d times:\n%s", n, logs.String())
	}
	if v, _ := metric(t, reg, "holdfast_pg_database_frozen_xid_age", nil); v <= 0 {
		t.Fatalf("frozen xid age %v", v)
	}

	// Vacuum catches up: the alert clears.
	exec(t, db.Pool, "VACUUM "+part)
	tableStat(t, db.Pool, part, func(s pgops.TableStat) bool { return s.Dead == 0 })
	clk.Advance(time.Minute)
	if s := scan(); s.Alert || !s.AboveSince.IsZero() || alert() != 0 {
		t.Fatalf("alert after vacuum: %+v", s)
	}
	if !strings.Contains(logs.String(), "bloat alert cleared") {
		t.Fatalf("clearing not logged:\n%s", logs.String())
	}
	// Above the line again: the window starts over.
	clk.Advance(time.Minute)
	if s := scan(); s.Alert {
		t.Fatalf("alert without a new spell: %+v", s)
	}
}
