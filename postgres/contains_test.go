package postgres_test

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// containsText is the conformance harness's Instance.Grep: whether any
// row of any table in the database's public schema holds s in its text
// form (a hex bytea never matches a readable id, which is the point).
func containsText(pool *pgxpool.Pool) func(ctx context.Context, s string) (bool, error) {
	return func(ctx context.Context, s string) (bool, error) {
		rows, err := pool.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1`)
		if err != nil {
			return false, err
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return false, err
		}
		for _, tbl := range tables {
			var found bool
			q := "SELECT EXISTS (SELECT 1 FROM " + pgx.Identifier{tbl}.Sanitize() + " t WHERE strpos(t::text, $1) > 0)"
			if err := pool.QueryRow(ctx, q, s).Scan(&found); err != nil {
				return false, err
			}
			if found {
				return true, nil
			}
		}
		return false, nil
	}
}
