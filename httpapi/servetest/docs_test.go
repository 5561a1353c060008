package servetest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/holdfast/holdfast/postgres/pgtest"
)

// docBlock is a shell block of a document and the answer documented under
// it (a json block right after it), if any.
type docBlock struct {
	line   int
	script string
	want   string
}

// docBlocks extracts the runnable shell blocks (```sh; ```sh norun is
// for reading only) in order.
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []docBlock
	var cur *strings.Builder
	var kind string
	var start int
	sc := bufio.NewScanner(f)
	n := 0
	lastClosed := ""
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "```"))
			cur, start = &strings.Builder{}, n
			if kind == "json" && lastClosed == "sh" && len(blocks) > 0 && blocks[len(blocks)-1].want == "" {
				kind = "answer"
			}
		case cur != nil && line == "```":
			switch kind {
			case "sh":
				blocks = append(blocks, docBlock{line: start, script: cur.String()})
			case "answer":
				blocks[len(blocks)-1].want = strings.TrimSpace(cur.String())
			}
			lastClosed, cur = kind, nil
			continue
		case cur != nil:
			cur.WriteString(line + "\n")
		}
		if cur == nil && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "```") {
			lastClosed = "" // prose between a block and a json block
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

var (
	docTime      = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`)
	docRequestID = regexp.MustCompile(`"request_id":"[^"]*"`)
)

// normalise replaces times and request ids, which differ from run to run.
func normalise(s string) string {
	s = docTime.ReplaceAllString(strings.TrimSpace(s), `"<time>"`)
	s = docAuditID.ReplaceAllString(s, `{"id":<id>,"shop_id":$1,"action"`)
	s = docAuditKey.ReplaceAllString(s, `"key_id":<key>,"actor":"key <key>"`)
	s = docRemote.ReplaceAllString(s, `"remote":"<addr>"`)
	s = docDropHex.ReplaceAllString(s, `"$1":"<hex>"`) // a drop's random seed and what derives from it
	return docRequestID.ReplaceAllString(s, `"request_id":"<id>"`)
}

// An audit entry's id, its key's id (and name) and the client's address
// depend on what ran before (docs/API.md, "Audit log").
var (
	docAuditID  = regexp.MustCompile(`\{"id":\d+,"shop_id":(\d+),"action"`)
	docAuditKey = regexp.MustCompile(`"key_id":\d+,"actor":"key \d+"`)
	docRemote   = regexp.MustCompile(`"remote":"[^"]*"`)
	docDropHex  = regexp.MustCompile(`"(commitment|seed|ticket)":"[0-9a-f]{64}"`)
)

// TestDocsAPI runs docs/API.md's shell blocks in order, as written, in one
// shell, against the built binary (on PATH) and a private database
// (DATABASE_URL), and compares each documented answer with the real one.
// The only rewrite is the address: 127.0.0.1:8080 becomes a free port.
func TestDocsAPI(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	blocks := docBlocks(t, filepath.Join("..", "..", "docs", "API.md"))
	if len(blocks) < 8 {
		t.Fatalf("docs/API.md has %d runnable blocks; the walkthrough is missing", len(blocks))
	}
	runDocBlocks(t, "docs/API.md", blocks)
}

