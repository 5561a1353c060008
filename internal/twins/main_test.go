package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestSplitClasses: a function that calls a database method, one that
// reaches one through a same-package callee (a method called on another
// receiver, a function called by name), and one that does neither are
// told apart; interface declarations give their method names.
func TestSplitClasses(t *testing.T) {
	const src = `package p
type Store interface {
	Put(k string) error
	Get(k string) (string, error)
}
func (c *Client) direct(tx Tx) error { _, err := tx.Exec(ctx, "q"); return err }
func (c *Client) viaMethod() error { return c.d().direct(nil) }
func viaFunc() error { var c *Client; return c.viaMethod() }
func (c *Client) pure(a, b int) int { return max(a, b) }
func (c *Client) closure(tx Tx) { run(func() { tx.QueryRow(ctx, "q") }) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	interfaceMethods(f, names)
	if !names["Put"] || !names["Get"] || len(names) != 2 {
		t.Fatalf("interface methods: %v", names)
	}
	var fns []fn
	calls := map[string][]string{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		x := fn{key: fd.Name.Name, name: fd.Name.Name, recv: fd.Recv != nil}
		x.db, calls[x.key] = callsOf(fd.Body)
		fns = append(fns, x)
	}
	reachDB(fns, calls)
	want := map[string]bool{"direct": true, "viaMethod": true, "viaFunc": true, "pure": false, "closure": true}
	for _, x := range fns {
		if x.db != want[x.name] {
			t.Errorf("%s: database call %v, want %v", x.name, x.db, want[x.name])
		}
	}
}
