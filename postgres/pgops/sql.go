package pgops

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/holdfast/holdfast/health"
	"github.com/holdfast/holdfast/internal/sqltext"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var statements = sqltext.Load("ops", sqlFiles, "sql")

// statement returns the named embedded statement with its comment.
func statement(name string) string { return statements.Tagged(health.Op, name) }

// Querier is what ops reads through: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Comment is the sqlcommenter comment of a statement: who sent it.
type Comment = sqltext.Comment

// ParseComment reads the sqlcommenter comment of query (sqltext.Parse): the
// first /* … */ at its start (holdfast's form) or, failing that, the last
// one at its end (sqlcommenter's own placement). Values are key='value'
// pairs separated by commas, percent-decoded; unknown keys are ignored, and
// a query without a comment gives the zero Comment.
func ParseComment(query string) Comment { return sqltext.Parse(query) }
