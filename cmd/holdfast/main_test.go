package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// run runs the command line in-process.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"keys", "-h"}, {"keys", "create", "--help"}, {"serve", "--help"}, {"top", "-h"}} {
		code, out, errOut := run(t, args...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// Help lists every strategy from the one list, batch included.
	_, out, _ := run(t, "top", "--help")
	if !strings.Contains(out, "counter, batch, pool or slots") || !strings.Contains(out, "HOLDFAST_DATA_DIR") {
		t.Errorf("top --help lacks the strategy list or env names:\n%s", out)
	}
	// No "(default [])" for a flag without a default; shadow says it runs
	// on PostgreSQL only, the root help names it as the exception.
	if _, out, _ := run(t, "shadow", "enroll", "--help"); strings.Contains(out, "(default [])") {
		t.Errorf("shadow enroll --help shows (default []):\n%s", out)
	}
	if _, out, _ := run(t, "shadow", "--help"); !strings.Contains(out, "shadow runs on PostgreSQL only") {
		t.Errorf("shadow --help does not say it runs on PostgreSQL only:\n%s", out)
	}
	if _, out, _ := run(t, "--help"); !strings.Contains(out, "Every command\nbut shadow (PostgreSQL only") {
		t.Errorf("the root help does not name shadow as the command that does not run on MariaDB:\n%s", out)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"keys", "create", "--shop", "1", "--admin"}, "exactly one of --shop N"},
		{[]string{"keys", "revoke"}, "needs one key id or key"},
		{[]string{"migrate", "extra"}, "unexpected arguments"},
		{[]string{"top", "--strategy", "fifo"}, `unknown --strategy "fifo" (known: counter, batch, pool or slots)`},
	}
	for _, c := range cases {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "--help") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestEnvSetsFlags: HOLDFAST_<FLAG> sets a flag; the command line wins.
func TestEnvSetsFlags(t *testing.T) {
	t.Setenv("HOLDFAST_LOG_FORMAT", "xml")
	if code, _, errOut := run(t, "serve"); code != 2 || !strings.Contains(errOut, "--log-format must be json or text") {
		t.Fatalf("HOLDFAST_LOG_FORMAT=xml: exit %d %q", code, errOut)
	}
	t.Setenv("HOLDFAST_MAX_CONNS", "2")
	if code, _, errOut := run(t, "serve", "--log-format", "text"); code != 2 || !strings.Contains(errOut, "--max-conns must be between 5 and 1000") {
		t.Fatalf("--log-format on the line, HOLDFAST_MAX_CONNS=2: exit %d %q", code, errOut)
	}
	t.Setenv("HOLDFAST_MAX_CONNS", "many")
	if code, _, errOut := run(t, "serve", "--log-format", "text"); code != 2 || !strings.Contains(errOut, "HOLDFAST_MAX_CONNS") {
		t.Fatalf("HOLDFAST_MAX_CONNS=many: exit %d %q", code, errOut)
	}
}

// TestFlagsAfterArgs: a flag after a positional argument is a flag.
func TestFlagsAfterArgs(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	dir := t.TempDir() + "/none"
	code, _, errOut := run(t, "keys", "revoke", "2", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "no embedded database in "+dir) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("keys revoke 2 --data-dir %s: exit %d, stderr %q; want one line naming the directory", dir, code, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("keys revoke created a database")
	}
}

