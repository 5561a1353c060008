package patroni_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/health"
	migrate "github.com/holdfast/holdfast/postgres/migrations"
	"github.com/holdfast/holdfast/postgres/pgops"
)

// TestDoctorReplication: on the Patroni cluster, holdfast doctor's
// replication.synchronous reports the synchronous standby (ok, with the
// timeline) to a role that may see it (a superuser; holdfast's own role is
// told to get pg_monitor); on a standby alone it is critical (holdfast
// cannot write there).
func TestDoctorReplication(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// holdfast's own role cannot see the standbys' state: said so.
	f := finding(t, ctx, pool, "replication.synchronous")
	if f.Severity != health.SeverityWarn || !strings.Contains(f.Message, "cannot see") || !strings.Contains(f.Message, "2 standbys streaming") {
		t.Fatalf("unprivileged role: %+v, want a warning that it cannot see the standbys' state", f)
	}
	super, err := pgxpool.New(ctx, cluster.SuperURL("holdfast"))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	f = finding(t, ctx, super, "replication.synchronous")
	if f.Severity != health.SeverityOK || !strings.Contains(f.Message, "1 synchronous") || !strings.Contains(f.Message, "2 standbys streaming") {
		t.Fatalf("primary of a whole cluster: %+v, want ok with 1 synchronous of 2 standbys", f)
	}
	leader, err := cluster.Primary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if n == leader {
			continue
		}
		sp, err := pgxpool.New(ctx, cluster.NodeURL(n, "holdfast"))
		if err != nil {
			t.Fatal(err)
		}
		// The standby must have replayed the migrations run above first (the
		// doctor refuses an outdated schema): poll its replay position
		// up to the primary's.
		var at string
		if err := super.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&at); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			var caught bool
			if err := sp.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", at).Scan(&caught); err != nil {
				t.Fatal(err)
			}
			if caught {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("standby %s has not replayed up to %s after 60 s", n, at)
			}
			time.Sleep(20 * time.Millisecond)
		}
		f := finding(t, ctx, sp, "replication.synchronous")
		sp.Close()
		if f.Severity != health.SeverityCritical || !strings.Contains(f.Message, "standby") {
			t.Fatalf("standby %s: %+v, want critical", n, f)
		}
		break
	}
}

func finding(t *testing.T, ctx context.Context, pool *pgxpool.Pool, check string) health.Finding {
	t.Helper()
	rep, err := pgops.Doctor(ctx, pool, pgops.DoctorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Check == check {
			t.Logf("%s: %s", f.Severity, f.Message)
			return f
		}
	}
	t.Fatalf("no %s finding:\n%s", check, rep.Text())
	return health.Finding{}
}
