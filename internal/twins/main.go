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
//	go run ./internal/twins -split     # the twins split by what they are
//
// -split sorts the MySQL side's twins into three classes, to tell what the
// twins are: (a) methods implementing an interface declared in a package
// that links no driver (engine/driver's Driver and its parts, pods'
// MoveStore and Fence, httpapi's and webhook's stores, …): the method's
// name is in the method set of such an interface (go/parser over those
// packages' interface declarations); (b) the other twins that make a
// database call — a call of a database method (Query, Exec, Begin, …)
// directly or through a same-package callee (resolved by name); (c) the
// rest: no database call, duplicated Go logic.
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
	neutral          bool // links no driver (go list -deps)
}

type fn struct {
	pkg   string
	key   string
	name  string // without the receiver
	recv  bool
	lines int
	db    bool // makes a database call, directly or through a same-package callee (-split)
}

func main() {
	by := flag.String("by", "receiver", "key functions by receiver type and name (receiver) or by name alone (name)")
	verbose := flag.Bool("v", false, "list the MySQL-side functions, twins marked T")
	deps := flag.Bool("deps", false, "sort packages by the drivers they link (go list -deps) rather than the ones their files import")
	split := flag.Bool("split", false, "split the twins into interface methods, other database callers and the rest")
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
		if len(parts) > 3 {
			for _, d := range strings.Split(parts[3], ",") {
				p.linksPG = p.linksPG || strings.HasPrefix(d, pgxPath)
				p.linksMy = p.linksMy || strings.HasPrefix(d, mysqlPath)
			}
		}
		p.neutral = !p.linksPG && !p.linksMy
		if !*deps {
			p.linksPG, p.linksMy = false, false
		}
		for _, f := range strings.Split(parts[2], ",") {
			p.files = append(p.files, filepath.Join(p.dir, f))
		}
		pkgs = append(pkgs, p)
	}

	fset := token.NewFileSet()
	var pgFns, myFns []fn
	ifaceMethods := map[string]bool{} // method names of interfaces declared in packages that link no driver
	for _, p := range pkgs {
		hasPG, hasMy := p.linksPG, p.linksMy
		var fns []fn
		calls := map[string][]string{} // fn key -> same-package names it calls (-split)
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
			if *split && p.neutral {
				interfaceMethods(f, ifaceMethods)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				key := fd.Name.Name
				recv := fd.Recv != nil && len(fd.Recv.List) > 0
				if recv && *by == "receiver" {
					key = recvName(fd.Recv.List[0].Type) + "." + key
				}
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				f := fn{pkg: p.path, key: key, name: fd.Name.Name, recv: recv, lines: n}
				if *split && fd.Body != nil {
					f.db, calls[key] = callsOf(fd.Body)
				}
				fns = append(fns, f)
			}
		}
		if *split {
			reachDB(fns, calls)
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
	if *split {
		printSplit(myFns, pgKeys, ifaceMethods, *verbose)
	}
	if *verbose && !*split {
		sort.Slice(myFns, func(i, j int) bool { return myFns[i].lines > myFns[j].lines })
		for _, f := range myFns {
			mark := "-"
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

// dbMethods are the methods of pgx and database/sql that talk to the
// database: a call of one of them is a database call.
var dbMethods = map[string]bool{
	"Query": true, "QueryRow": true, "Exec": true, "Begin": true, "BeginTx": true,
	"SendBatch": true, "CopyFrom": true, "Prepare": true, "Acquire": true, "Ping": true,
	"QueryContext": true, "QueryRowContext": true, "ExecContext": true,
	"PrepareContext": true, "PingContext": true, "Commit": true, "Rollback": true,
	"Conn": true, "Raw": true,
}

// interfaceMethods adds the method names of f's interface type
// declarations to into.
func interfaceMethods(f *ast.File, into map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		it, ok := ts.Type.(*ast.InterfaceType)
		if !ok {
			return true
		}
		for _, m := range it.Methods.List {
			if _, ok := m.Type.(*ast.FuncType); ok {
				for _, name := range m.Names {
					into[name.Name] = true
				}
			}
		}
		return true
	})
}

// callsOf reports whether body calls a database method (dbMethods), and
// the names it calls (a method by its name alone, a function by its name)
// for reachDB.
func callsOf(body *ast.BlockStmt) (db bool, names []string) {
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fun := call.Fun
		if ix, ok := fun.(*ast.IndexExpr); ok { // a generic instantiation
			fun = ix.X
		}
		switch f := fun.(type) {
		case *ast.SelectorExpr:
			if dbMethods[f.Sel.Name] {
				db = true
			}
			names = append(names, "."+f.Sel.Name)
		case *ast.Ident:
			names = append(names, f.Name)
		}
		return true
	})
	return db, names
}

// reachDB marks the functions of one package that reach a database call
// through same-package callees: a callee "x.m" is any method m of the
// package, a callee "f" its function f.
func reachDB(fns []fn, calls map[string][]string) {
	db := map[string]bool{} // "f" or ".m"
	for _, f := range fns {
		if f.db {
			db[callee(f)] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range fns {
			f := &fns[i]
			if f.db {
				continue
			}
			for _, c := range calls[f.key] {
				if db[c] {
					f.db, changed = true, true
					db[callee(*f)] = true
					break
				}
			}
		}
	}
}

func callee(f fn) string {
	if f.recv {
		return "." + f.name
	}
	return f.name
}

// printSplit prints the MySQL side's twins by class.
func printSplit(myFns []fn, pgKeys, ifaceMethods map[string]bool, verbose bool) {
	classes := []struct {
		name  string
		fns   []fn
		lines int
	}{
		{name: "(a) methods of an interface declared in a package that links no driver"},
		{name: "(b) other twins that make a database call (directly or through a same-package callee)"},
		{name: "(c) the rest: no database call (duplicated Go logic)"},
	}
	total := 0
	for _, f := range myFns {
		total += f.lines
		if !pgKeys[f.key] {
			continue
		}
		i := 2
		switch {
		case f.recv && ifaceMethods[f.name]:
			i = 0
		case f.db:
			i = 1
		}
		classes[i].fns = append(classes[i].fns, f)
		classes[i].lines += f.lines
	}
	for _, c := range classes {
		share := 0.0
		if total > 0 {
			share = 100 * float64(c.lines) / float64(total)
		}
		fmt.Printf("%s: %d functions, %d lines (%.1f%% of MySQL-side function lines)\n", c.name, len(c.fns), c.lines, share)
		if verbose {
			sort.Slice(c.fns, func(i, j int) bool { return c.fns[i].lines > c.fns[j].lines })
			for _, f := range c.fns {
				fmt.Printf("  %4d %s %s\n", f.lines, f.pkg, f.key)
			}
		}
	}
}
