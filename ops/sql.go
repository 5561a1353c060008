package ops

import (
	"context"
	"embed"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// Route is the route of ops' own statements in their sqlcommenter comment,
// so the sampler's queries are attributed like everyone else's.
const Route = "ops"

// statement returns the named embedded statement with its comment.
func statement(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("ops: no statement " + name)
	}
	return "/* app='holdfast',route='" + Route + "' */ " + string(b)
}

// Querier is what ops reads through: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Comment is the sqlcommenter comment of a statement: who sent it.
type Comment struct {
	App   string
	Route string
	Tag   string
}

// ParseComment reads the sqlcommenter comment of query: the first /* … */
// at its start (holdfast's form) or, failing that, the last one at its end
// (sqlcommenter's own placement). Values are key='value' pairs separated by
// commas; unknown keys are ignored, and a query without a comment gives the
// zero Comment.
func ParseComment(query string) Comment {
	q := strings.TrimSpace(query)
	var body string
	switch {
	case strings.HasPrefix(q, "/*"):
		end := strings.Index(q, "*/")
		if end < 0 {
			return Comment{}
		}
		body = q[2:end]
	case strings.HasSuffix(q, "*/") || strings.HasSuffix(strings.TrimSuffix(q, ";"), "*/"):
		q = strings.TrimSuffix(q, ";")
		start := strings.LastIndex(q, "/*")
		if start < 0 {
			return Comment{}
		}
		body = q[start+2 : len(q)-2]
	default:
		return Comment{}
	}
	var c Comment
	for _, kv := range strings.Split(body, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		v = strings.Trim(strings.TrimSpace(v), `'"`)
		if len(v) > 64 {
			v = v[:64]
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
