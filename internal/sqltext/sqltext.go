// Package sqltext is the text holdfast sends to a database: the statements
// embedded from .sql files (Load) and the sqlcommenter comment that
// attributes each one to its route and caller (Comment, Parse). Every
// engine, the HTTP service's stores, ops, webhooks and the benches write
// their comment here, and the doctor, top and the tracer read it back here,
// so the two sides cannot drift.
package sqltext

import (
	"io/fs"
	"path"
	"strings"
)

// App is the app value of every comment holdfast writes.
const App = "holdfast"

// ValueMax bounds a value Parse returns, in bytes: a longer one is cut.
// holdfast.WithTag keeps tags within it.
const ValueMax = 64

// Comment is the sqlcommenter comment of a statement: who sent it. The zero
// value is "no comment".
type Comment struct {
	App   string
	Route string
	Tag   string
}

// Prefix is the comment holdfast puts before a statement of route, with the
// caller's tag when not empty, and a trailing space:
// /* app='holdfast',route='reserve',tag='checkout' */ .
func Prefix(route, tag string) string {
	return Comment{App: App, Route: route, Tag: tag}.String() + " "
}

// String writes c as a comment, keys in the order app, route, tag and empty
// values left out: /* app='holdfast',route='reserve' */. A value keeps
// letters, digits and '_', '-', '.', ':' as they are (every route and every
// tag holdfast.WithTag keeps); any other byte is percent-encoded as
// sqlcommenter specifies, so no value can close the quote, the comment or
// the line.
func (c Comment) String() string {
	var b strings.Builder
	b.WriteString("/* ")
	n := 0
	for _, kv := range [...][2]string{{"app", c.App}, {"route", c.Route}, {"tag", c.Tag}} {
		if kv[1] == "" {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(kv[0])
		b.WriteString("='")
		escape(&b, kv[1])
		b.WriteByte('\'')
	}
	b.WriteString(" */")
	return b.String()
}

func plain(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func escape(b *strings.Builder, v string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
}

// unescape decodes %XX sequences; a malformed one is kept as it is.
func unescape(v string) string {
	if !strings.Contains(v, "%") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '%' && i+2 < len(v) {
			if h, ok1 := unhex(v[i+1]); ok1 {
				if l, ok2 := unhex(v[i+2]); ok2 {
					b.WriteByte(h<<4 | l)
					i += 2
					continue
				}
			}
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Parse reads the sqlcommenter comment of query: the first /* … */ at its
// start (holdfast's form) or, failing that, the last one at its end
// (sqlcommenter's own placement). Values are key='value' pairs separated by
// commas, percent-decoded and cut to ValueMax bytes; "application" is read
// as app, "controller" and "action" as route when there is no route, other
// keys are ignored. A query without a comment gives the zero Comment.
func Parse(query string) Comment {
	body, ok := body(query)
	if !ok {
		return Comment{}
	}
	var c Comment
	for _, kv := range strings.Split(body, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		v = unescape(strings.Trim(strings.TrimSpace(v), `'"`))
		if len(v) > ValueMax {
			v = v[:ValueMax]
		}
		switch k {
		case "app", "application":
			c.App = v
		case "route", "controller", "action":
			if c.Route == "" || k == "route" {
				c.Route = v
			}
		case "tag":
			c.Tag = v
		}
	}
	return c
}

// Leading reports whether query starts with a comment (after white space):
// holdfast's placement, the only one some readers (mysqlops) accept.
func Leading(query string) bool {
	return strings.HasPrefix(strings.TrimSpace(query), "/*")
}

func body(query string) (string, bool) {
	q := strings.TrimSpace(query)
	switch {
	case strings.HasPrefix(q, "/*"):
		end := strings.Index(q, "*/")
		if end < 0 {
			return "", false
		}
		return q[2:end], true
	case strings.HasSuffix(strings.TrimSuffix(q, ";"), "*/"):
		q = strings.TrimSuffix(q, ";")
		start := strings.LastIndex(q, "/*")
		if start < 0 {
			return "", false
		}
		return q[start+2 : len(q)-2], true
	}
	return "", false
}

// Files are the embedded statements of one package, by file name without
// ".sql".
type Files struct {
	owner string
	text  map[string]string
}

// Load reads every .sql file of dir in fsys (a package's go:embed
// files). The files are part of the binary, so a failure to read them is a
// build defect: Load panics, naming owner (the package).
func Load(owner string, fsys fs.FS, dir string) Files {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(owner + ": reading embedded SQL: " + err.Error())
	}
	f := Files{owner: owner, text: make(map[string]string, len(entries))}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			panic(owner + ": reading embedded SQL: " + err.Error())
		}
		f.text[strings.TrimSuffix(e.Name(), ".sql")] = string(b)
	}
	return f
}

// Map returns the statements by name, for an engine that keeps its own
// table. The map is shared: do not modify it.
func (f Files) Map() map[string]string { return f.text }

// Get returns the statement name as written in its file, without a
// comment. It panics when there is no such file: statement names are
// constants in the code.
func (f Files) Get(name string) string {
	s, ok := f.text[name]
	if !ok {
		panic(f.owner + ": no statement " + name)
	}
	return s
}

// Tagged returns the statement name prefixed with holdfast's comment for
// route (no tag).
func (f Files) Tagged(route, name string) string {
	return Prefix(route, "") + f.Get(name)
}
