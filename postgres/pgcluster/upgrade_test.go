package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestTrustClusterGetsPassword: a data directory from before passwords
// (initdb --auth=trust, no password file) is secured on its next start: a
// password is set and required.
func TestTrustClusterGetsPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "pgcluster-upgrade-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	old := &Cluster{bin: bin, dataDir: dir}
	if os.Geteuid() == 0 {
		if old.runAs, err = unprivileged(); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.own(dir); err != nil {
		t.Fatal(err)
	}
	if out, err := old.run(ctx, nil, "initdb", "-D", filepath.Join(dir, "pgdata"), "-U", User, "--auth=trust", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	c, err := Start(ctx, Options{DataDir: dir, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx) //nolint:errcheck
	if st, err := os.Stat(c.PasswordFile()); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("password file: %v %v", st, err)
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("with the password: %v", err)
	}
	conn.Close(ctx)
	if conn, err := pgx.Connect(ctx, "postgres://holdfast@127.0.0.1:"+strconv.Itoa(c.Port())+"/postgres?sslmode=disable"); err == nil {
		conn.Close(ctx)
		t.Fatal("connected without the password to an upgraded cluster")
	}
}
