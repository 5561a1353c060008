package servetest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// goBlocks returns the ```go blocks of path's section heading, in order.
func goBlocks(t *testing.T, path, heading string) []string {
	t.Helper()
	from, to := sectionLines(t, path, heading)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case n <= from || n >= to:
		case cur == nil && line == "```go":
			cur = &strings.Builder{}
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// readmeProgram wraps README's library blocks in a program: the first is
// the body of run (its default), the second of embedded (argument
// "embedded").
const readmeProgram = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
)

var (
	_ = errors.New
	_ = fmt.Sprint
	_ = uuid.New
	_ = pgx.BeginFunc
	_ = holdfast.Key{}
	_ = pgcluster.Start
	_ = postgres.New
	_ = migrations.Up
)

func main() {
	ctx := context.Background()
	f := run
	if len(os.Args) > 1 && os.Args[1] == "embedded" {
		f = embedded
	}
	if err := f(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("done")
}

func run(ctx context.Context) error {
%RUN%}

func embedded(ctx context.Context) error {
%EMBEDDED%}
`

// TestDocsREADMELibrary compiles README.md's library example and its
// embedded-cluster snippet as written, then runs them: the example on a
// private database (claiming a hold into the app's orders table), and
// with DATABASE_URL unset, where it must refuse before connecting
// anywhere; the snippet against a running shared embedded cluster, which
// it must leave running.
func TestDocsREADMELibrary(t *testing.T) {
	t.Parallel()
	blocks := goBlocks(t, filepath.Join("..", "..", "README.md"), "## Using the library")
	if len(blocks) != 2 {
		t.Fatalf("README.md's library section has %d go blocks, want the example and the embedded cluster's", len(blocks))
	}
	src := strings.NewReplacer("%RUN%", blocks[0], "%EMBEDDED%", blocks[1]).Replace(readmeProgram)
	// Inside the module, so its imports resolve; a dot directory, so
	// ./... never sees it.
	dir, err := os.MkdirTemp(".", ".readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "readme")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./"+dir).CombinedOutput(); err != nil {
		t.Fatalf("README.md's library blocks do not compile: %v\n%s\nprogram:\n%s", err, out, src)
	}
	runIt := func(dir string, env []string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "PG") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// Unset: a refusal, and no connection (PGHOST points at a socket
	// directory with nothing in it; pgx would report it if it tried).
	out, err := runIt(t.TempDir(), []string{"PGHOST=" + t.TempDir()})
	if err == nil || !strings.Contains(out, "set DATABASE_URL") {
		t.Fatalf("the example with DATABASE_URL unset: %v\n%s", err, out)
	}

	// An empty database, as a reader's: the block makes its orders table.
	db := pgtest.EmptyDB(t, 2)
	if out, err := runIt(t.TempDir(), []string{"DATABASE_URL=" + db.URL}); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("the example on a private database: %v\n%s", err, out)
	}
	var orders, claimed int
	if err := db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM holds WHERE status = 'claimed')").Scan(&orders, &claimed); err != nil || orders != 1 || claimed != 1 {
		t.Fatalf("after the example: %d orders, %d claimed holds, %v; want 1 and 1", orders, claimed, err)
	}

	// The embedded cluster: a holder (as serve would be) keeps it running.
	work, err := os.MkdirTemp("", "holdfast-readme-") // reachable by the server's user under root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	if err := os.Chmod(work, 0o755); err != nil { // the server's user enters it to reach .holdfast
		t.Fatal(err)
	}
	holder, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(work, ".holdfast"), Shared: true, Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Stop(context.Background()) })
	if out, err := runIt(work, nil, "embedded"); err != nil || !strings.Contains(out, "done") {
		t.Fatalf("the embedded-cluster snippet: %v\n%s", err, out)
	}
	pool, err := pgxpool.New(ctx, holder.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the snippet's Stop shut the holder's server down: %v", err)
	}
}
