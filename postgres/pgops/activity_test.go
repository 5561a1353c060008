package pgops_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestParseComment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		q    string
		want pgops.Comment
	}{
		{"/* app='holdfast',route='reserve' */ SELECT 1", pgops.Comment{App: "holdfast", Route: "reserve"}},
		{"  /* app='holdfast',route='claim',tag='checkout:pay' */\nUPDATE holds", pgops.Comment{App: "holdfast", Route: "claim", Tag: "checkout:pay"}},
		{"SELECT 1 /*controller='orders',action='create'*/;", pgops.Comment{Route: "orders"}},
		{"SELECT 1 /*route='x', tag = 'y'*/", pgops.Comment{Route: "x", Tag: "y"}},
		{"SELECT 1", pgops.Comment{}},
		{"/* unterminated SELECT 1", pgops.Comment{}},
		{"", pgops.Comment{}},
	}
	for _, c := range cases {
		if got := pgops.ParseComment(c.q); got != c.want {
			t.Errorf("ParseComment(%q) = %+v, want %+v", c.q, got, c.want)
		}
	}
}

// TestSamplerIdleInTransaction leaves a session idle inside a transaction
// after a tagged statement, as an application that calls a payment gateway
// between ReserveTx and commit would, and checks that the sampler attributes
// its connection time to that business process, reports it, and logs it
// once.
func TestSamplerIdleInTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t, 4)
	conn := connect(t, db, "shop-checkout")
	exec(t, conn, "BEGIN")
	exec(t, conn, "/* app='shop',route='checkout',tag='payment' */ SELECT count(*) FROM holds")
	pid := conn.PgConn().PID()

	var logs logBuffer
	s := pgops.NewSampler(db.Pool, pgops.SamplerConfig{
		Interval:             time.Second,
		IdleInTransactionLog: time.Nanosecond,
		Logger:               slog.New(slog.NewTextHandler(&logs, nil)),
	})
	reg := prometheus.NewPedanticRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.SampleOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a := s.Last()
	if len(a.IdleInTransaction) != 1 || a.IdleInTransaction[0].PID != int32(pid) {
		t.Fatalf("idle in transaction: %+v", a.IdleInTransaction)
	}
	caller := map[string]string{"application": "shop-checkout", "route": "checkout", "tag": "payment", "state": "idle in transaction"}
	if v, ok := metric(t, reg, "holdfast_pg_connection_seconds_total", caller); !ok || v != 3 {
		t.Fatalf("connection seconds = %v (present %v), want 3 (3 samples of 1s)", v, ok)
	}
	if v, ok := metric(t, reg, "holdfast_pg_sessions", caller); !ok || v != 1 {
		t.Fatalf("sessions = %v (present %v), want 1", v, ok)
	}
	if v, _ := metric(t, reg, "holdfast_pg_idle_in_transaction_sessions", nil); v != 1 {
		t.Fatalf("idle in transaction sessions = %v, want 1", v)
	}
	if v, _ := metric(t, reg, "holdfast_pg_oldest_transaction_seconds", nil); v <= 0 {
		t.Fatalf("oldest transaction = %v, want > 0", v)
	}
	// The pool's own idle connection is attributed to no route.
	if _, ok := metric(t, reg, "holdfast_pg_connection_seconds_total", map[string]string{"state": "idle", "route": "checkout"}); ok {
		t.Fatal("an idle (not in transaction) session was attributed to a route")
	}
	out := logs.String()
	if n := strings.Count(out, "session idle in transaction"); n != 1 {
		t.Fatalf("want the idle spell logged once, got %d:\n%s", n, out)
	}
	for _, want := range []string{"route=checkout", "tag=payment", "application=shop-checkout"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %s:\n%s", want, out)
		}
	}

	// After commit the session no longer counts as idle in transaction.
	exec(t, conn, "COMMIT")
	if _, err := s.SampleOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := metric(t, reg, "holdfast_pg_idle_in_transaction_sessions", nil); v != 0 {
		t.Fatalf("idle in transaction after commit = %v", v)
	}
	if v, _ := metric(t, reg, "holdfast_pg_connection_seconds_total", caller); v != 3 {
		t.Fatalf("connection seconds after commit = %v, want 3", v)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric lint: %s: %s", p.Metric, p.Text)
	}
}

// TestSamplerRuns runs the sampler as a worker and waits for its metrics.
func TestSamplerRuns(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	conn := connect(t, db, "worker-test")
	exec(t, conn, "/* app='x',route='warm' */ SELECT 1")
	s := pgops.NewSampler(db.Pool, pgops.SamplerConfig{Interval: 20 * time.Millisecond})
	reg := prometheus.NewRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil { // safe before Start
		t.Fatal(err)
	}
	m := pgops.NewMonitor(db.Pool, pgops.MonitorConfig{
		Sampler: pgops.SamplerConfig{Interval: 20 * time.Millisecond},
		Bloat:   pgops.BloatConfig{Interval: 20 * time.Millisecond},
	})
	reg2 := prometheus.NewRegistry()
	if err := m.Register(reg2); err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	waitFor(t, "sampled idle session and scanned tables", 20*time.Second, func() (bool, string) {
		v, _ := metric(t, reg2, "holdfast_pg_connection_seconds_total", map[string]string{"application": "worker-test", "state": "idle"})
		_, scanned := metric(t, reg2, "holdfast_pg_table_dead_tuples", map[string]string{"table": "reservation_units_p15"})
		return v > 0 && scanned, ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}

// Other sessions choose their own application_name and comments: the
// sampler's series stay within SeriesMax, the rest folded into "other"
// (issue #10 item 12).
func TestSamplerBoundsCallerLabels(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 2)
	const apps = 6
	for i := range apps {
		connect(t, db, fmt.Sprintf("stranger-%d", i))
	}
	s := pgops.NewSampler(db.Pool, pgops.SamplerConfig{Interval: 20 * time.Millisecond, SeriesMax: 2})
	reg := prometheus.NewRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.SampleOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		name := mf.GetName()
		if name != "holdfast_pg_connection_seconds_total" && name != "holdfast_pg_sessions" {
			continue
		}
		apps := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "application" {
					apps[l.GetValue()] = true
				}
			}
		}
		// At most SeriesMax distinct callers plus "other".
		if len(apps) > 3 || !apps["other"] {
			t.Errorf("%s: application label values %v, want at most 2 plus other", name, apps)
		}
	}
}
