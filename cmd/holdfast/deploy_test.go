package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestDeployFiles: the systemd unit and the Dockerfile run `holdfast
// serve`, and every HOLDFAST_* variable they set is one of serve's flags
// (a renamed flag would silently stop applying). systemd-analyze verifies
// the unit when it is installed. The Dockerfile cannot be built here (no
// Docker engine).
func TestDeployFiles(t *testing.T) {
	var serve *cobra.Command
	for _, c := range newRoot().Commands() {
		if c.Name() == "serve" {
			serve = c
		}
	}
	envs := map[string]bool{}
	serve.Flags().VisitAll(func(f *pflag.Flag) { envs[flagEnv(serve, f.Name)] = true })
	for _, name := range []string{"holdfast.service", "Dockerfile"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !regexp.MustCompile(`(ExecStart=/usr/local/bin/holdfast serve|CMD \["serve"\])`).MatchString(text) {
			t.Errorf("%s does not run holdfast serve", name)
		}
		for _, v := range regexp.MustCompile(`HOLDFAST_[A-Z_]+`).FindAllString(text, -1) {
			if v != "HOLDFAST_" && !strings.HasSuffix(v, "_") && !envs[v] {
				t.Errorf("%s sets %s, which is no flag of serve", name, v)
			}
		}
	}
	// The Dockerfile copies the repository root: the embedded cluster's
	// directory (database files, password) must stay out of the context.
	di, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	if err != nil || !regexp.MustCompile(`(?m)^\.holdfast/?$`).Match(di) || !regexp.MustCompile(`(?m)^\*\*/\.holdfast/?$`).Match(di) {
		t.Errorf(".dockerignore does not keep .holdfast/ out of the build context: %v\n%s", err, di)
	}
	// scripts/demo says it is building before the silent first compile,
	// and runs the built binary with exec (Ctrl-C reaches holdfast).
	demo, err := os.ReadFile(filepath.Join("..", "..", "scripts", "demo"))
	if err != nil || !strings.Contains(string(demo), `echo "demo: building holdfast`) || !strings.Contains(string(demo), `exec "$bin/holdfast" demo "$@"`) || strings.Contains(string(demo), "go run") {
		t.Errorf("scripts/demo does not announce its build or does not exec the binary: %v\n%s", err, demo)
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join("..", "..", "deploy", "holdfast.service"))
	// verify wants ExecStart to exist: any executable stands in for it.
	unit := filepath.Join(t.TempDir(), "holdfast.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/holdfast", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sa, "verify", unit).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
