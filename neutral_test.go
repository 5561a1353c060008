package holdfast_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// neutral are the packages meant for any database (issue 25): the user's
// vocabulary, the behaviour suite, the Go HTTP client, the shadow layer,
// the console, the wire shapes and the HTTP service (and what they build
// on: webhook, health, metrics). Each database's code
// is injected into them by cmd/holdfast (or a test), never imported.
var neutral = []string{".", "./enginetest", "./client", "./shadow", "./console", "./wire", "./httpapi", "./webhook", "./health", "./metrics", "./pods", "./failovertest", "./engine", "./bench/hotbench", "./internal/faultproxy", "./internal/history"}

// drivers are what a neutral package must not link: a database driver, or
// holdfast's own per-database packages.
var drivers = []string{
	"github.com/jackc/pgx",
	"github.com/go-sql-driver/mysql",
	"github.com/holdfast/holdfast/postgres",
	"github.com/holdfast/holdfast/mysql",
}

// driverDeps runs `go list -deps` on pkg and returns the dependencies that
// are drivers.
func driverDeps(t *testing.T, pkg string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		for _, d := range drivers {
			if dep == d || strings.HasPrefix(dep, d+"/") {
				bad = append(bad, dep)
			}
		}
	}
	return bad
}

// TestNeutralPackagesLinkNoDriver: the packages meant for any database
// link no database driver. A new import that drags one in (a store built
// inside httpapi, a helper from package postgres) fails here; give the
// package an interface and let cmd/holdfast inject the database's
// implementation, which lives under postgres/ or mysql/.
func TestNeutralPackagesLinkNoDriver(t *testing.T) {
	t.Parallel()
	// The check itself sees a driver where there is one.
	if got := driverDeps(t, "./postgres/pgstore"); len(got) == 0 {
		t.Fatal("go list -deps ./postgres/pgstore shows no driver: the check cannot see one")
	}
	for _, pkg := range neutral {
		if bad := driverDeps(t, pkg); len(bad) > 0 {
			t.Errorf("%s links %s", pkg, strings.Join(bad, ", "))
		}
	}
}