func TestVersionAndCompletion(t *testing.T) {
	if code, out, _ := run(t, "version"); code != 0 || !strings.HasPrefix(out, "holdfast ") || !strings.Contains(out, "commit ") {
		t.Errorf("version: %d %q", code, out)
	}
	if code, out, _ := run(t, "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}

// TestCommandsShareEmbeddedCluster: while a serve-like holder runs the
// cluster in a data directory, migrate, keys and top with that --data-dir
// use the holder's server (one database), print no credential, and leave it
// running.
func TestCommandsShareEmbeddedCluster(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "holdfast-cli-") // reachable by the server's user under root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	holder, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: dir, Shared: true, Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Stop(ctx) //nolint:errcheck
	pw, err := os.ReadFile(holder.PasswordFile())
	if err != nil {
		t.Fatal(err)
	}
	password := strings.TrimSpace(string(pw))

	var stderrs []string
	step := func(args ...string) string {
		t.Helper()
		code, out, errOut := run(t, args...)
		stderrs = append(stderrs, errOut)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	step("migrate", "--data-dir", dir)
	out := step("keys", "create", "--shop", "3", "--data-dir", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !strings.HasPrefix(key, "hf_") || strings.ContainsAny(key, " \t") {
		t.Fatalf("keys create: the last line is not the key alone:\n%s", out)
	}
	// Flags anywhere, and from the environment.
	t.Setenv("HOLDFAST_DATA_DIR", dir)
	if out := step("keys", "list", "--limit", "5"); !strings.Contains(out, "shop 3") {
		t.Fatalf("keys list:\n%s", out)
	}
	if out := step("top", "--once", "--interval", "100ms"); !strings.Contains(out, "holdfast top") {
		t.Fatalf("top --once:\n%s", out)
	}

	// The key is in the holder's database: no second database was made.
	conn, err := pgx.Connect(ctx, holder.URL("postgres"))
	if err != nil {
		t.Fatalf("the holder's server is gone after the commands: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM api_keys WHERE shop_id = 3").Scan(&n); err != nil || n != 1 {
		t.Fatalf("keys in the holder's database: %d %v", n, err)
	}
	for _, s := range stderrs {
		if strings.Contains(s, password) {
			t.Fatalf("a command's output carries the database password:\n%s", s)
		}
	}
}

// TestKeysCreateElsewhereRefuses: keys create and webhooks add run from a
// directory where no server ran (the default --data-dir is relative) refuse
// in one line naming the absolute directory and how to reach the server's
// database, and create no second cluster there.
func TestKeysCreateElsewhereRefuses(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("HOLDFAST_DATA_DIR", "")
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"keys", "create", "--shop", "1"},
		{"webhooks", "add", "--shop", "1", "--url", "https://example.com/hook"},
	} {
		code, out, errOut := run(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, "no embedded database in .holdfast ("+dir+"/.holdfast)") ||
			!strings.Contains(errOut, "relative to the working directory") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q in a directory without a database: exit %d, stdout %q, stderr %q; want 1 and one line naming %s", args, code, out, errOut, dir)
		}
		if _, err := os.Stat(defaultDataDir); err == nil {
			t.Fatalf("%q created %s", args, defaultDataDir)
		}
	}
}

// TestEnvOneMeaning: every HOLDFAST_* variable sets flags of one type
// only, the flags whose meaning differs by command are per command (and
// --help says so), and a HOLDFAST_<FLAG> that a command no longer reads is
// named instead of misread (HOLDFAST_JSON=out.json was a ParseBool error
// for doctor, holds and ledger).
func TestEnvOneMeaning(t *testing.T) {
	types := map[string]map[string][]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "help" || f.Name == "version" {
					return
				}
				env := flagEnv(flagOwner(c, f), f.Name)
				if types[env] == nil {
					types[env] = map[string][]string{}
				}
				types[env][f.Value.Type()] = append(types[env][f.Value.Type()], c.CommandPath())
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot())
	for env, ts := range types {
		if len(ts) > 1 {
			t.Errorf("%s sets flags of types %v", env, ts)
		}
	}
	for env, want := range map[string]string{
		"HOLDFAST_ADDR": "holdfast serve", "HOLDFAST_WEBHOOKS_RECEIVE_ADDR": "holdfast webhooks receive",
		"HOLDFAST_BENCH_JSON": "holdfast bench", "HOLDFAST_DOCTOR_JSON": "holdfast doctor", "HOLDFAST_HOLDS_LIMIT": "holdfast holds",
		"HOLDFAST_DEMO_STRATEGY": "holdfast demo", "HOLDFAST_TOP_STRATEGY": "holdfast top",
		"HOLDFAST_DEMO_HTTP": "holdfast demo", "HOLDFAST_BENCH_HTTP": "holdfast bench", "HOLDFAST_DEMO_SEED": "holdfast demo",
	} {
		var got []string
		for _, cmds := range types[env] {
			got = append(got, cmds...)
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s is read by %q, want %s only", env, got, want)
		}
	}
	// HOLDFAST_SEED is the test suite's seed (README), HOLDFAST_HTTP would
	// mean two things: neither is a flag's.
	for _, env := range []string{"HOLDFAST_JSON", "HOLDFAST_LIMIT", "HOLDFAST_STRATEGY", "HOLDFAST_HTTP", "HOLDFAST_SEED"} {
		if types[env] != nil {
			t.Errorf("%s still read by %v", env, types[env])
		}
	}
	for args, want := range map[string]string{"bench": "(env HOLDFAST_BENCH_JSON)", "doctor": "(env HOLDFAST_DOCTOR_JSON)",
		"webhooks receive": "(env HOLDFAST_WEBHOOKS_RECEIVE_ADDR)", "serve": "(env HOLDFAST_ADDR)", "holds": "(env HOLDFAST_HOLDS_LIMIT)"} {
		if _, out, _ := run(t, append(strings.Fields(args), "--help")...); !strings.Contains(out, want) {
			t.Errorf("%s --help lacks %s", args, want)
		}
	}

	t.Setenv("DATABASE_URL", "")
	dir := t.TempDir() + "/none"
	t.Setenv("HOLDFAST_JSON", "out.json")
	code, _, errOut := run(t, "holds", "--shop", "1", "--data-dir", dir)
	if code != 1 || !strings.Contains(errOut, "HOLDFAST_JSON is not read") || !strings.Contains(errOut, "set HOLDFAST_HOLDS_JSON") || strings.Contains(errOut, "true or false") {
		t.Errorf("HOLDFAST_JSON=out.json holds: exit %d %q; want the variable named, then the missing database", code, errOut)
	}
	t.Setenv("HOLDFAST_JSON", "")
	t.Setenv("HOLDFAST_DOCTOR_JSON", "maybe")
	if code, _, errOut := run(t, "doctor", "--data-dir", dir); code != 2 || !strings.Contains(errOut, `HOLDFAST_DOCTOR_JSON="maybe" (--json) must be true or false`) {
		t.Errorf("HOLDFAST_DOCTOR_JSON=maybe doctor: exit %d %q", code, errOut)
	}
}

