package pgops_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgops"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// connect opens a second, separate connection to db with an
// application_name, closed when the test ends.
func connect(t *testing.T, db *pgtest.Database, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, q pgops.Querier, sql string, args ...any) {
	t.Helper()
	if _, err := q.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// metric returns the value of the series of family name whose labels
// include want, and whether it exists.
func metric(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			}
		}
	}
	return 0, false
}

// logBuffer is a slog handler target safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond until it holds or the deadline passes. The polling
// interval paces the queries, it does not wait for anything to happen.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v; last state: %s", what, timeout, state)
		}
		<-tick.C
	}
}

// tableStat polls pg_stat_user_tables until cond holds for table.
func tableStat(t *testing.T, pool *pgxpool.Pool, table string, cond func(pgops.TableStat) bool) pgops.TableStat {
	t.Helper()
	var got pgops.TableStat
	waitFor(t, "statistics of "+table, 30*time.Second, func() (bool, string) {
		ts, err := pgops.TableStats(context.Background(), pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ts {
			if s.Table == table {
				got = s
				return cond(s), fmt.Sprintf("%+v", s)
			}
		}
		return false, "table not listed"
	})
	return got
}

// poolKey makes a pool-strategy key with n units buffered and returns the
// reservation_units partition that holds them.
func poolKey(t *testing.T, c *postgres.Client, pool *pgxpool.Pool, k holdfast.Key, n int) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.SetAvailable(ctx, k, n, "stocktake", "test"); err != nil {
		t.Fatal(err)
	}
	lvl, err := c.SetStrategy(ctx, k, holdfast.StrategyPool, n)
	if err != nil {
		t.Fatal(err)
	}
	if lvl.Pooled != n {
		t.Fatalf("pool key: %+v", lvl)
	}
	var part string
	if err := pool.QueryRow(ctx, "SELECT tableoid::regclass::text FROM reservation_units WHERE shop_id = $1 LIMIT 1", k.ShopID).Scan(&part); err != nil {
		t.Fatal(err)
	}
	return part
}

func findings(rep *health.Report, check string) string {
	var b strings.Builder
	for _, f := range rep.Find(check) {
		fmt.Fprintf(&b, "[%s %s: %s] ", f.Severity, f.Check, f.Message)
	}
	return b.String()
}

func one(t *testing.T, rep *health.Report, check string) health.Finding {
	t.Helper()
	var out []health.Finding
	for _, f := range rep.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	if len(out) != 1 {
		t.Fatalf("want one finding %s, got %d:\n%s", check, len(out), rep.Text())
	}
	return out[0]
}
