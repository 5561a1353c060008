package galera_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestConformanceOnGalera runs the MySQL engine's own tests — the
// conformance suite, which includes the history checker (enginetest's
// testHistory) — on this package's Galera cluster, through its writer
// (node 1): it starts the cluster and runs
//
//	go test -count=1 -run "$HOLDFAST_GALERA_RUN" ./mysql/
//
// with TEST_MYSQL_URL naming node 1. HOLDFAST_GALERA_RUN defaults to
// TestConformance. Behind HOLDFAST_GALERA_CONFORMANCE=1: it takes many
// minutes.
func TestConformanceOnGalera(t *testing.T) {
	if os.Getenv("HOLDFAST_GALERA_CONFORMANCE") == "" {
		t.Skip("set HOLDFAST_GALERA_CONFORMANCE=1 to run the MySQL engine's conformance suite on Galera")
	}
	c := startCluster(t)
	run := os.Getenv("HOLDFAST_GALERA_RUN")
	if run == "" {
		run = "TestConformance"
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.CommandContext(context.Background(), "go", "test", "-count=1", "-timeout=60m", "-run", run, "./mysql/")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TEST_MYSQL_URL="+c.NodeURL(0, ""))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go test -run %s ./mysql/ on Galera node 1: %v", run, err)
	}
}