// TestHelpSaysWhatFlagsTake: --help renders what each flag takes, not Go
// type names or a bool as if it took an argument, and does not call an
// optional flag required.
func TestHelpSaysWhatFlagsTake(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"bench", "--help"}, []string{"      --http    "}, []string{"--http holdfast serve"}},
		{[]string{"shadow", "enroll", "--help"}, []string{"--shop ids"}, []string{"int64Slice"}},
		{[]string{"webhooks", "receive", "--help"}, []string{"receive takes none"}, []string{"the shop (required)"}},
		{[]string{"keys", "create", "--help"}, []string{"safety stock, per-buyer limits and the location order"}, nil},
	} {
		_, out, _ := run(t, c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, n := range c.not {
			if strings.Contains(out, n) {
				t.Errorf("%q has %q:\n%s", c.args, n, out)
			}
		}
	}
}

// TestDoctorFreshEmbeddedClean: doctor on a fresh embedded cluster finds
// nothing to warn about in the cluster's own settings (it warned about
// three session timeouts nobody chose).
func TestDoctorFreshEmbeddedClean(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("HOLDFAST_ENGINE", "")
	dir, err := os.MkdirTemp("", "holdfast-cli-") // reachable by the server's user under root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if code, out, errOut := run(t, "migrate", "--data-dir", dir); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	// Each command starts and stops the cluster: a shutdown checkpoint
	// each, counted as requested, which setting.checkpoints must not take
	// for checkpoints forced by WAL volume.
	for range 3 {
		if code, out, errOut := run(t, "keys", "list", "--data-dir", dir); code != 0 {
			t.Fatalf("keys list: exit %d\n%s%s", code, out, errOut)
		}
	}
	code, out, errOut := run(t, "doctor", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "0 critical, 0 warn") || !strings.Contains(out, "statement_timeout = 0: the embedded cluster") {
		t.Fatalf("doctor on a fresh embedded cluster: exit %d\n%s%s", code, out, errOut)
	}
}
