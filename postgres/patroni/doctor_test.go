package patroni_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/ops"
	"github.com/holdfast/holdfast/postgres/migrate"
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
	if f.Severity != ops.SeverityWarn || !strings.Contains(f.Message, "cannot see") || !strings.Contains(f.Message, "2 standbys streaming") {
		t.Fatalf("unprivileged role: %+v, want a warning that it cannot see the standbys' state", f)
	}
	super, err := pgxpool.New(ctx, cluster.SuperURL("holdfast"))
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close()
	f = finding(t, ctx, super, "replication.synchronous")
	if f.Severity != ops.SeverityOK || !strings.Contains(f.Message, "1 synchronous") || !strings.Contains(f.Message, "2 standbys streaming") {
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
		f := finding(t, ctx, sp, "replication.synchronous")
		sp.Close()
		if f.Severity != ops.SeverityCritical || !strings.Contains(f.Message, "standby") {
			t.Fatalf("standby %s: %+v, want critical", n, f)
		}
		break
	}
}

func finding(t *testing.T, ctx context.Context, pool *pgxpool.Pool, check string) ops.Finding {
	t.Helper()
	rep, err := ops.Doctor(ctx, pool, ops.DoctorConfig{})
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
	return ops.Finding{}
}
