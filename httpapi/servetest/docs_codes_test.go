package servetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// errorCode is an error code constant of package httpapi
// (`CodeX = "x"`), in any of its files.
var errorCode = regexp.MustCompile(`(?m)^\s*Code[A-Za-z]+\s*=\s*"([a-z_]+)"`)

// TestDocsErrorCodes checks that the error table of docs/API.md lists every
// error code package httpapi defines, so a feature that adds a code cannot
// leave the table behind.
func TestDocsErrorCodes(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range errorCode.FindAllStringSubmatch(string(b), -1) {
			codes[m[1]] = filepath.Base(f)
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found %d error codes in httpapi; the pattern no longer matches how codes are declared", len(codes))
	}
	from, to := sectionLines(t, filepath.Join("..", "..", "docs", "API.md"), "## Errors")
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	for i, line := range strings.Split(string(b), "\n") {
		if n := i + 1; n > from && n < to && strings.HasPrefix(line, "|") {
			table.WriteString(line + "\n")
		}
	}
	for code, file := range codes {
		if !strings.Contains(table.String(), "`"+code+"`") {
			t.Errorf("error code %q (httpapi/%s) is not in docs/API.md's error table", code, file)
		}
	}
}

// TestDocsNotFoundMeanings (#24 review): the error table's not_found row
// says what is not found on every route family that answers it, the
// webhook routes included ("no such webhook endpoint in this shop").
func TestDocsNotFoundMeanings(t *testing.T) {
	t.Parallel()
	from, to := sectionLines(t, filepath.Join("..", "..", "docs", "API.md"), "## Errors")
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for i, line := range strings.Split(string(b), "\n") {
		if n := i + 1; n > from && n < to && strings.Contains(line, "| `not_found` |") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/API.md's error table has no not_found row")
	}
	for _, meaning := range []string{"checkout", "buyer limit", "webhook"} {
		if !strings.Contains(row, meaning) {
			t.Errorf("the not_found row does not cover the %s routes: %s", meaning, row)
		}
	}
}
