package postgres_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/pgtest"
	"github.com/holdfast/holdfast/postgres"
)

// TestFollowResetsOnReadOnly: a pool that meets a read-only answer (25006,
// what a demoted primary gives) is reset — its connections are dropped and
// the next is chosen again — and a multi-host string whose first host is
// down reaches the next one, which is then tried first. Without Follow the
// pool keeps its connection (Resets stays 0).
func TestFollowResetsOnReadOnly(t *testing.T) {
	db := pgtest.DB(t, 4)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there now: connection refused
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	live := cfg.ConnConfig.Host + ":" + itoa(cfg.ConnConfig.Port)
	multi := strings.Replace(db.URL, live, deadAddr+","+live, 1)
	cfg, err = pgxpool.ParseConfig(multi)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ConnConfig.Fallbacks) != 1 {
		t.Fatalf("want one fallback in %q", multi)
	}
	f := postgres.Follow(cfg)
	cfg.MaxConns = 1
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	f.Attach(pool)
	if err := postgres.IsPrimary(ctx, pool); err != nil {
		t.Fatalf("IsPrimary through a dead first host: %v", err)
	}
	var pid1 int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid1); err != nil {
		t.Fatal(err)
	}
	// The session turns read-only, as a demoted primary's would.
	if _, err := pool.Exec(ctx, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.IsPrimary(ctx, pool); !errors.Is(err, postgres.ErrNotPrimary) {
		t.Fatalf("IsPrimary on a read-only session: %v, want ErrNotPrimary", err)
	}
	_, err = pool.Exec(ctx, "CREATE TEMP TABLE follow_probe (id int)")
	if postgres.SQLState(err) != "25006" {
		t.Fatalf("write on a read-only session: %v, want 25006", err)
	}
	if f.Resets() != 1 {
		t.Fatalf("resets %d after a read-only answer, want 1", f.Resets())
	}
	var pid2 int
	if err := pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid2); err != nil {
		t.Fatal(err)
	}
	if pid2 == pid1 {
		t.Fatalf("the pool kept its read-only connection (backend %d)", pid1)
	}
	if err := postgres.IsPrimary(ctx, pool); err != nil {
		t.Fatalf("IsPrimary after the reset: %v", err)
	}
}

func itoa(p uint16) string {
	b := []byte{}
	for ; p > 0; p /= 10 {
		b = append([]byte{byte('0' + p%10)}, b...)
	}
	return string(b)
}
