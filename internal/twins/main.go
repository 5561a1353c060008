// Command twins measures how much of the MySQL side of holdfast is a second
// copy of the PostgreSQL side (issue #25's metric).
//
// It lists the packages of the module (go list ./...), sorts those whose
// non-test files import exactly one of the two drivers — pgx
// (github.com/jackc/pgx) or go-sql-driver/mysql — into a PostgreSQL side and
// a MySQL side, and counts, over the MySQL side's non-test functions, the
// share of function lines whose function has a same-named PostgreSQL-side
// twin. A function is keyed by receiver type and name ("Client.Reserve",
// "reserveAttempt"); with -by=name by name alone (methods of differently
// named receivers then count as twins too). It also prints each package's
// non-test line count.
//
//	go run ./internal/twins            # keyed by receiver type and name
//	go run ./internal/twins -by=name   # keyed by name alone
//	go run ./internal/twins -deps      # sides by linked drivers (go list -deps)
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	pgxPath   = "github.com/jackc/pgx"
	mysqlPath = "github.com/go-sql-driver/mysql"
)

type pkg struct {
	path  string
	dir   string
	files []string
	lines int
	side  string // "pg", "mysql", "both", ""

	linksPG, linksMy bool // with -deps
}

type fn struct {
	pkg   string
	key   string
	lines int
}

func main() {
	by := flag.String("by", "receiver", "key functions by receiver type and name (receiver) or by name alone (name)")
	verbose := flag.Bool("v", false, "list the MySQL-side functions, twins marked T")
	deps := flag.Bool("deps", false, "sort packages by the drivers they link (go list -deps) rather than the ones their files import")
	flag.Parse()

	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \",\"}}\t{{join .Deps \",\"}}", "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "go list:", err)
		os.Exit(1)
	}
	var pkgs []*pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) < 3 || parts[2] == "" {
			continue
		}
		p := &pkg{path: parts[0], dir: parts[1]}
		if *deps && len(parts) > 3 {
			for _, d := range strings.Split(parts[3], ",") {
				p.linksPG = p.linksPG || strings.HasPrefix(d, pgxPath)
				p.linksMy = p.linksMy || strings.HasPrefix(d, mysqlPath)
			}
		}
		for _, f := range strings.Split(parts[2], ",") {
			p.files = append(p.files, filepath.Join(p.dir, f))
		}
		pkgs = append(pkgs, p)
	}

	fset := token.NewFileSet()
	var pgFns, myFns []fn
	for _, p := range pkgs {
		hasPG, hasMy := p.linksPG, p.linksMy
		var fns []fn
		for _, name := range p.files {
			src, err := os.ReadFile(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			p.lines += bytes.Count(src, []byte("\n"))
			f, err := parser.ParseFile(fset, name, src, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			for _, imp := range f.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if !*deps && strings.HasPrefix(path, pgxPath) {
					hasPG = true
				}
				if !*deps && strings.HasPrefix(path, mysqlPath) {
					hasMy = true
				}
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				key := fd.Name.Name
				if fd.Recv != nil && len(fd.Recv.List) > 0 && *by == "receiver" {
					key = recvName(fd.Recv.List[0].Type) + "." + key
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				fns = append(fns, fn{pkg: p.path, key: key, lines: n})
			}
		}
		switch {
		case hasPG && hasMy:
			p.side = "both"
		case hasPG:
			p.side = "pg"
			pgFns = append(pgFns, fns...)
		case hasMy:
			p.side = "mysql"
			myFns = append(myFns, fns...)
		}
	}

	pgKeys := map[string]bool{}
	for _, f := range pgFns {
		pgKeys[f.key] = true
	}
	var twinFns, twinLines, allLines int
	var lonely []fn
	for _, f := range myFns {
		allLines += f.lines
		if pgKeys[f.key] {
			twinFns++
			twinLines += f.lines
		} else {
			lonely = append(lonely, f)
		}
	}

	fmt.Println("package lines (non-test files), side:")
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].path < pkgs[j].path })
	for _, p := range pkgs {
		fmt.Printf("  %6d  %-6s %s\n", p.lines, p.side, p.path)
	}
	share := 0.0
	if allLines > 0 {
		share = 100 * float64(twinLines) / float64(allLines)
	}
	fmt.Printf("keyed by %s: %d of %d MySQL-side functions have a PostgreSQL-side twin: %d of %d function lines (%.1f%%)\n",
		*by, twinFns, len(myFns), twinLines, allLines, share)
	if *verbose {
		sort.Slice(myFns, func(i, j int) bool { return myFns[i].lines > myFns[j].lines })
		for _, f := range myFns {
			mark := " "
			if pgKeys[f.key] {
				mark = "T"
			}
			fmt.Printf("  %s %4d %s %s\n", mark, f.lines, f.pkg, f.key)
		}
	}
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return "?"
}