// TestDocsREADME runs the shell blocks of README.md's section "The service"
// (the quick start of the service) in order, as written, the same way.
func TestDocsREADME(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	path := filepath.Join("..", "..", "README.md")
	from, to := sectionLines(t, path, "## The service")
	var blocks []docBlock
	for _, b := range docBlocks(t, path) {
		if b.line > from && b.line < to {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) < 2 || blocks[len(blocks)-1].want == "" {
		t.Fatalf("README.md's service quick start has %d runnable blocks, the last without its answer", len(blocks))
	}
	runDocBlocks(t, "README.md", blocks)
}

// TestDocsREADMEThenAPI runs README.md's service quick start and then
// docs/API.md's session in one shell, one directory and one database, as a
// reader who follows both does (README's server stopped in between: API.md
// starts its own): neither walkthrough may change the other's answers.
func TestDocsREADMEThenAPI(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	path := filepath.Join("..", "..", "README.md")
	from, to := sectionLines(t, path, "## The service")
	var blocks []docBlock
	for _, b := range docBlocks(t, path) {
		if b.line > from && b.line < to {
			blocks = append(blocks, b)
		}
	}
	// The reader stops README's server (its background job) before API.md
	// starts one on the same address.
	blocks = append(blocks, docBlock{script: "kill $(jobs -p) && wait\n"})
	blocks = append(blocks, docBlocks(t, filepath.Join("..", "..", "docs", "API.md"))...)
	// Ledger entry ids are one sequence over every key: README's stock
	// change takes the first, so API.md's ledger ids (and the cursor that
	// carries one) are one higher. Nothing else may differ.
	runDocBlocks(t, "README.md then docs/API.md", blocks, func(s string) string {
		s = ledgerEntryID.ReplaceAllString(s, `{"id":<id>,"delta"`)
		return ledgerCursor.ReplaceAllString(s, `"next":"l1.<cursor>"`)
	})
}

var (
	ledgerEntryID = regexp.MustCompile(`\{"id":\d+,"delta"`)
	ledgerCursor  = regexp.MustCompile(`"next":"l1\.[^"]*"`)
)

// sectionLines returns the line of heading in path and the line of the
// next heading of the same level (or the end).
func sectionLines(t *testing.T, path, heading string) (from, to int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	level := heading[:strings.Index(heading, " ")+1]
	inBlock := false
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
		}
		switch {
		case inBlock:
		case line == heading:
			from = n
		case from > 0 && strings.HasPrefix(line, level):
			return from, n
		}
	}
	if from == 0 {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	return from, 1 << 30
}

// runDocBlocks runs blocks of doc in order in one shell, against the built
// binary (on PATH) and a private database (DATABASE_URL), and compares each
// documented answer with the real one. The only rewrite is the address:
// 127.0.0.1:8080 becomes a free port.
func runDocBlocks(t *testing.T, doc string, blocks []docBlock, also ...func(string) string) {
	db := pgtest.DB(t, 4)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	const marker = "@@block "
	var script strings.Builder
	script.WriteString("set -o pipefail\n")
	for i, b := range blocks {
		fmt.Fprintf(&script, "echo; echo '%s%d'\n%s", marker, i, strings.ReplaceAll(b.script, "127.0.0.1:8080", addr))
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DATABASE_URL="+db.URL, "HOLDFAST_ADDR="+addr,
		"PATH="+filepath.Dir(binary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	// Its own process group: `holdfast serve &` outlives the script, and
	// the cleanup stops that group (and only it).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Files, not pipes: the server in the background keeps them open.
	stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Start()
	if err == nil {
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		err = cmd.Wait()
		// The server the docs started in the background: a clean stop.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	out, _ := os.ReadFile(stdout.Name())
	if err != nil {
		errOut, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the docs' shell blocks failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	answers := map[int]string{}
	parts := strings.Split(string(out), marker)
	for _, p := range parts[1:] {
		var i int
		num, rest, _ := strings.Cut(p, "\n")
		if _, err := fmt.Sscan(num, &i); err != nil {
			t.Fatalf("bad marker %q", num)
		}
		answers[i] = rest
	}
	for i, b := range blocks {
		got, ok := answers[i]
		if !ok {
			t.Fatalf("block at line %d did not run", b.line)
		}
		if b.want == "" {
			continue
		}
		g, w := normalise(got), normalise(b.want)
		for _, f := range also {
			g, w = f(g), f(w)
		}
		if g != w {
			t.Errorf("%s block at line %d answered\n%s\nthe docs say\n%s", doc, b.line, strings.TrimSpace(got), b.want)
		}
	}
	if t.Failed() {
		logs, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		t.Logf("serve.log:\n%s", logs)
	}
}
